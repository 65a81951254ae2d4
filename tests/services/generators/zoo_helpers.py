"""Helpers for the generator-zoo tests: a real gRPC server per engine, and the references."""

from __future__ import annotations

import grpc

from voxarena.sdk.server import create_model_server

MAX = 64 * 1024 * 1024


class Served:
    """A model behind a real gRPC server on port 0 (loaded, SERVING) and a stub to call it."""

    def __init__(self, model) -> None:
        from voxarena.v1 import generator_pb2_grpc

        model.load()
        model.mark_ready()
        self.model = model
        self.running = create_model_server(model, "[::]:0")
        self.running.server.start()
        self.running.set_serving(True)
        self.channel = grpc.insecure_channel(
            f"localhost:{self.running.port}",
            options=[("grpc.max_receive_message_length", MAX), ("grpc.max_send_message_length", MAX)],
        )
        self.stub = generator_pb2_grpc.GeneratorServiceStub(self.channel)

    def close(self) -> None:
        self.channel.close()
        self.running.server.stop(0)


def prompts(speech_dir, n: int = 5) -> list[str]:
    lines = (speech_dir / "prompts" / "librispeech-test-clean.trans.txt").read_text().splitlines()
    # five ordinary sentences (lines 200..) of 8 to 25 words
    out = [line.split(" ", 1)[1] for line in lines[200:] if 8 <= len(line.split()) - 1 <= 25]
    return out[:n]

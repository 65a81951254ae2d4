"""Helpers for the generator-zoo tests: a real gRPC server per engine, and the references."""

from __future__ import annotations

from voxarena.sdk.testing import serve_in_process


class Served:
    """A model behind a real gRPC server on port 0 (loaded, SERVING) and a stub to call it."""

    def __init__(self, model) -> None:
        self.model = model
        self.server = serve_in_process(model, "[::]:0")
        self.stub = self.server.stub()

    def close(self) -> None:
        self.server.stop()


def prompts(speech_dir, n: int = 5) -> list[str]:
    lines = (speech_dir / "prompts" / "librispeech-test-clean.trans.txt").read_text().splitlines()
    # five ordinary sentences (lines 200..) of 8 to 25 words
    out = [line.split(" ", 1)[1] for line in lines[200:] if 8 <= len(line.split()) - 1 <= 25]
    return out[:n]

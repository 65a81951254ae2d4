"""A generator that breaks the contract on purpose, to test the orchestrator's validation.

It bypasses the SDK (which would never let these through). The behaviour of a request is chosen
by ``seed % len(modes)`` over the comma-separated ``modes`` parameter (default: all of them), so a
run cycles through every kind of bad response. ``python -m voxarena.services.testing.misbehaving_generator``
"""

from __future__ import annotations

import argparse
import threading

import grpc
import numpy as np

from voxarena.codec import AudioClip, encode_audio
from voxarena.sdk.server import add_service_arguments, create_server, run_until_signalled
from voxarena.v1 import common_pb2, generator_pb2, generator_pb2_grpc

RATE = 16000
MODES = (
    "ok",
    "wrong_id",
    "wrong_seed",
    "empty",
    "nan",
    "stereo",
    "wrong_rate",
    "too_long",
    "too_short",
    "no_timing",
    "unavailable_once",
    "internal",
    "invalid_argument",
)


class MisbehavingServicer(generator_pb2_grpc.GeneratorServiceServicer):
    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def GetInfo(self, request, context):
        return generator_pb2.GeneratorInfo(
            model=common_pb2.ModelInfo(
                name="misbehaving-generator",
                version="1.0.0",
                native_sample_rate=RATE,
                deterministic=True,
                timing_scope="synthesis",
            ),
            family=generator_pb2.VOCODER_DSP,
            tasks=[generator_pb2.TTS],
        )

    def Synthesize(self, request, context):
        modes = request.parameters.get("modes", ",".join(MODES)).split(",")
        mode = modes[request.seed % len(modes)]
        t = np.arange(RATE) / RATE
        good = AudioClip((0.2 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), RATE)
        resp = generator_pb2.SynthesizeResponse(
            request_id=request.request_id,
            seed=request.seed,
            audio=encode_audio(good),
            timing=common_pb2.Timing(wall_seconds=0.01, scope="synthesis"),
        )
        if mode == "wrong_id":
            resp.request_id = request.request_id + "-x"
        elif mode == "wrong_seed":
            resp.seed = request.seed + 1
        elif mode == "empty":
            resp.audio.data = b""
        elif mode == "nan":
            resp.audio.CopyFrom(encode_audio(AudioClip(np.full(RATE, np.nan, np.float32), RATE)))
        elif mode == "stereo":
            resp.audio.channels = 2
        elif mode == "wrong_rate":
            resp.audio.sample_rate = 22050
        elif mode == "too_long":
            resp.audio.CopyFrom(encode_audio(AudioClip(np.zeros(RATE * 200, np.float32), RATE)))
        elif mode == "too_short":
            resp.audio.CopyFrom(encode_audio(AudioClip(np.zeros(10, np.float32), RATE)))
        elif mode == "no_timing":
            resp.ClearField("timing")
        elif mode == "unavailable_once":
            with self._lock:
                first = request.request_id not in self._seen
                self._seen.add(request.request_id)
            if first:
                context.abort(grpc.StatusCode.UNAVAILABLE, f"{request.request_id}: warming up, try again")
        elif mode == "internal":
            context.abort(grpc.StatusCode.INTERNAL, f"{request.request_id}: internal error: boom")
        elif mode == "invalid_argument":
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{request.request_id}: I do not like this text")
        return resp


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    add_service_arguments(parser)
    args = parser.parse_args(argv)
    servicer = MisbehavingServicer()
    name = generator_pb2.DESCRIPTOR.services_by_name["GeneratorService"].full_name
    running = create_server(
        [(name, lambda s: generator_pb2_grpc.add_GeneratorServiceServicer_to_server(servicer, s))],
        f"{args.host}:{args.port}",
        max_message_mb=args.max_message_mb,
        workers=args.workers,
    )
    run_until_signalled(running, lambda: None, "misbehaving-generator")


if __name__ == "__main__":
    main()

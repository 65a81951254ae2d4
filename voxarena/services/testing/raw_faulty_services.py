"""A generator and a detector written from the .proto alone, without the SDK, each able to break one
rule on purpose (``--role generator|detector --fault NAME``).

This is what an outside vendor writes: a plain gRPC servicer. With ``--fault none`` each honours the
contract (the control: conformance passes it); every other fault is one the SDK would have
prevented, so only a hand-written service can make it, and ``orchestrator conformance`` must catch it.

``python -m voxarena.services.testing.raw_faulty_services --role detector --fault is_llr_mismatch --port 0``
"""

from __future__ import annotations

import argparse
import hashlib
import os
import time
from concurrent import futures
from dataclasses import dataclass

import grpc
import numpy as np
from google.protobuf import timestamp_pb2
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from voxarena.codec import AudioClip, AudioFormatError, decode_audio, encode_audio
from voxarena.lifecycle import PORT_ANNOUNCEMENT
from voxarena.v1 import common_pb2, detector_pb2, detector_pb2_grpc, generator_pb2, generator_pb2_grpc

RATE = 16000
GENERATOR_FAULTS = {
    "none": "honours the contract",
    "wrong_request_id": "echoes another request id",
    "wrong_timing_scope": "times its calls under another scope than GetInfo declares",
    "accepts_unknown_option": "ignores option names it does not know",
    "default_option_refused": "declares option 'speaking_rate' but its code only knows 'speed'",
    "not_serving_after_bad_input": "turns its health NOT_SERVING after a request it refuses",
    "dies_after_bad_input": "exits when sent NaN audio",
    "internal_on_undecodable": "answers a request it cannot parse (invalid UTF-8) INTERNAL, plain grpc's default",
}
DETECTOR_FAULTS = {
    "none": "honours the contract",
    "wrong_request_id": "echoes another request id",
    "is_llr_mismatch": "declares calibrated=false but answers is_llr=true",
    "ignores_max_batch_size": "declares max_batch_size 4 but scores any batch",
    "accepts_junk_audio": "scores any bytes as float samples: a 1-sample clip, 1e30 samples, a 1 Hz rate",
    "internal_on_undecodable": "answers a request it cannot parse (invalid UTF-8) INTERNAL, plain grpc's default",
}
FAULTS = {"generator": GENERATOR_FAULTS, "detector": DETECTOR_FAULTS}


class Refused(Exception):
    """The client's mistake: INVALID_ARGUMENT (or ``code``) with a message naming the request."""

    def __init__(self, message: str, code: grpc.StatusCode = grpc.StatusCode.INVALID_ARGUMENT) -> None:
        super().__init__(message)
        self.code = code


def _timing(t0: float, t1: float, wall: float, scope: str) -> common_pb2.Timing:
    start, end = timestamp_pb2.Timestamp(), timestamp_pb2.Timestamp()
    start.FromNanoseconds(int(t0 * 1e9))
    end.FromNanoseconds(int(t1 * 1e9))
    return common_pb2.Timing(wall_seconds=wall, start=start, end=end, scope=scope)


class _Undecodable:
    """A request whose bytes did not parse; ``ParseErrorsAreInvalidArgument`` answers it."""


def _tolerant(deserialize):
    def parse(data: bytes):
        try:
            return deserialize(data)
        except Exception:  # protobuf's DecodeError: invalid UTF-8 in a string, truncated bytes
            return _Undecodable()

    return parse


class ParseErrorsAreInvalidArgument(grpc.ServerInterceptor):
    """Plain grpc answers a request it cannot parse with INTERNAL (the server's fault); the client sent
    the bytes, so this answers INVALID_ARGUMENT, as a careful vendor's interceptor would."""

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler
        inner = handler.unary_unary

        def call(request, context):
            if isinstance(request, _Undecodable):
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, "request does not parse")
            return inner(request, context)

        return grpc.unary_unary_rpc_method_handler(
            call,
            request_deserializer=_tolerant(handler.request_deserializer),
            response_serializer=handler.response_serializer,
        )


def _audio(msg: common_pb2.Audio, what: str) -> AudioClip:
    try:
        return decode_audio(msg, what)
    except AudioFormatError as e:
        raise Refused(str(e)) from None


class RawGenerator(generator_pb2_grpc.GeneratorServiceServicer):
    """TTS (a tone whose pitch follows the text) and RECONSTRUCT (a tone as long as the source)."""

    SCOPE = "synthesis: numpy tone"

    def __init__(self, fault: str, running: RawServer | None = None) -> None:
        self.fault, self.running = fault, running
        self.declared_option = "speaking_rate" if fault == "default_option_refused" else "speed"

    def GetInfo(self, request, context):
        return generator_pb2.GeneratorInfo(
            model=common_pb2.ModelInfo(
                name="raw-generator",
                version="1.0.0",
                licence="Apache-2.0",
                native_sample_rate=RATE,
                deterministic=True,
                timing_scope=self.SCOPE,
            ),
            family=generator_pb2.VOCODER_DSP,
            tasks=[generator_pb2.TTS, generator_pb2.RECONSTRUCT],
            voices=[generator_pb2.VoiceSpec(name="tone", language="en-US", description="a seeded tone")],
            options=[
                common_pb2.OptionSpec(
                    name=self.declared_option, description="speaking-rate factor, 0.5..2", default_value="1.0"
                )
            ],
        )

    def Synthesize(self, request, context):
        try:
            return self._synthesize(request)
        except Refused as e:
            if self.fault == "not_serving_after_bad_input" and self.running is not None:
                self.running.set_serving(False)
            context.abort(e.code, f"{request.request_id}: {e}")

    def _synthesize(self, request) -> generator_pb2.SynthesizeResponse:
        if not request.request_id:
            raise Refused("request_id is empty")
        if request.task not in (generator_pb2.TTS, generator_pb2.RECONSTRUCT):
            raise Refused(f"task {request.task} is not supported", grpc.StatusCode.UNIMPLEMENTED)
        unknown = set(request.parameters) - {"speed"}
        if unknown and self.fault != "accepts_unknown_option":
            raise Refused(f"unknown option(s) {', '.join(sorted(unknown))}")
        try:
            speed = float(request.parameters.get("speed", "1.0"))
        except ValueError:
            raise Refused(f"option speed={request.parameters['speed']!r} is not a number") from None
        if request.voice not in ("", "tone"):
            raise Refused(f"voice {request.voice!r} is not offered", grpc.StatusCode.UNIMPLEMENTED)
        t0, p0 = time.time(), time.perf_counter()
        if request.task == generator_pb2.TTS:
            if not request.text.strip():
                raise Refused("TTS needs text")
            n, key = int(0.06 * len(request.text) / speed * RATE), request.text.encode()
        else:
            if not request.HasField("source_audio"):
                raise Refused("RECONSTRUCT needs source_audio")
            source = request.source_audio
            if (
                self.fault == "dies_after_bad_input"
                and source.encoding == common_pb2.PCM_F32LE
                and np.isnan(np.frombuffer(source.data, "<f4")).any()
            ):
                os._exit(3)
            clip = _audio(source, "source_audio")
            n, key = int(clip.duration * RATE), clip.samples.tobytes()
        f0 = 100 + int.from_bytes(hashlib.sha256(key).digest()[:2], "big") % 100
        t = np.arange(n) / RATE
        noise = np.random.default_rng(request.seed).standard_normal(n)
        x = 0.3 * np.sin(2 * np.pi * f0 * t) + 0.003 * noise
        wall = time.perf_counter() - p0
        scope = "synthesis" if self.fault == "wrong_timing_scope" else self.SCOPE
        return generator_pb2.SynthesizeResponse(
            request_id=request.request_id + "-x" if self.fault == "wrong_request_id" else request.request_id,
            seed=request.seed,
            voice="tone",
            timing=_timing(t0, t0 + wall, wall, scope),
            audio=encode_audio(AudioClip((x * 32767).astype(np.int16), RATE)),
        )


class RawDetector(detector_pb2_grpc.DetectorServiceServicer):
    """Score = log RMS of the clip (higher = louder), uncalibrated."""

    SCOPE = "score: RMS"
    MAX_BATCH = 4
    MIN_SECONDS = 0.01

    def __init__(self, fault: str) -> None:
        self.fault = fault

    def GetInfo(self, request, context):
        return detector_pb2.DetectorInfo(
            model=common_pb2.ModelInfo(
                name="raw-detector",
                version="1.0.0",
                licence="Apache-2.0",
                native_sample_rate=RATE,
                deterministic=True,
                timing_scope=self.SCOPE,
            ),
            family=detector_pb2.HANDCRAFTED_FRONT_END,
            calibrated=False,
            max_batch_size=self.MAX_BATCH,
            min_seconds=self.MIN_SECONDS,
        )

    def _score(self, item: detector_pb2.ScoreRequest) -> detector_pb2.ScoreResponse:
        if not item.request_id:
            raise Refused("request_id is empty")
        if item.parameters:
            raise Refused(f"unknown option(s) {', '.join(sorted(item.parameters))}; raw-detector has none")
        t0, p0 = time.time(), time.perf_counter()
        if self.fault == "accepts_junk_audio":  # the bug: raw bytes taken as samples, nothing checked
            x = np.frombuffer(item.audio.data[: len(item.audio.data) // 4 * 4], "<f4").astype(np.float64)
        else:
            clip = _audio(item.audio, "audio")
            if clip.duration < self.MIN_SECONDS:
                raise Refused(f"audio is {clip.duration:.4f} s; at least {self.MIN_SECONDS} s")
            x = clip.as_float32().astype(np.float64)
        score = float(np.log(np.sqrt(np.mean(x**2)) + 1e-9))
        wall = time.perf_counter() - p0
        return detector_pb2.ScoreResponse(
            request_id=item.request_id + "-x" if self.fault == "wrong_request_id" else item.request_id,
            score=score,
            is_llr=self.fault == "is_llr_mismatch",
            timing=_timing(t0, t0 + wall, wall, self.SCOPE),
        )

    def Score(self, request, context):
        try:
            return self._score(request)
        except Refused as e:
            context.abort(e.code, f"{request.request_id}: {e}")

    def ScoreBatch(self, request, context):
        if len(request.items) > self.MAX_BATCH and self.fault != "ignores_max_batch_size":
            context.abort(
                grpc.StatusCode.INVALID_ARGUMENT,
                f"batch of {len(request.items)}: more than max_batch_size {self.MAX_BATCH}",
            )
        t0, p0 = time.time(), time.perf_counter()
        out = []
        for item in request.items:
            try:
                out.append(detector_pb2.ScoreBatchItem(request_id=item.request_id, result=self._score(item)))
            except Refused as e:
                out.append(
                    detector_pb2.ScoreBatchItem(
                        request_id=item.request_id,
                        error=detector_pb2.ItemError(code=e.code.value[0], message=f"{item.request_id}: {e}"),
                    )
                )
        wall = time.perf_counter() - p0
        return detector_pb2.ScoreBatchResponse(items=out, timing=_timing(t0, t0 + wall, wall, self.SCOPE))


@dataclass
class RawServer:
    server: grpc.Server
    port: int
    health: health.HealthServicer

    def set_serving(self, serving: bool) -> None:
        self.health.set(
            "", health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        )


def build_server(
    role: str, fault: str, address: str = "[::]:0", max_message_mb: float = 64, workers: int = 4
) -> RawServer:
    """A not yet started server of ``role`` with ``fault``: plain grpc, health and reflection, NOT_SERVING."""
    if fault not in FAULTS[role]:
        raise ValueError(f"unknown {role} fault {fault!r}; known: {', '.join(FAULTS[role])}")
    limit = int(max_message_mb * 1024 * 1024)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=workers),
        interceptors=[] if fault == "internal_on_undecodable" else [ParseErrorsAreInvalidArgument()],
        options=[
            ("grpc.max_receive_message_length", limit),
            ("grpc.max_send_message_length", limit),
            ("grpc.so_reuseport", 0),
        ],
    )
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    port = server.add_insecure_port(address)
    running = RawServer(server, port, health_servicer)
    if role == "generator":
        generator_pb2_grpc.add_GeneratorServiceServicer_to_server(RawGenerator(fault, running), server)
        name = generator_pb2.DESCRIPTOR.services_by_name["GeneratorService"].full_name
    else:
        detector_pb2_grpc.add_DetectorServiceServicer_to_server(RawDetector(fault), server)
        name = detector_pb2.DESCRIPTOR.services_by_name["DetectorService"].full_name
    reflection.enable_server_reflection((name, health.SERVICE_NAME, reflection.SERVICE_NAME), server)
    running.set_serving(False)
    return running


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="[::]")
    parser.add_argument("--port", type=int, default=50051)
    parser.add_argument("--role", choices=sorted(FAULTS), default="generator")
    parser.add_argument("--fault", default="none")
    args = parser.parse_args(argv)
    running = build_server(args.role, args.fault, f"{args.host}:{args.port}")
    running.server.start()
    running.set_serving(True)
    print(f"{PORT_ANNOUNCEMENT}{running.port}", flush=True)
    running.server.wait_for_termination()


if __name__ == "__main__":
    main()

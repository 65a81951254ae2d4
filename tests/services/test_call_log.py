"""The per-call log line the orchestrator's triage parses: one INFO line per finished call, in exactly
``call method=<full method> request_id=<id> code=<StatusCode name> ms=<1 decimal>``."""

from __future__ import annotations

import logging
import re
import time

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from voxarena.codec import encode_audio
from voxarena.conformance.detector_stream import chunked
from voxarena.sdk import AudioClip, InvalidArgument
from voxarena.sdk.interceptors import call_log_line, request_ids
from voxarena.sdk.testing import serve_in_process
from voxarena.services.testing.dummy_detector import DummyDetector
from voxarena.services.testing.dummy_generator import DummyGenerator
from voxarena.v1 import common_pb2, detector_pb2, generator_pb2

LINE = re.compile(r"^call method=(\S+) request_id=(\S+) code=([A-Z_]+) ms=(\d+\.\d)$")


class Slow(DummyGenerator):
    def synthesize(self, request):
        if request.text == "refuse":
            raise InvalidArgument("not this")
        if request.text == "crash":
            raise RuntimeError("kaboom")
        time.sleep(0.2)
        return super().synthesize(request)


def _calls(caplog) -> list[tuple[str, str, str, float]]:
    lines = [r for r in caplog.records if r.getMessage().startswith("call ")]
    assert all(r.levelno == logging.INFO and r.name == "voxarena.service" for r in lines)
    parsed = [LINE.match(r.getMessage()) for r in lines]
    assert all(parsed), [r.getMessage() for r in lines]
    return [(m[1], m[2], m[3], float(m[4])) for m in parsed]


def test_the_format():
    assert call_log_line("/a.B/C", "r-1", "OK", 12.345) == "call method=/a.B/C request_id=r-1 code=OK ms=12.3"
    assert call_log_line("/a.B/C", "", "INTERNAL", 0.04) == "call method=/a.B/C request_id=- code=INTERNAL ms=0.0"


def test_request_ids_of_one_a_batch_and_none():
    one = generator_pb2.SynthesizeRequest(request_id="g-7")
    batch = detector_pb2.ScoreBatchRequest(items=[detector_pb2.ScoreRequest(request_id=r) for r in ("a", "b", "c")])
    assert request_ids(one) == "g-7" and request_ids(batch) == "a,b,c"
    assert request_ids(common_pb2.GetInfoRequest()) == "-" and request_ids(detector_pb2.ScoreBatchRequest()) == "-"
    assert request_ids(generator_pb2.SynthesizeRequest()) == "-"


def test_every_finished_call_is_one_line_with_its_code_and_time(caplog):
    caplog.set_level(logging.INFO, logger="voxarena.service")
    with serve_in_process(Slow()) as served:
        stub = served.stub()
        caplog.clear()
        tts = dict(seed=1, task=generator_pb2.TTS)
        stub.Synthesize(generator_pb2.SynthesizeRequest(request_id="ok-1", text="hello", **tts), timeout=10)
        for rid, text in (("bad-1", "refuse"), ("boom-1", "crash")):
            with pytest.raises(grpc.RpcError):
                stub.Synthesize(generator_pb2.SynthesizeRequest(request_id=rid, text=text, **tts), timeout=10)
        stub.GetInfo(common_pb2.GetInfoRequest(), timeout=10)
        undecodable = served.channel.unary_unary(
            "/voxarena.v1.GeneratorService/Synthesize", request_serializer=bytes, response_deserializer=bytes
        )
        with pytest.raises(grpc.RpcError):
            undecodable(b"\x0a\x02\xff\xfe", timeout=10)
        health_pb2_grpc.HealthStub(served.channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
    calls = _calls(caplog)
    synth, info = "/voxarena.v1.GeneratorService/Synthesize", "/voxarena.v1.GeneratorService/GetInfo"
    health = "/grpc.health.v1.Health/Check"
    assert [c[:3] for c in calls] == [
        (synth, "ok-1", "OK"),
        (synth, "bad-1", "INVALID_ARGUMENT"),
        (synth, "boom-1", "INTERNAL"),
        (info, "-", "OK"),
        (synth, "-", "INVALID_ARGUMENT"),
    ]  # a SERVING health check (a container probe every few seconds) logs at DEBUG only
    assert 200 <= calls[0][3] < 5000, calls[0]  # the model's 0.2 s sleep, in milliseconds
    assert any("boom-1 failed" in r.getMessage() and r.exc_info for r in caplog.records)  # the traceback, as before
    caplog.set_level(logging.DEBUG, logger="voxarena.service")
    with serve_in_process(Slow()) as served:
        caplog.clear()
        health_pb2_grpc.HealthStub(served.channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
    lines = [r for r in caplog.records if r.getMessage().startswith("call ")]
    assert [(r.levelno, LINE.match(r.getMessage())[1]) for r in lines] == [(logging.DEBUG, health)]


def test_a_batch_names_its_items_a_score_stream_its_opening_id_and_reflection_has_none(caplog):
    caplog.set_level(logging.INFO, logger="voxarena.service")
    clip = encode_audio(AudioClip(np.full(1600, 0.1, np.float32), 16000))
    with serve_in_process(DummyDetector()) as served:
        caplog.clear()
        items = [detector_pb2.ScoreRequest(request_id=r, audio=clip) for r in ("x-1", "x-2")]
        served.stub().ScoreBatch(detector_pb2.ScoreBatchRequest(items=items), timeout=10)
        from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

        listing = reflection_pb2.ServerReflectionRequest(list_services="")
        list(reflection_pb2_grpc.ServerReflectionStub(served.channel).ServerReflectionInfo(iter([listing]), timeout=10))
        messages, _ = chunked("live-1", AudioClip(np.full(8000, 0.1, np.float32), 16000), 0.25)
        list(served.stub().ScoreStream(iter(messages), timeout=10))
        deadline = time.monotonic() + 5
        while len(_calls(caplog)) < 3 and time.monotonic() < deadline:  # a stream's line follows its end
            time.sleep(0.02)
    calls = [c[:3] for c in _calls(caplog)]
    assert calls == [
        ("/voxarena.v1.DetectorService/ScoreBatch", "x-1,x-2", "OK"),
        ("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", "-", "OK"),
        ("/voxarena.v1.DetectorService/ScoreStream", "live-1", "OK"),
    ]

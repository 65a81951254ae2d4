"""A saturated service still answers health checks and GetInfo; calls beyond its slots and wait queue get
RESOURCE_EXHAUSTED at once (a transient failure the orchestrator retries); a waiting call whose client
gives up never reaches the model."""

from __future__ import annotations

import argparse
import threading
import time

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from voxarena.orchestrator.store.failures import Failure, failure_of_status
from voxarena.sdk import AudioClip, GeneratorModel, SynthesisResult
from voxarena.sdk.admission import Admission
from voxarena.sdk.server import add_service_arguments
from voxarena.sdk.testing import serve_in_process
from voxarena.v1 import common_pb2, generator_pb2

CONCURRENCY, MAX_QUEUE = 2, 1
PROMPT = 1.0  # seconds a health check or GetInfo may take while every slot is busy


class BlockingGenerator(GeneratorModel):
    """Each call blocks until the test releases it (at most 30 s, so a broken test cannot hang)."""

    name = "blocking"
    family = "VOCODER_DSP"
    timing_scope = "synthesis: test"

    def __init__(self) -> None:
        super().__init__()
        self.release = threading.Event()
        self.entered = threading.Semaphore(0)
        self.calls = 0
        self.ids: list[str] = []

    def load(self) -> None:
        pass

    def synthesize(self, request):
        self.calls += 1
        self.ids.append(request.request_id)
        self.entered.release()
        self.release.wait(30)
        return SynthesisResult(AudioClip(np.zeros(160, np.float32), 16000))


@pytest.fixture
def saturated():
    """A server with CONCURRENCY model calls blocked in the model and MAX_QUEUE waiting."""
    yield from _saturate(MAX_QUEUE)


@pytest.fixture
def slots_busy():
    """A server with CONCURRENCY model calls blocked in the model and its queue empty."""
    yield from _saturate(0)


def _saturate(waiting: int):
    model = BlockingGenerator()
    served = serve_in_process(model, "[::]:0", workers=CONCURRENCY, max_queue=MAX_QUEUE)
    running, channel = served.running, served.channel
    stub = served.stub()
    busy = [stub.Synthesize.future(_tts(f"busy-{i}"), timeout=60) for i in range(CONCURRENCY)]
    for _ in range(CONCURRENCY):
        assert model.entered.acquire(timeout=10), "the model never saw its first calls"
    queued = [stub.Synthesize.future(_tts(f"queued-{i}"), timeout=60) for i in range(waiting)]
    deadline = time.monotonic() + 10
    while running.admission.waiting < waiting and time.monotonic() < deadline:  # they reach the server
        time.sleep(0.02)
    assert running.admission.waiting == waiting
    yield model, stub, channel, busy, queued
    model.release.set()
    served.stop()


def _tts(request_id: str) -> generator_pb2.SynthesizeRequest:
    return generator_pb2.SynthesizeRequest(request_id=request_id, seed=1, task=generator_pb2.TTS, text="hi")


def test_health_and_getinfo_answer_while_every_slot_is_busy(saturated):
    model, stub, channel, busy, queued = saturated
    health = health_pb2_grpc.HealthStub(channel)
    for _ in range(10):
        t0 = time.perf_counter()
        answer = health.Check(health_pb2.HealthCheckRequest(), timeout=PROMPT)
        assert answer.status == health_pb2.HealthCheckResponse.SERVING
        assert time.perf_counter() - t0 < PROMPT
    assert stub.GetInfo(common_pb2.GetInfoRequest(), timeout=PROMPT).model.name == "blocking"
    assert model.calls == CONCURRENCY  # the queued call waits outside the model


def test_beyond_the_queue_is_resource_exhausted_at_once_and_transient(saturated):
    model, stub, channel, busy, queued = saturated
    t0 = time.perf_counter()
    with pytest.raises(grpc.RpcError) as err:
        stub.Synthesize(_tts("one-too-many"), timeout=10)
    assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert time.perf_counter() - t0 < PROMPT
    assert "one-too-many" in err.value.details() and f"concurrency {CONCURRENCY}" in err.value.details()
    assert failure_of_status(err.value.code()) is Failure.TRANSIENT  # a rerun retries it, the row is not lost
    model.release.set()
    for call in busy + queued:  # the admitted and the queued calls all complete
        assert call.result(timeout=10).request_id
    assert model.calls == CONCURRENCY + MAX_QUEUE
    assert stub.Synthesize(_tts("after"), timeout=10).request_id == "after"  # slots were given back


def test_a_queued_call_past_its_deadline_never_reaches_the_model(slots_busy):
    model, stub, channel, busy, queued = slots_busy
    with pytest.raises(grpc.RpcError) as err:
        stub.Synthesize(_tts("impatient"), timeout=0.5)
    assert err.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    model.release.set()
    for call in busy:
        call.result(timeout=10)
    time.sleep(0.3)
    assert model.calls == CONCURRENCY, model.ids  # the expired call did not run


def test_only_work_calls_are_governed():
    admission = Admission(1, 0, ("voxarena.v1.GeneratorService",))
    assert admission.governs("/voxarena.v1.GeneratorService/Synthesize")
    assert not admission.governs("/voxarena.v1.GeneratorService/GetInfo")
    assert not admission.governs("/grpc.health.v1.Health/Check")
    assert admission.threads > 1  # spare threads beyond the one slot
    with pytest.raises(ValueError, match="concurrency 0"):
        Admission(0, 0)


def _parse(argv, monkeypatch, env=None):
    for name in ("VOXARENA_CONCURRENCY", "VOXARENA_MAX_QUEUE"):
        monkeypatch.delenv(name, raising=False)
    for name, value in (env or {}).items():
        monkeypatch.setenv(name, value)
    parser = argparse.ArgumentParser()
    add_service_arguments(parser)
    return parser.parse_args(argv)


def test_concurrency_from_the_command_line_or_the_environment(monkeypatch, capsys):
    assert _parse([], monkeypatch).workers == 4
    assert _parse([], monkeypatch, {"VOXARENA_CONCURRENCY": "3"}).workers == 3
    assert _parse(["--concurrency", "5"], monkeypatch, {"VOXARENA_CONCURRENCY": "3"}).workers == 5
    assert _parse(["--workers", "6"], monkeypatch).workers == 6  # the old name still works
    assert _parse(["--max-queue", "0"], monkeypatch).max_queue == 0
    with pytest.raises(SystemExit):
        _parse([], monkeypatch, {"VOXARENA_CONCURRENCY": "many"})
    assert "VOXARENA_CONCURRENCY" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        _parse(["--concurrency", "0"], monkeypatch)

"""The clients' retry rule against a real gRPC server that counts its calls: only UNAVAILABLE is
retried, at most ``retries`` times with exponential backoff; every other status fails at once."""

from __future__ import annotations

import threading
import time

import grpc
import numpy as np
import pytest

from voxarena.orchestrator.fleet.clients import CallFailed, GeneratorClient
from voxarena.sdk import AudioClip, GeneratorModel, SynthesisResult
from voxarena.sdk.errors import InternalError, InvalidArgument, NotReady, TimeLimitExceeded, Unimplemented
from voxarena.sdk.testing import serve_in_process
from voxarena.v1 import generator_pb2


class Scripted(GeneratorModel):
    """Raises the queued errors in order, then answers; counts every call it receives."""

    name = "scripted"
    family = "VOCODER_DSP"
    timing_scope = "synthesis: test"

    def __init__(self) -> None:
        super().__init__()
        self.script: list[Exception] = []
        self.calls = 0
        self.times: list[float] = []
        self._lock = threading.Lock()

    def load(self) -> None:
        pass

    def synthesize(self, request):
        with self._lock:
            self.calls += 1
            self.times.append(time.monotonic())
            error = self.script.pop(0) if self.script else None
        if error is not None:
            raise error
        return SynthesisResult(AudioClip(np.zeros(1600, np.int16), 16000))


@pytest.fixture
def scripted():
    model = Scripted()
    with serve_in_process(model) as served:
        client = GeneratorClient("scripted", served.address, deadline=10, retries=3, backoff=0.05)
        yield model, client
        client.close()


def request() -> generator_pb2.SynthesizeRequest:
    return generator_pb2.SynthesizeRequest(request_id="r", seed=1, task=generator_pb2.TTS, text="hi")


@pytest.mark.parametrize(
    "error, code",
    [
        (InvalidArgument("no"), grpc.StatusCode.INVALID_ARGUMENT),
        (Unimplemented("no"), grpc.StatusCode.UNIMPLEMENTED),
        (InternalError("no"), grpc.StatusCode.INTERNAL),
        (RuntimeError("crash"), grpc.StatusCode.INTERNAL),
        (TimeLimitExceeded("slow"), grpc.StatusCode.DEADLINE_EXCEEDED),
    ],
)
def test_other_codes_are_not_retried(scripted, error, code):
    model, client = scripted
    model.script = [error, error, error, error]
    with pytest.raises(CallFailed) as e:
        client.call("Synthesize", request())
    assert e.value.code == code and e.value.attempts == 1
    assert model.calls == 1  # the server saw exactly one call


def test_unavailable_is_retried_until_it_answers(scripted, monkeypatch):
    import voxarena.orchestrator.fleet.clients

    model, client = scripted
    model.script = [NotReady("warming up"), NotReady("warming up"), NotReady("warming up")]
    slept: list[float] = []
    real_sleep = time.sleep
    monkeypatch.setattr(voxarena.orchestrator.fleet.clients.time, "sleep", lambda s: (slept.append(s), real_sleep(s)))
    resp, attempts = client.call("Synthesize", request())
    assert attempts == 4 and model.calls == 4 and resp.request_id == "r"
    # exponential backoff from backoff_seconds (0.05), doubling: 0.05, 0.1, 0.2 s
    assert slept == pytest.approx([0.05, 0.1, 0.2])
    assert np.all(np.diff(model.times) >= np.array(slept))


def test_unavailable_is_retried_at_most_retries_times(scripted):
    model, client = scripted
    model.script = [NotReady("down")] * 10
    with pytest.raises(CallFailed) as e:
        client.call("Synthesize", request())
    assert e.value.code == grpc.StatusCode.UNAVAILABLE and e.value.attempts == 4 and model.calls == 4
    assert "down" in e.value.details


def test_unavailable_then_another_error_stops_retrying(scripted):
    model, client = scripted
    model.script = [NotReady("down"), InvalidArgument("bad text"), NotReady("down")]
    with pytest.raises(CallFailed) as e:
        client.call("Synthesize", request())
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT and e.value.attempts == 2 and model.calls == 2


def test_no_retries_configured(scripted):
    model, client = scripted
    client.retries = 0
    model.script = [NotReady("down")]
    with pytest.raises(CallFailed) as e:
        client.call("Synthesize", request())
    assert e.value.attempts == 1 and model.calls == 1

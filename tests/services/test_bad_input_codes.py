"""Client mistakes get client codes (INVALID_ARGUMENT), never INTERNAL, and the service stays SERVING:
undecodable bytes (invalid UTF-8), junk samples, absurd sample rates, clips shorter or longer than a
detector declares, rates outside its declared set (issue 13 item 3). A real server on port 0."""

from __future__ import annotations

from typing import ClassVar

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from voxarena.codec import MAX_SAMPLE_RATE, AudioClip, encode_audio
from voxarena.sdk import DetectorModel
from voxarena.sdk.testing import serve_in_process
from voxarena.services.testing.dummy_detector import DummyDetector
from voxarena.services.testing.dummy_generator import DummyGenerator
from voxarena.v1 import common_pb2, detector_pb2, detector_pb2_grpc, generator_pb2, generator_pb2_grpc


class Counting(DummyDetector):
    """Counts the clips it was asked to score, so a test can tell the SDK refused before the model."""

    sample_rates: ClassVar[tuple[int, ...]] = ()

    def __init__(self) -> None:
        super().__init__()
        self.scored = 0

    def score_batch(self, clips: list[AudioClip]) -> list[float]:
        self.scored += len(clips)
        return super().score_batch(clips)


class Narrow(Counting):
    name = "narrow"
    min_seconds = 0.5
    max_seconds = 4.0
    sample_rates = (8000, 16000)


@pytest.fixture
def detector():
    model = Counting()
    with serve_in_process(model, "[::]:0") as served:
        yield model, served.channel


@pytest.fixture
def narrow():
    model = Narrow()
    with serve_in_process(model, "[::]:0") as served:
        yield model, served.channel


@pytest.fixture
def generator():
    model = DummyGenerator()
    with serve_in_process(model, "[::]:0") as served:
        yield model, served.channel


def _f32(x, rate=16000) -> common_pb2.Audio:
    return common_pb2.Audio(
        data=np.asarray(x, "<f4").tobytes(), sample_rate=rate, channels=1, encoding=common_pb2.PCM_F32LE
    )


TONE = (0.3 * np.sin(np.arange(16000) / 10)).astype(np.float32)


def _error(call, request) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as e:
        call(request, timeout=20)
    return e.value.code(), e.value.details()


def _serving(channel) -> bool:
    resp = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
    return resp.status == health_pb2.HealthCheckResponse.SERVING


JUNK_AUDIO = {
    "huge samples": (_f32(np.full(16000, 1e30)), "sample magnitude 1e+30 exceeds 100"),
    "1 Hz": (_f32(TONE[:8], 1), "sample_rate 1 Hz is outside [1000, 384000] Hz"),
    "0 Hz": (_f32(TONE, 0), "sample_rate must be positive, got 0"),
    "above 384 kHz": (_f32(TONE, MAX_SAMPLE_RATE + 1), f"sample_rate {MAX_SAMPLE_RATE + 1} Hz is outside"),
    "2^32-1 Hz": (_f32(TONE, 2**32 - 1), "sample_rate 4294967295 Hz is outside"),
    "1 sample": (_f32(TONE[:1]), "audio is 0.0001 s (1 samples at 16000 Hz); dummy-detector needs at least 0.005 s"),
}


@pytest.mark.parametrize("label", sorted(JUNK_AUDIO))
def test_detector_refuses_junk_audio_before_the_model(detector, label):
    model, channel = detector
    audio, reason = JUNK_AUDIO[label]
    code, details = _error(
        detector_pb2_grpc.DetectorServiceStub(channel).Score, detector_pb2.ScoreRequest(request_id="junk", audio=audio)
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT, details
    assert details.startswith("junk: ") and reason in details
    assert model.scored == 0
    assert _serving(channel)


def test_junk_clip_in_a_batch_fails_alone(detector):
    model, channel = detector
    items = [detector_pb2.ScoreRequest(request_id="ok", audio=_f32(TONE))] + [
        detector_pb2.ScoreRequest(request_id=label, audio=audio) for label, (audio, _) in sorted(JUNK_AUDIO.items())
    ]
    stub = detector_pb2_grpc.DetectorServiceStub(channel)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Counting, "max_batch_size", 64)
        resp = stub.ScoreBatch(detector_pb2.ScoreBatchRequest(items=items), timeout=20)
    assert resp.items[0].HasField("result") and model.scored == 1
    for item in resp.items[1:]:
        assert item.error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0], item


def _raw(channel, method: str):
    return channel.unary_unary(method, request_serializer=lambda b: b, response_deserializer=lambda b: b)


def test_invalid_utf8_is_invalid_argument_not_internal(detector, generator):
    # protobuf (upb) refuses invalid UTF-8 in a proto3 string while parsing; grpc alone answers that INTERNAL.
    _, dchannel = detector
    audio = _f32(TONE[:50]).SerializeToString()
    bad_id = b"\x0a\x03\xff\xfeA" + b"\x12" + bytes([len(audio)]) + audio  # request_id = b"\xff\xfeA"
    code, details = _error(_raw(dchannel, "/voxarena.v1.DetectorService/Score"), bad_id)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "does not parse" in details
    assert _serving(dchannel)
    _, gchannel = generator
    good = generator_pb2.SynthesizeRequest(request_id="g", task=generator_pb2.TTS, text="hello").SerializeToString()
    code, details = _error(
        _raw(gchannel, "/voxarena.v1.GeneratorService/Synthesize"), good.replace(b"hello", b"h\xffllo")
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "does not parse" in details
    assert _serving(gchannel)


@pytest.mark.parametrize("label", ["huge samples", "1 Hz", "above 384 kHz"])
def test_generator_refuses_junk_source_audio(generator, label):
    _, channel = generator
    audio, reason = JUNK_AUDIO[label]
    req = generator_pb2.SynthesizeRequest(request_id="g", task=generator_pb2.RECONSTRUCT, source_audio=audio)
    code, details = _error(generator_pb2_grpc.GeneratorServiceStub(channel).Synthesize, req)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and reason in details
    assert _serving(channel)


def test_declared_bounds_are_enforced_and_in_getinfo(narrow):
    model, channel = narrow
    stub = detector_pb2_grpc.DetectorServiceStub(channel)
    info = stub.GetInfo(common_pb2.GetInfoRequest(), timeout=5)
    assert (info.min_seconds, info.max_seconds, list(info.sample_rates)) == (0.5, 4.0, [8000, 16000])

    def score(rid, clip):
        return stub.Score(detector_pb2.ScoreRequest(request_id=rid, audio=encode_audio(clip)), timeout=20)

    assert score("at-min", AudioClip(TONE[:8000], 16000)).request_id == "at-min"  # exactly 0.5 s
    assert score("8k", AudioClip(TONE[:8000], 8000)).request_id == "8k"
    cases = {
        "short": (
            AudioClip(TONE[:7999], 16000),
            "short: audio is 0.4999 s (7999 samples at 16000 Hz); narrow needs at least 0.5 s",
        ),
        "rate": (AudioClip(TONE, 22050), "rate: audio at 22050 Hz; narrow accepts 8000, 16000 Hz"),
        "long": (
            AudioClip(np.zeros(16000 * 5, np.float32), 16000),
            "long: audio is 5.0 s (80000 samples at 16000 Hz); at most 4 s",
        ),
    }
    scored = model.scored
    for rid, (clip, message) in cases.items():
        code, details = _error(stub.Score, detector_pb2.ScoreRequest(request_id=rid, audio=encode_audio(clip)))
        assert code == grpc.StatusCode.INVALID_ARGUMENT and details.startswith(message), details
    assert model.scored == scored


def test_too_long_is_refused_before_decoding(detector, monkeypatch):
    # NaN samples past the limit would be found by decoding; the length alone must refuse the clip first.
    _, channel = detector
    long_nan = _f32(np.full(16000 * 601, np.nan))
    code, details = _error(
        detector_pb2_grpc.DetectorServiceStub(channel).Score, detector_pb2.ScoreRequest(request_id="l", audio=long_nan)
    )
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "601.0 s" in details and "at most 600 s" in details


def test_sdk_defaults_keep_a_service_valid():
    assert (
        DetectorModel.min_seconds == 0.005 and DetectorModel.max_seconds == 600.0 and DetectorModel.sample_rates == ()
    )


class EightKilohertzOnly(Counting):
    """A detector that declares one rate and a minimum above the SDK default."""

    name = "eight-k-only"
    min_seconds = 0.5
    sample_rates = (8000,)


def test_conformance_checks_the_declared_bounds_and_passes_a_narrow_detector():
    from voxarena.conformance import run_conformance

    model = EightKilohertzOnly()
    with serve_in_process(model, "[::]:0") as served:
        checks = {c.name: c for c in run_conformance(served.address, timeout=30)}
    assert not [c for c in checks.values() if c.status == "FAIL"], [c for c in checks.values() if c.status == "FAIL"]
    for name in (
        "1-sample clip rejected",
        "clip under min_seconds 0.5 rejected",
        "clip over max_seconds 600 rejected",
        "rate 11025 Hz outside sample_rates rejected",
        "answers (clip 1)",
    ):
        assert checks[name].status == "PASS", checks[name]
    assert "at 8000 Hz" in checks["answers (clip 1)"].sent  # the probes resampled to the declared rate

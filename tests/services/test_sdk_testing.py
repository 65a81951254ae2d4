"""``voxarena.sdk.testing``: a real server in this process for every role, up and SERVING when it returns,
stopped at the end; the loading state on request; servicers without a model; TLS only with a TLS client."""

from __future__ import annotations

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from voxarena.codec import decode_audio, encode_audio
from voxarena.sdk import AudioClip, TransformModel, TransformResult
from voxarena.sdk.server import model_registration
from voxarena.sdk.testing import serve_in_process, serve_servicers
from voxarena.services.testing.dummy_detector import DummyDetector
from voxarena.services.testing.dummy_generator import DummyGenerator
from voxarena.transport import ServerSecurity
from voxarena.v1 import common_pb2, generator_pb2_grpc, transform_pb2


class Halve(TransformModel):
    name = "halve"
    licence = "MIT"
    kind = "CHANNEL"
    timing_scope = "transform: test"

    def load(self) -> None:
        pass

    def transform(self, request):
        clip = request.audio
        return TransformResult(AudioClip(clip.as_float32() / 2, clip.sample_rate), ["halved"])


def _health(address: str) -> str:
    with grpc.insecure_channel(address) as ch:
        status = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=5).status
    return health_pb2.HealthCheckResponse.ServingStatus.Name(status)


@pytest.mark.parametrize("model", [DummyGenerator(), DummyDetector(), Halve()], ids=lambda m: m.name)
def test_every_role_is_served_loaded_and_stopped(model):
    with serve_in_process(model) as served:
        assert served.address == f"127.0.0.1:{served.port}" and served.port > 0
        assert model.ready and _health(served.address) == "SERVING"
        info = served.stub().GetInfo(common_pb2.GetInfoRequest(), timeout=5)
        assert info.model.name == model.name
    with pytest.raises(grpc.RpcError) as e, grpc.insecure_channel(served.address) as ch:
        health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=2)
    assert e.value.code() == grpc.StatusCode.UNAVAILABLE  # stopped: nothing listens there now


def test_a_transform_answers_through_its_role_stub():
    clip = AudioClip(np.full(800, 0.5, np.float32), 16000)
    with serve_in_process(Halve()) as served:
        request = transform_pb2.TransformRequest(request_id="t", seed=3, audio=encode_audio(clip))
        response = served.stub().Transform(request, timeout=5)
    assert response.request_id == "t" and list(response.steps) == ["halved"]
    np.testing.assert_allclose(decode_audio(response.audio).as_float32(), 0.25, atol=1e-4)


def test_not_ready_stays_loading_until_marked():
    model = DummyGenerator()
    served = serve_in_process(model, "[::]:0", ready=False)
    try:
        assert served.address == f"localhost:{served.port}"
        assert _health(served.address) == "NOT_SERVING"
        with pytest.raises(grpc.RpcError) as e:
            served.stub().GetInfo(common_pb2.GetInfoRequest(), timeout=5)
        assert e.value.code() == grpc.StatusCode.UNAVAILABLE and "still loading" in e.value.details()
        model.mark_ready()
        assert served.stub().GetInfo(common_pb2.GetInfoRequest(), timeout=5).model.name == model.name
    finally:
        served.stop()


def test_servicers_are_served_and_named_by_their_stub():
    model = DummyGenerator()
    loaded = []
    with serve_servicers([model_registration(model)], load=lambda: loaded.append(model.mark_ready())) as served:
        assert loaded and _health(served.address) == "SERVING"
        with pytest.raises(TypeError, match="no model served here"):
            served.stub()
        stub = served.stub(generator_pb2_grpc.GeneratorServiceStub)
        assert stub.GetInfo(common_pb2.GetInfoRequest(), timeout=5).model.name == model.name


def test_a_tls_server_needs_a_tls_client():
    with pytest.raises(TypeError, match="client=ClientSecurity"):
        serve_in_process(DummyGenerator(), security=ServerSecurity(cert=b"pem", key=b"pem"))


def test_a_detector_reads_each_clips_options_in_score_batch():
    """DetectorModel.score_batch(clips, options): each item's options, defaults filled in, reach the model;
    a value the model refuses is the caller's mistake (INVALID_ARGUMENT)."""
    from voxarena.v1 import detector_pb2

    rng = np.random.default_rng(0)
    clip = encode_audio(AudioClip(rng.standard_normal(16000).astype(np.float32) * 0.1, 16000))
    with serve_in_process(DummyDetector()) as served:
        stub = served.stub()
        items = [
            detector_pb2.ScoreRequest(request_id="default", audio=clip),
            detector_pb2.ScoreRequest(request_id="low", audio=clip, parameters={"band_low_hz": "1000"}),
            detector_pb2.ScoreRequest(request_id="same", audio=clip, parameters={"band_low_hz": "4000"}),
        ]
        out = stub.ScoreBatch(detector_pb2.ScoreBatchRequest(items=items), timeout=30).items
        single = stub.Score(items[1], timeout=30)
        bad = detector_pb2.ScoreRequest(request_id="bad", audio=clip, parameters={"band_low_hz": "9000"})
        with pytest.raises(grpc.RpcError) as refused:
            stub.Score(bad, timeout=30)
    default, low, same = out
    assert low.result.score > default.result.score  # white noise: a wider band holds more of the energy
    assert same.result.score == default.result.score and single.score == low.result.score
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "band_low_hz" in refused.value.details()

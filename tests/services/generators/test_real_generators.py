"""The real TTS engines behind a real gRPC server: determinism, seeds, info, refusals."""

from __future__ import annotations

import grpc
import pytest

from voxarena.codec import decode_audio
from voxarena.sdk.testing import serve_in_process
from voxarena.services.generators.espeak_ng.model import EspeakNgModel
from voxarena.services.generators.piper_vits.model import PiperVitsModel
from voxarena.v1 import common_pb2, generator_pb2

pytestmark = pytest.mark.slow
TEXT = "He hoped there would be stew for dinner, turnips and carrots."


@pytest.fixture(scope="module")
def piper():
    with serve_in_process(PiperVitsModel(), "[::]:0") as served:  # a 5,000-character text is minutes of audio: 64 MiB
        yield served.stub()


@pytest.fixture(scope="module")
def espeak():
    with serve_in_process(EspeakNgModel(), "[::]:0") as served:  # a 5,000-character text is minutes of audio: 64 MiB
        yield served.stub()


def synth(stub, seed=1, **params):
    return stub.Synthesize(
        generator_pb2.SynthesizeRequest(
            request_id=f"r{seed}", seed=seed, task=generator_pb2.TTS, text=TEXT, parameters=params
        )
    )


def test_piper_info_and_determinism(piper):
    info = piper.GetInfo(common_pb2.GetInfoRequest())
    assert info.family == generator_pb2.FULLY_END_TO_END and info.model.native_sample_rate == 22050
    assert info.model.parameter_count > 10_000_000 and len(info.model.weights_sha256) == 64
    a = synth(piper, 1, noise_scale="0", noise_w_scale="0")
    b = synth(piper, 2, noise_scale="0", noise_w_scale="0")
    assert a.audio.data == b.audio.data  # noise 0: the seed cannot matter
    clip = decode_audio(a.audio)
    assert clip.sample_rate == 22050 and 2.0 < clip.duration < 6.0


def test_piper_seeded_mode(piper):
    a, b, c = synth(piper, 5), synth(piper, 5), synth(piper, 6)
    assert a.seed == 5 and a.audio.data == b.audio.data and a.audio.data != c.audio.data


def test_espeak_info_determinism_and_voices(espeak):
    info = espeak.GetInfo(common_pb2.GetInfoRequest())
    assert info.family == generator_pb2.RULE_BASED_FORMANT and not info.model.HasField("parameter_count")
    a, b = synth(espeak, 1), synth(espeak, 2)
    assert a.audio.data == b.audio.data and b.seed == 2
    slow = synth(espeak, 1, speed="100")
    assert decode_audio(slow.audio).duration > decode_audio(a.audio).duration
    with pytest.raises(grpc.RpcError) as e:
        synth(espeak, 1, speed="fast")
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "speed" in e.value.details()


def test_espeak_long_text(espeak):
    text = ("The quick brown fox jumps over the lazy dog. " * 120)[:4990]
    resp = espeak.Synthesize(
        generator_pb2.SynthesizeRequest(request_id="long", seed=1, task=generator_pb2.TTS, text=text)
    )
    assert decode_audio(resp.audio).duration > 200

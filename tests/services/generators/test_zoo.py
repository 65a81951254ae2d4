"""The generator zoo with the real engines: intelligibility (Whisper WER), vocoder quality (PESQ
against the original), voice conversion (Resemblyzer similarity), determinism, and bad input.
Figures are printed (pytest -s) and written to $VOXARENA_ZOO_REPORT when set."""

from __future__ import annotations

import json
import os
import shutil

import grpc
import numpy as np
import pytest
from zoo_helpers import Served, prompts

from voxarena.codec import AudioClip, decode_audio, encode_audio, read_audio_file, resample
from voxarena.scorers.registry import ClipInputs, get_metric
from voxarena.v1 import common_pb2, generator_pb2

pytestmark = pytest.mark.slow
REPORT: dict = {}


def _tts_models():
    from voxarena.services.generators.espeak_ng.model import EspeakNgModel
    from voxarena.services.generators.festival_hts.model import FestivalHtsModel
    from voxarena.services.generators.flite.model import FliteModel
    from voxarena.services.generators.mbrola.model import MbrolaModel
    from voxarena.services.generators.piper_vits.model import PiperVitsModel

    return {
        "piper-vits": PiperVitsModel,
        "espeak-ng": EspeakNgModel,
        "flite": FliteModel,
        "festival-hts": FestivalHtsModel,
        "mbrola": MbrolaModel,
    }


def _vocoders():
    from voxarena.services.generators.griffin_lim.model import GriffinLimModel
    from voxarena.services.generators.mlsa_vocoder.model import MlsaVocoderModel
    from voxarena.services.generators.world_vocoder.model import WorldVocoderModel

    return {"world-vocoder": WorldVocoderModel, "griffin-lim": GriffinLimModel, "mlsa-vocoder": MlsaVocoderModel}


@pytest.fixture(scope="module", autouse=True)
def report():
    yield
    if os.environ.get("VOXARENA_ZOO_REPORT"):
        with open(os.environ["VOXARENA_ZOO_REPORT"], "w") as f:
            json.dump(REPORT, f, indent=2, sort_keys=True)
    print("\nzoo figures:", json.dumps(REPORT, sort_keys=True))


def _served(name, cls):
    if name == "mbrola" and not shutil.which("mbrola"):
        pytest.skip("mbrola is optional and non-free: `make setup-mbrola` installs it (CI does)")
    return Served(cls())


def synth(stub, **kw):
    base = dict(request_id="t", seed=3)
    base.update(kw)
    return stub.Synthesize(generator_pb2.SynthesizeRequest(**base))


@pytest.mark.parametrize("name", ["piper-vits", "espeak-ng", "flite", "festival-hts", "mbrola"])
def test_tts_is_intelligible_and_deterministic(name, speech_dir):
    served = _served(name, _tts_models()[name])
    try:
        info = served.stub.GetInfo(common_pb2.GetInfoRequest())
        wer = get_metric("wer")
        rows = []
        for i, text in enumerate(prompts(speech_dir)):
            resp = synth(served.stub, request_id=f"p{i}", task=generator_pb2.TTS, text=text)
            clip = decode_audio(resp.audio)
            voice = info.voices[0]
            assert clip.sample_rate == (voice.sample_rate or info.model.native_sample_rate)
            rows.append(wer.measure(ClipInputs(f"p{i}", clip, text=text))[0])
            if i == 0:
                again = synth(served.stub, request_id="again", task=generator_pb2.TTS, text=text)
                assert again.audio.data == resp.audio.data, "same request, same seed: same bytes"
        figure = wer.aggregate(rows)
        REPORT.setdefault(name, {}).update(
            wer=round(figure, 4), sample_rate=clip.sample_rate, family=generator_pb2.GeneratorFamily.Name(info.family)
        )
        assert figure < 0.5, f"{name}: WER {figure:.3f} on five LibriSpeech prompts"
    finally:
        served.close()


def test_flite_voices_state_their_rates():
    from voxarena.services.generators.flite.model import FliteModel

    served = Served(FliteModel())
    try:
        info = served.stub.GetInfo(common_pb2.GetInfoRequest())
        for v in info.voices:
            clip = decode_audio(synth(served.stub, task=generator_pb2.TTS, text="Good morning.", voice=v.name).audio)
            assert clip.sample_rate == v.sample_rate, v.name
        assert {v.sample_rate for v in info.voices} == {8000, 16000}
    finally:
        served.close()


def _real_clips(speech_dir, n=3):
    paths = sorted((speech_dir / "LibriSpeech" / "test-clean").glob("*/*/*.flac"))[:n]
    return [read_audio_file(str(p)) for p in paths]


@pytest.mark.parametrize("name", ["world-vocoder", "griffin-lim", "mlsa-vocoder"])
def test_vocoder_pesq_against_the_original(name, speech_dir):
    from pesq import pesq

    served = _served(name, _vocoders()[name])
    try:
        scores = []
        for i, src in enumerate(_real_clips(speech_dir)):
            resp = synth(
                served.stub, request_id=f"v{i}", task=generator_pb2.RECONSTRUCT, source_audio=encode_audio(src)
            )
            out = decode_audio(resp.audio)
            assert out.sample_rate == 16000 and abs(out.duration - src.duration) < 0.05
            ref = src.as_float32()
            deg = out.as_float32()[: ref.size]
            assert not np.allclose(deg, ref[: deg.size], atol=1e-3), "a vocoder that returns its input is a bug"
            scores.append(pesq(16000, ref[: deg.size], deg, "wb"))
            if i == 0:
                same = synth(
                    served.stub, request_id="again", task=generator_pb2.RECONSTRUCT, source_audio=encode_audio(src)
                )
                assert same.audio.data == resp.audio.data
        REPORT.setdefault(name, {}).update(pesq_wb=round(float(np.mean(scores)), 3))
        assert all(1.5 <= s <= 4.5 for s in scores), scores
    finally:
        served.close()


def test_griffin_lim_is_seeded(speech_dir):
    from voxarena.services.generators.griffin_lim.model import GriffinLimModel

    served = Served(GriffinLimModel())
    try:
        src = encode_audio(_real_clips(speech_dir, 1)[0])
        a = synth(served.stub, seed=1, task=generator_pb2.RECONSTRUCT, source_audio=src, parameters={"n_iter": "4"})
        b = synth(served.stub, seed=2, task=generator_pb2.RECONSTRUCT, source_audio=src, parameters={"n_iter": "4"})
        assert a.audio.data != b.audio.data and a.seed == 1 and b.seed == 2
    finally:
        served.close()


def test_world_vc_moves_toward_the_target_speaker(speech_dir):
    from voxarena.services.generators.world_vc.model import WorldVcModel

    served = Served(WorldVcModel())
    sim = get_metric("sim")
    speakers = sorted(p for p in (speech_dir / "LibriSpeech" / "test-other").iterdir())[:6]
    before, after = [], []
    try:
        for a, b in zip(speakers[:-1], speakers[1:]):
            src = read_audio_file(str(sorted(a.glob("*/*.flac"))[0]))
            target_files = sorted(b.glob("*/*.flac"))
            ref, held_out = read_audio_file(str(target_files[0])), read_audio_file(str(target_files[1]))
            resp = synth(
                served.stub,
                task=generator_pb2.CONVERT,
                source_audio=encode_audio(src),
                reference_audio=encode_audio(ref),
            )
            out = decode_audio(resp.audio)
            before.append(sim.measure(ClipInputs("b", src, speaker_reference=held_out))[0]["sim.cosine"])
            after.append(sim.measure(ClipInputs("a", out, speaker_reference=held_out))[0]["sim.cosine"])
        clone = synth(
            served.stub,
            task=generator_pb2.CLONE,
            text="He hoped there would be stew for dinner.",
            reference_audio=encode_audio(ref),
        )
        assert decode_audio(clone.audio).duration > 1.0
        REPORT["world-vc"] = {
            "sim_before": round(float(np.mean(before)), 3),
            "sim_after": round(float(np.mean(after)), 3),
        }
        assert np.mean(after) > np.mean(before), (before, after)
    finally:
        served.close()


@pytest.mark.parametrize("name", ["world-vocoder", "griffin-lim", "mlsa-vocoder"])
def test_ten_minute_source_is_a_clear_error(name):
    served = _served(name, _vocoders()[name])
    try:
        long = AudioClip(np.zeros(16000 * 600, np.int16) + 1, 16000)
        with pytest.raises(grpc.RpcError) as e:
            synth(served.stub, task=generator_pb2.RECONSTRUCT, source_audio=encode_audio(long))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "at most 120 s" in e.value.details()
        silent = AudioClip(np.zeros(16000, np.int16), 16000)
        with pytest.raises(grpc.RpcError) as e:
            synth(served.stub, task=generator_pb2.RECONSTRUCT, source_audio=encode_audio(silent))
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "all zeros" in e.value.details()
    finally:
        served.close()


@pytest.mark.parametrize("name", ["espeak-ng", "flite", "festival-hts", "mbrola", "piper-vits"])
def test_long_and_unspeakable_text(name):
    served = _served(name, _tts_models()[name])
    try:
        long_text = ("The quick brown fox jumps over the lazy dog. " * 120)[:5000]
        out = decode_audio(synth(served.stub, task=generator_pb2.TTS, text=long_text).audio)
        assert out.duration > 120
        with pytest.raises(grpc.RpcError) as e:
            synth(served.stub, task=generator_pb2.TTS, text="x" * 5001)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        try:  # punctuation only: audio or a clear INVALID_ARGUMENT, never INTERNAL
            synth(served.stub, task=generator_pb2.TTS, text="?!")
        except grpc.RpcError as err:
            assert err.code() == grpc.StatusCode.INVALID_ARGUMENT, err.details()
    finally:
        served.close()


def test_world_vc_resamples_reference_and_refuses_short_one(speech_dir):
    from voxarena.services.generators.world_vc.model import WorldVcModel

    served = Served(WorldVcModel())
    try:
        src = _real_clips(speech_dir, 1)[0]
        ref22 = AudioClip(resample(src.samples, 16000, 22050), 22050)
        out = decode_audio(
            synth(
                served.stub,
                task=generator_pb2.CONVERT,
                source_audio=encode_audio(src),
                reference_audio=encode_audio(ref22),
            ).audio
        )
        assert out.sample_rate == 16000
        with pytest.raises(grpc.RpcError) as e:
            synth(
                served.stub,
                task=generator_pb2.CONVERT,
                source_audio=encode_audio(src),
                reference_audio=encode_audio(AudioClip(src.samples[:1600], 16000)),
            )
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    finally:
        served.close()

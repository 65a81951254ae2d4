"""diffwave-small: the fast schedule's fractional steps against an independent interpolation, the committed
weights on real LibriSpeech (the source's length, its spectral envelope kept, a seed's bytes repeated and
another seed's not, chunked passes equal to whole ones), weights that are not the recorded ones refused, its
training recipe twice on a tiny corpus (the same bytes, weights that load), and conformance in process."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from voxarena.codec import AudioClip, read_audio_file
from voxarena.conformance import run_conformance
from voxarena.sdk import InvalidArgument, SynthesisRequest
from voxarena.services.detectors.trained import METADATA_FILE, WeightsMismatch
from voxarena.services.generators.diffwave_small import diffusion
from voxarena.services.generators.diffwave_small import model as diffwave
from voxarena.services.generators.diffwave_small.model import DiffwaveSmallModel
from voxarena.services.generators.hifigan import mel

WEIGHTS = Path(diffwave.__file__).parent / "weights"


def test_each_fast_step_runs_at_the_training_step_of_its_noise_level():
    # independent: invert sqrt(abar) over the training steps by linear interpolation
    train = np.sqrt(diffusion.alpha_bars(diffusion.TRAIN_BETAS))
    fast = np.sqrt(diffusion.alpha_bars(diffusion.FAST_BETAS))
    expected = np.interp(fast, train[::-1], np.arange(train.size, dtype=float)[::-1])
    assert np.allclose(diffusion.fast_steps(), expected, atol=1e-9)
    assert diffusion.fast_steps()[0] == pytest.approx(0.0) and np.all(np.diff(diffusion.fast_steps()) > 0)


def test_the_reverse_process_of_a_perfect_denoiser_returns_the_signal():
    # a denoiser that knows x_0 predicts eps = (x - sqrt(abar) x_0) / sqrt(1 - abar) at every step: the last
    # step (no noise added) then lands on x_0 exactly, whatever the noise drawn before
    x0 = 0.5 * np.sin(np.arange(2048) / 9.0)
    bars = diffusion.alpha_bars(diffusion.FAST_BETAS)

    def oracle(x: np.ndarray, step: float) -> np.ndarray:
        s = int(np.argmin(np.abs(diffusion.fast_steps() - step)))
        return (x - np.sqrt(bars[s]) * x0) / np.sqrt(1.0 - bars[s])

    y = diffusion.reverse(oracle, x0.size, np.random.default_rng(3))
    assert np.max(np.abs(y - x0)) < 1e-3


@pytest.fixture(scope="module")
def model() -> DiffwaveSmallModel:
    m = DiffwaveSmallModel()
    m.load()
    return m


@pytest.fixture(scope="module")
def utterance(speech_dir: Path) -> AudioClip:
    path = sorted((speech_dir / "LibriSpeech" / "test-clean").glob("*/*/*.flac"))[1]
    clip = read_audio_file(str(path))
    return AudioClip(clip.samples[: 4 * clip.sample_rate], clip.sample_rate)


def _reconstruct(m: DiffwaveSmallModel, clip: AudioClip, seed: int, schedule: str = "fast") -> np.ndarray:
    request = SynthesisRequest("r", seed, "RECONSTRUCT", source_audio=clip, parameters={"schedule": schedule})
    return m.synthesize(request).audio.samples


def _envelope_correlation(x: np.ndarray, y: np.ndarray) -> float:
    """Correlation of two signals' log-mels: white noise against speech gives about 0 (-0.05 here)."""
    a, b = mel.log_mel(x.astype(np.float64), 16000), mel.log_mel(y.astype(np.float64), 16000)
    return float(np.corrcoef(a.ravel(), b.ravel())[0, 1])


def test_the_committed_weights_vocode_the_source(model, utterance):
    x = utterance.as_float32()
    y = _reconstruct(model, utterance, 7)
    assert y.size == x.size
    # Measured on this clip: 0.21 by the fast schedule (these small weights leave much residual noise after 6
    # steps), 0.79 by the full one.
    fast, full = _envelope_correlation(x, y), _envelope_correlation(x, _reconstruct(model, utterance, 7, "full"))
    assert fast > 0.12 and full > 0.7 and full > fast + 0.3, (fast, full)
    assert np.array_equal(y, _reconstruct(model, utterance, 7))
    assert not np.array_equal(y, _reconstruct(model, utterance, 8))


def test_a_schedule_not_offered_is_refused_by_name(model, utterance):
    with pytest.raises(InvalidArgument, match="schedule='slow' is not one of fast, full"):
        _reconstruct(model, utterance, 1, "slow")


def test_chunked_passes_equal_the_whole_clip(model, utterance, monkeypatch):
    whole = _reconstruct(model, utterance, 5)
    monkeypatch.setattr(diffwave, "CHUNK_FRAMES", 40)  # 4 s: six chunks
    assert np.max(np.abs(_reconstruct(model, utterance, 5) - whole)) < 1e-4


def test_weights_that_are_not_the_recorded_ones_are_refused(tmp_path):
    for f in WEIGHTS.iterdir():
        if f.is_file():
            (tmp_path / f.name).write_bytes(f.read_bytes())
    meta = json.loads((tmp_path / METADATA_FILE).read_text())
    meta["files"][diffwave.ONNX_FILE] = "0" * 64
    (tmp_path / METADATA_FILE).write_text(json.dumps(meta))
    with pytest.raises(WeightsMismatch, match="denoiser.onnx: sha256 .* does not match metadata 0000"):
        DiffwaveSmallModel(tmp_path).load()
    with pytest.raises(FileNotFoundError, match="make train-generators GENERATORS=diffwave-small"):
        DiffwaveSmallModel(tmp_path / "none").load()


def test_the_recipe_trains_the_same_bytes_twice_and_they_load(speech_dir, tmp_path):
    from voxarena.services.generators.diffwave_small.train import main

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for p in sorted((speech_dir / "LibriSpeech" / "train-clean-100").glob("*/*/*.flac"))[:4]:
        (corpus / p.name).symlink_to(p)
    for out in ("a", "b"):
        main(["--corpus", str(corpus), "--out", str(tmp_path / out), "--steps", "4", "--dev-speakers", "1"])
    a, b = (tmp_path / d / diffwave.ONNX_FILE for d in "ab")
    assert a.read_bytes() == b.read_bytes()
    meta = json.loads((tmp_path / "a" / METADATA_FILE).read_text())
    assert meta["steps"] == 4 and meta["n_dev_utterances"] == 1 and meta["onnx_max_gap"] < 1e-3
    m = DiffwaveSmallModel(tmp_path / "a")
    m.load()
    clip = AudioClip((0.1 * np.sin(np.arange(8000) / 7.0)).astype(np.float32), 16000)
    assert _reconstruct(m, clip, 1).size == 8000


def test_diffwave_small_passes_conformance_in_process(in_process_model):
    checks = run_conformance(in_process_model(DiffwaveSmallModel()), timeout=120)
    # strict (no WARN either), as its image is checked
    bad = [f"{c.name}: {c.status} {c.detail}" for c in checks if c.status in ("FAIL", "WARN")]
    assert not bad, bad

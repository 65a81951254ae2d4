"""lfcc-gmm: front end against the definition, weights-hash refusal, repeatable scores."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from scipy.fft import dct

from services.detectors.lfcc_gmm.gmm import DiagonalGmm
from services.detectors.lfcc_gmm.lfcc import LfccConfig, lfcc, linear_filterbank
from services.detectors.lfcc_gmm.model import WEIGHTS_DIR, LfccGmmModel, WeightsMismatch
from voxarena.codec import read_audio_file


def test_filterbank_is_triangular_and_linear():
    cfg = LfccConfig()
    bank = linear_filterbank(cfg)
    assert bank.shape == (257, 20)
    peaks = np.argmax(bank, axis=0) * (8000 / 256)
    np.testing.assert_allclose(np.diff(peaks), 8000 / 21, atol=8000 / 256)  # equally spaced centres
    assert bank.max() <= 1.0 + 1e-9 and bank.min() >= 0


def test_lfcc_of_one_frame_by_hand():
    cfg = LfccConfig()
    rng = np.random.default_rng(0)
    x = rng.standard_normal(320)  # exactly one 20 ms frame
    feats = lfcc(x, cfg)
    assert feats.shape == (1, 60)
    spec = np.abs(np.fft.rfft(x * np.hamming(320), 512)) ** 2
    expected = dct(np.log10(spec @ linear_filterbank(cfg) + np.finfo(float).eps), norm="ortho")[:20]
    np.testing.assert_allclose(feats[0, :20], expected)
    np.testing.assert_allclose(feats[0, 20:], 0)  # one frame: no change, so zero deltas


def test_gmm_log_likelihood_matches_scipy():
    from scipy.stats import multivariate_normal

    rng = np.random.default_rng(1)
    g = DiagonalGmm(np.array([0.3, 0.7]), rng.standard_normal((2, 3)), rng.uniform(0.5, 2, (2, 3)))
    x = rng.standard_normal((5, 3))
    expected = np.log(sum(w * multivariate_normal(m, np.diag(v)).pdf(x) for w, m, v in zip(g.weights, g.means, g.variances)))
    np.testing.assert_allclose(g.frame_log_likelihood(x), expected)


def test_refuses_weights_whose_hash_does_not_match(tmp_path):
    for f in WEIGHTS_DIR.iterdir():
        shutil.copy(f, tmp_path / f.name)
    data = bytearray((tmp_path / "lfcc_gmm.npz").read_bytes())
    data[-100] ^= 0xFF
    (tmp_path / "lfcc_gmm.npz").write_bytes(bytes(data))
    with pytest.raises(WeightsMismatch, match="refusing to start"):
        LfccGmmModel(tmp_path).load()


def test_same_scores_across_two_starts(speech_dir):
    clips = [read_audio_file(str(p)) for p in sorted((speech_dir / "LibriSpeech" / "test-clean").glob("*/*/*.flac"))[:3]]
    first, second = LfccGmmModel(), LfccGmmModel()
    first.load()
    second.load()
    assert first.score_batch(clips) == second.score_batch(clips)
    assert first.metadata()["training_manifest_sha256"]

"""lfcc-gmm: front end and GMM against their definitions (weights: test_trained_detectors.py)."""

from __future__ import annotations

import numpy as np
from scipy.fft import dct

from voxarena.services.detectors.lfcc_gmm.gmm import DiagonalGmm
from voxarena.services.detectors.lfcc_gmm.lfcc import LfccConfig, lfcc, linear_filterbank


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
    expected = np.log(
        sum(w * multivariate_normal(m, np.diag(v)).pdf(x) for w, m, v in zip(g.weights, g.means, g.variances))
    )
    np.testing.assert_allclose(g.frame_log_likelihood(x), expected)

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


def test_segment_scores_are_the_frame_llrs_of_each_20_ms():
    """Native segments (partial fakes): the frames whose centre lies in a 20 ms segment, averaged; computed
    here from the frame LLRs by time, the way a reader of the README would."""
    from voxarena.codec import AudioClip
    from voxarena.segments import segment_count
    from voxarena.services.detectors.lfcc_gmm.model import LfccGmmModel

    model = LfccGmmModel()
    rng = np.random.default_rng(2)
    model._cfg = LfccConfig()
    model._bona = DiagonalGmm(np.array([1.0]), rng.standard_normal((1, 60)), np.ones((1, 60)))
    model._spoof = DiagonalGmm(np.array([1.0]), rng.standard_normal((1, 60)), np.ones((1, 60)) * 2)
    for seconds in (0.5, 1.013, 2.0):
        clip = AudioClip((0.1 * rng.standard_normal(int(seconds * 16000))).astype(np.float32), 16000)
        llr = model.frame_llrs(clip)
        segments = model.segments_of(clip)
        assert len(segments) == segment_count(clip.samples.size, 16000, 0.02)
        for i, value in enumerate(segments):
            inside = [v for t, v in enumerate(llr) if (160 * t + 160) // 320 == i]  # centre sample // 20 ms
            if inside:
                assert value == np.mean(inside)
            else:  # past the last frame centre: the last frame's
                assert value == llr[-1]
        assert np.mean(llr) == model.score_clip(clip)

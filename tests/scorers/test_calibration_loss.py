"""Calibration loss (Cllr - minCllr) and its speaker-bootstrap interval from the scorer service,
against an independent recomputation of every resample (Cllr by definition, minCllr through
sklearn's isotonic regression)."""

import math

import numpy as np
import pytest

from voxarena.scorers.service import ScorerServicer
from voxarena.v1 import scorer_pb2


def _cllr(b, s) -> float:
    return 0.5 * (
        sum(math.log2(1 + math.exp(-x)) for x in b) / len(b) + sum(math.log2(1 + math.exp(x)) for x in s) / len(s)
    )


def _min_cllr(b, s) -> float:
    """Cllr of the isotonic (PAV) posteriors turned into LLRs: e^LLR = p / (1 - p) * N- / N+."""
    from sklearn.isotonic import IsotonicRegression

    scores, labels = np.r_[b, s], np.r_[np.ones(len(b)), np.zeros(len(s))]
    p = IsotonicRegression(y_min=0.0, y_max=1.0).fit_transform(scores, labels)
    odds_ratio = len(s) / len(b)
    with np.errstate(divide="ignore"):  # p = 1 on a bona fide trial (p = 0 on a spoof) costs nothing
        bona_cost = np.log2(1 + (1 - p[labels == 1]) / p[labels == 1] / odds_ratio)
        spoof_cost = np.log2(1 + p[labels == 0] / (1 - p[labels == 0]) * odds_ratio)
    return 0.5 * (np.mean(bona_cost) + np.mean(spoof_cost))


def _trial_set(rng):
    # Overconfident LLRs (twice the true LLR of these Gaussians) for 12 speakers, 4 bona fide + 6 spoof each.
    speakers = [f"spk{k}" for k in range(12)]
    bona = rng.normal(1.0, 1.0, 48) * 2
    spoof = rng.normal(-1.0, 1.0, 72) * 2
    return bona, spoof, [speakers[i // 4] for i in range(48)], [speakers[i // 6] for i in range(72)]


def test_calibration_loss_interval_is_the_paired_bootstrap():
    rng = np.random.default_rng(5)
    bona, spoof, bc, sc = _trial_set(rng)
    request = scorer_pb2.DetectionMetricsRequest(
        sets=[
            scorer_pb2.TrialSet(
                name="t", bonafide_scores=bona, spoof_scores=spoof, bonafide_clusters=bc, spoof_clusters=sc
            )
        ],
        bootstrap=scorer_pb2.Bootstrap(resamples=200, seed=9, confidence=0.9),
    )
    got = ScorerServicer().DetectionMetrics(request, None).sets[0]
    point = _cllr(bona, spoof) - _min_cllr(bona, spoof)
    assert got.cllr - got.min_cllr == pytest.approx(point, abs=1e-9) and point > 0.05

    # The same resamples as voxarena.stats.bootstrap (speakers drawn with all their trials, seeded), recomputed.
    clusters = np.array(bc + sc)
    scores = np.r_[bona, spoof]
    is_bona = np.arange(scores.size) < bona.size
    unique, inverse = np.unique(clusters, return_inverse=True)
    members = [np.flatnonzero(inverse == k) for k in range(len(unique))]
    draws = np.random.default_rng(9)
    losses = []
    for _ in range(200):
        idx = np.concatenate([members[k] for k in draws.integers(0, len(unique), size=len(unique))])
        b, s = scores[idx][is_bona[idx]], scores[idx][~is_bona[idx]]
        losses.append(_cllr(b, s) - _min_cllr(b, s))
    assert got.ci_low["calibration_loss"] == pytest.approx(np.quantile(losses, 0.05), abs=1e-9)
    assert got.ci_high["calibration_loss"] == pytest.approx(np.quantile(losses, 0.95), abs=1e-9)
    # Paired, not the difference of two intervals: never below zero (PAV is the best monotonic
    # calibration on the very trials of each resample), and narrower than that difference.
    assert got.ci_low["calibration_loss"] >= 0
    assert got.ci_high["calibration_loss"] - got.ci_low["calibration_loss"] < (
        got.ci_high["cllr"] - got.ci_low["min_cllr"]
    ) - (got.ci_low["cllr"] - got.ci_high["min_cllr"])

"""Detection metrics with the ASVspoof 5 definitions (evaluation package ``calculate_metrics.py``).

Convention: higher score = more bona fide; bona fide trials are the targets. Defaults: Pspoof 0.05,
Cmiss 1, Cfa 10. EER, minDCF, actDCF, Cllr and minCllr are computed once over a pooled trial set.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class CostModel:
    p_spoof: float = 0.05
    c_miss: float = 1.0
    c_fa: float = 10.0


ASVSPOOF5_COSTS = CostModel()


def det_curve(bonafide: np.ndarray, spoof: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Miss (bona fide rejected) and false-alarm (spoof accepted) rates at every score threshold.

    As ``compute_det_curve`` in the ASVspoof evaluation package: a stable sort of all scores,
    one point per trial, plus the point below the lowest score.
    """
    n_b, n_s = bonafide.size, spoof.size
    scores = np.concatenate([bonafide, spoof])
    labels = np.concatenate([np.ones(n_b), np.zeros(n_s)])
    order = np.argsort(scores, kind="mergesort")
    labels = labels[order]
    bona_below = np.cumsum(labels)
    spoof_above = n_s - (np.arange(1, n_b + n_s + 1) - bona_below)
    frr = np.concatenate([[0.0], bona_below / n_b])
    far = np.concatenate([[1.0], spoof_above / n_s])
    thresholds = np.concatenate([[scores[order[0]] - 0.001], scores[order]])
    return frr, far, thresholds


def eer(bonafide: np.ndarray, spoof: np.ndarray) -> tuple[float, float]:
    """(EER as a fraction, threshold): the DET point where |Pmiss - Pfa| is smallest, their mean."""
    frr, far, thr = det_curve(bonafide, spoof)
    i = int(np.argmin(np.abs(frr - far)))
    return float(np.mean((frr[i], far[i]))), float(thr[i])


def min_dcf(bonafide: np.ndarray, spoof: np.ndarray, costs: CostModel = ASVSPOOF5_COSTS) -> float:
    """Normalised minimum detection cost over all DET thresholds."""
    frr, far, _ = det_curve(bonafide, spoof)
    c_det = costs.c_miss * (1 - costs.p_spoof) * frr + costs.c_fa * costs.p_spoof * far
    return float(np.min(c_det) / _c_default(costs))


def act_dcf(bonafide: np.ndarray, spoof: np.ndarray, costs: CostModel = ASVSPOOF5_COSTS) -> float:
    """Normalised detection cost at the Bayes threshold -log(beta) for LLR scores."""
    beta = costs.c_miss * (1 - costs.p_spoof) / (costs.c_fa * costs.p_spoof)
    threshold = -np.log(beta)
    p_miss = np.sum(bonafide < threshold) / bonafide.size
    p_fa = np.sum(spoof >= threshold) / spoof.size
    c = costs.c_miss * (1 - costs.p_spoof) * p_miss + costs.c_fa * costs.p_spoof * p_fa
    return float(c / _c_default(costs))


def _c_default(costs: CostModel) -> float:
    return min(costs.c_miss * (1 - costs.p_spoof), costs.c_fa * costs.p_spoof)


def cllr(bonafide: np.ndarray, spoof: np.ndarray) -> float:
    """Log-likelihood-ratio cost in bits, numerically stable for scores of any magnitude.

    0.5 * (mean log2(1 + e^-s) over bona fide + mean log2(1 + e^s) over spoof).
    """
    return float(0.5 * (np.mean(np.logaddexp(0.0, -bonafide)) + np.mean(np.logaddexp(0.0, spoof))) / np.log(2))


def pav_llrs(bonafide: np.ndarray, spoof: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Optimally calibrated LLRs by pool-adjacent-violators (BOSARIS ``opt_loglr``), may be ±inf.

    Tied scores are pooled first (their label mean, weighted by their count), then scipy's PAV runs
    on the sorted unique scores: the same posteriors as sklearn's IsotonicRegression (tested), about
    8x faster, which matters inside the bootstrap (one PAV per resample per trial set).
    """
    from scipy.optimize import isotonic_regression

    scores = np.concatenate([bonafide, spoof])
    labels = np.concatenate([np.ones(bonafide.size), np.zeros(spoof.size)])
    _, inverse, counts = np.unique(scores, return_inverse=True, return_counts=True)
    pooled = np.bincount(inverse, weights=labels) / counts
    posterior = isotonic_regression(pooled, weights=counts.astype(np.float64), increasing=True).x[inverse]
    prior_log_odds = np.log(bonafide.size / spoof.size)
    with np.errstate(divide="ignore"):
        llr = np.log(posterior) - np.log1p(-posterior) - prior_log_odds
    return llr[: bonafide.size], llr[bonafide.size :]


def min_cllr(bonafide: np.ndarray, spoof: np.ndarray) -> float:
    """Cllr after PAV calibration: the discrimination-only part of Cllr."""
    b, s = pav_llrs(bonafide, spoof)
    return cllr(b, s)


# The figures the scorer's speaker bootstrap gives an interval for: the headline metrics and the
# calibration loss, Cllr - minCllr (bits lost because the scores are not the best-calibrated LLRs).
BOOTSTRAPPED = ("eer", "min_dcf", "act_dcf", "cllr", "min_cllr", "calibration_loss")


def calibration_loss(values: dict[str, float]) -> float:
    """Cllr - minCllr of one trial set's metrics: 0 for perfectly calibrated LLRs, and unbounded above."""
    return values["cllr"] - values["min_cllr"]


def bootstrap_figures(values: dict[str, float]) -> dict[str, float]:
    """The ``BOOTSTRAPPED`` figures of ``detection_metrics`` output, computed per resample (so the loss's
    interval comes from the same resamples, not from the difference of two intervals)."""
    return {**{k: values[k] for k in BOOTSTRAPPED if k in values}, "calibration_loss": calibration_loss(values)}


def detection_metrics(
    bonafide: npt.ArrayLike, spoof: npt.ArrayLike, costs: CostModel = ASVSPOOF5_COSTS
) -> dict[str, float]:
    """All metrics of one trial set; raises ValueError naming what is missing."""
    b = np.asarray(bonafide, dtype=np.float64)
    s = np.asarray(spoof, dtype=np.float64)
    if b.size == 0 or s.size == 0:
        raise ValueError(f"need bona fide and spoof scores, got {b.size} bona fide and {s.size} spoof")
    if not (np.all(np.isfinite(b)) and np.all(np.isfinite(s))):
        raise ValueError("scores must be finite")
    e, thr = eer(b, s)
    return {
        "n_bonafide": int(b.size),
        "n_spoof": int(s.size),
        "eer": e,
        "eer_threshold": thr,
        "min_dcf": min_dcf(b, s, costs),
        "act_dcf": act_dcf(b, s, costs),
        "cllr": cllr(b, s),
        "min_cllr": min_cllr(b, s),
    }

"""Linear maps from scores to natural-log likelihood ratios, fitted by logistic regression.

One fit serves two uses: calibrating one detector's score (K = 1, LLR = a * s + b; see
``voxarena.services.detectors.calibration``) and fusing K detectors' scores into one (LLR = w . x + b; see
``voxarena.orchestrator.metrics.fusion``), as ASVspoof 5 track 2 systems do.

Prior-weighted logistic regression (BOSARIS-style): with the bona fide and spoof trials weighted to
an effective prior of 0.5, the fitted log-odds w . x + b is the LLR log p(x|bona fide) - log p(x|spoof).

Platt's target smoothing keeps the fit finite on trials the scores separate perfectly (the usual
case on seen attacks): a bona fide trial's target is (N+ + 1)/(N+ + 2) instead of 1 and a spoof
trial's 1/(N- + 2) instead of 0, Laplace's rule of succession for N+ bona fide and N- spoof trials.
With affinely independent features the smoothed cross-entropy is strictly convex and coercive, so
the minimiser exists and is unique; with no overlap it puts a bona fide trial near LLR log(N+ + 1)
and a spoof trial near -log(N- + 1) instead of at infinity. The smoothing has no free parameter
and fades as the trials grow in number or overlap. We chose it over a regularisation strength
picked by cross-validation because on separable data every held-out fold is separable too, so
cross-validated log-loss keeps asking for less regularisation: the very divergence to stop.

numpy only. Sums are written out feature by feature (no BLAS product), so a fit and its LLRs are
the same bytes on every run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

METHOD = "prior-weighted logistic regression (P=0.5), Platt target smoothing"
EFFECTIVE_PRIOR = 0.5
NEWTON_STEPS = 100


def platt_targets(n_bonafide: int, n_spoof: int) -> tuple[float, float]:
    """Platt's smoothed targets: (N+ + 1)/(N+ + 2) for bona fide, 1/(N- + 2) for spoof."""
    return (n_bonafide + 1) / (n_bonafide + 2), 1 / (n_spoof + 2)


def _log_odds(params: np.ndarray, columns: Sequence[np.ndarray]) -> np.ndarray:
    """params[:K] . columns + params[K], one feature at a time (K = len(columns))."""
    m: np.ndarray = params[0] * columns[0]
    for j in range(1, len(columns)):
        m = m + params[j] * columns[j]
    out: np.ndarray = m + params[len(columns)]
    return out


def _weighted_sum(weights: np.ndarray, *columns: np.ndarray | None) -> float:
    """sum(weights * c1 * c2 ...), a None column standing for ones."""
    product = weights
    for c in columns:
        if c is not None:
            product = product * c
    return float(np.sum(product))


def _objective(
    params: np.ndarray, columns: Sequence[np.ndarray], t: np.ndarray, w: np.ndarray
) -> tuple[float, np.ndarray, np.ndarray]:
    """Weighted cross-entropy (nats) of soft targets ``t`` against sigmoid(params . [x, 1]); value,
    gradient and Hessian over the K weights and the bias (last)."""
    m = _log_odds(params, columns)
    p = np.exp(-np.logaddexp(0.0, -m))  # sigmoid(m) without overflow
    value = float(np.sum(w * (t * np.logaddexp(0.0, -m) + (1 - t) * np.logaddexp(0.0, m))))
    r = w * (p - t)
    h = w * p * (1 - p)
    cols: list[np.ndarray | None] = [*columns, None]  # None: the bias's column of ones
    grad = np.array([_weighted_sum(r, c) for c in cols])
    hess = np.array([[_weighted_sum(h, ci, cj) for cj in cols] for ci in cols])
    return value, grad, hess


def _newton(columns: Sequence[np.ndarray], t: np.ndarray, w: np.ndarray) -> np.ndarray:
    """The minimiser of ``_objective`` by damped Newton from zero (backtracking until it descends)."""
    params = np.zeros(len(columns) + 1)
    value, grad, hess = _objective(params, columns, t, w)
    for _ in range(NEWTON_STEPS):
        step = np.linalg.solve(hess, grad)
        shrink = 1.0
        while True:  # backtracking: the objective must go down
            trial = params - shrink * step
            trial_value, trial_grad, trial_hess = _objective(trial, columns, t, w)
            if trial_value <= value:
                break
            shrink /= 2
            if shrink < 1e-10:  # no descent left at double precision: done
                break
        if trial_value > value:
            break
        converged = value - trial_value < 1e-15 or np.max(np.abs(trial_grad)) < 1e-12
        params, value, grad, hess = trial, trial_value, trial_grad, trial_hess
        if converged:
            break
    return params


@dataclass(frozen=True)
class LinearLLR:
    """LLR = weights . x + bias (natural log), and the trials it was fitted on."""

    weights: tuple[float, ...]
    bias: float
    n_bonafide: int
    n_spoof: int

    def __call__(self, features: np.ndarray) -> np.ndarray:
        """The LLRs of trials ``features`` (n x K, in the order of the fit's features)."""
        x = np.asarray(features, float)
        if x.ndim != 2 or x.shape[1] != len(self.weights):
            raise ValueError(f"expected an n x {len(self.weights)} array of scores, got shape {x.shape}")
        columns = [np.ascontiguousarray(x[:, j]) for j in range(x.shape[1])]
        return _log_odds(np.array([*self.weights, self.bias]), columns)

    def record(self) -> dict[str, object]:
        """The map, the method and its parameters, as provenance records store them."""
        t_bona, t_spoof = platt_targets(self.n_bonafide, self.n_spoof)
        return {
            "weights": list(self.weights),
            "bias": self.bias,
            "method": METHOD,
            "effective_prior": EFFECTIVE_PRIOR,
            "n_bonafide": self.n_bonafide,
            "n_spoof": self.n_spoof,
            "target_bonafide": t_bona,
            "target_spoof": t_spoof,
        }


def fit_linear_llr(bonafide: np.ndarray, spoof: np.ndarray, names: Sequence[str] | None = None) -> LinearLLR:
    """The LLR map of K scores per trial (``bonafide``: N+ x K, ``spoof``: N- x K), by damped Newton on
    the smoothed, prior-weighted cross-entropy. ``names`` (one per feature) name them in errors.

    Raises ValueError without both classes, with a non-finite score, when a feature has one value
    for every trial (no slope to fit), or when the features are affinely dependent (one is a linear
    function of the others: their weights are not identifiable).
    """
    b, s = np.asarray(bonafide, float), np.asarray(spoof, float)
    if b.ndim != 2 or s.ndim != 2 or b.shape[1] != s.shape[1] or b.shape[1] == 0:
        raise ValueError(f"expected N x K arrays with the same K >= 1, got shapes {b.shape} and {s.shape}")
    k = b.shape[1]
    names = list(names) if names is not None else [f"feature {j}" for j in range(k)]
    if len(names) != k:
        raise ValueError(f"{len(names)} names for {k} features")
    if b.shape[0] == 0 or s.shape[0] == 0:
        raise ValueError(f"the fit needs both classes, got {b.shape[0]} bona fide and {s.shape[0]} spoof trials")
    columns = [np.concatenate([b[:, j], s[:, j]]) for j in range(k)]
    for name, x in zip(names, columns):
        if not np.all(np.isfinite(x)):
            raise ValueError(f"{name}: scores must be finite ({int(np.sum(~np.isfinite(x)))} are not)")
        if np.ptp(x) == 0:
            raise ValueError(f"{name} needs at least two distinct scores, all {x.size} are {x[0]}")
    # Standardise each feature so Newton starts well conditioned whatever the detectors' scales.
    centres = [float(np.mean(x)) for x in columns]
    scales = [float(np.std(x)) for x in columns]
    z = [(x - c) / sc for x, c, sc in zip(columns, centres, scales)]
    if k > 1 and np.linalg.matrix_rank(np.column_stack([*z, np.ones(z[0].size)])) < k + 1:
        raise ValueError(
            f"the scores of {', '.join(names)} are affinely dependent (one is a linear function "
            "of the others): their weights cannot be told apart; leave one out"
        )
    n_b, n_s = b.shape[0], s.shape[0]
    t_bona, t_spoof = platt_targets(n_b, n_s)
    t = np.concatenate([np.full(n_b, t_bona), np.full(n_s, t_spoof)])
    w = np.concatenate([np.full(n_b, EFFECTIVE_PRIOR / n_b), np.full(n_s, (1 - EFFECTIVE_PRIOR) / n_s)])
    params = _newton(z, t, w)
    weights = [params[j] / scales[j] for j in range(k)]
    bias = params[k] - sum(wj * c for wj, c in zip(weights, centres))
    return LinearLLR(tuple(float(x) for x in weights), float(bias), n_b, n_s)

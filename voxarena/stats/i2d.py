"""I2D ("Iterate to Differentiate") aggregation of a metric's trajectory over iterations 1..N.

The paper (``../shared/papers/003_*``) summarises a per-iteration trajectory four ways; all four are
computed on the metric oriented so that higher is better (a lower-is-better metric x enters as
1 - x, the paper's "1 - CER"):

- ``mean``: the arithmetic mean over iterations;
- ``lwa``:  linearly weighted average, weight k for iteration k (later iterations count more);
- ``ewa``:  exponentially weighted average, weight decay^(k-1) (weights decaying with depth);
- ``auc``:  the area under the trajectory by the trapezoidal rule with unit spacing, over
  iterations 1..N (so N - 1 units wide: a flat trajectory at x has AUC (N - 1) * x).

A trajectory with a missing iteration (NaN) has no aggregates: every aggregate would silently
weigh a different set of iterations.
"""

from __future__ import annotations

import math

import numpy as np

AGGREGATES = ("mean", "lwa", "ewa", "auc")
EWA_DECAY = 0.5  # the paper's


def oriented(value: float, higher_is_better: bool) -> float:
    """The value as I2D aggregates it: lower-is-better metrics become 1 - x."""
    return value if higher_is_better else 1.0 - value


def aggregate_trajectory(values: list[float], ewa_decay: float = EWA_DECAY) -> dict[str, float]:
    """Mean, LWA, EWA and trapezoid AUC of ``values`` (iteration 1 first), all NaN if any is missing."""
    x = np.asarray(values, dtype=np.float64)
    if x.size == 0 or not np.all(np.isfinite(x)):
        return {k: math.nan for k in AGGREGATES}
    k = np.arange(1, x.size + 1, dtype=np.float64)
    linear = k / k.sum()
    exponential = ewa_decay ** (k - 1)
    exponential /= exponential.sum()
    auc = float(np.sum((x[1:] + x[:-1]) / 2.0)) if x.size > 1 else 0.0
    return {"mean": float(x.mean()), "lwa": float(linear @ x), "ewa": float(exponential @ x), "auc": auc}

"""Percentile bootstrap over clusters (speakers, not utterances): utterances of one speaker are not
independent, so a speaker is drawn with all of its trials. Seeded: same inputs, same intervals."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def cluster_intervals(
    clusters: list[str],
    statistic: Callable[[np.ndarray], dict[str, float]],
    resamples: int,
    seed: int,
    confidence: float,
) -> tuple[dict[str, float], dict[str, float]]:
    """(low, high) per key of ``statistic(indices)`` over ``resamples`` cluster resamples.

    ``statistic`` gets the indices of the items in a resample and returns named figures; a resample
    for which it raises ValueError (e.g. no spoof left) is skipped.
    """
    ids = np.asarray(clusters)
    unique, inverse = np.unique(ids, return_inverse=True)
    members = [np.flatnonzero(inverse == k) for k in range(len(unique))]
    rng = np.random.default_rng(seed)
    draws: dict[str, list[float]] = {}
    for _ in range(resamples):
        picked = rng.integers(0, len(unique), size=len(unique))
        idx = np.concatenate([members[k] for k in picked])
        try:
            values = statistic(idx)
        except ValueError:
            continue
        for key, v in values.items():
            if v is not None and np.isfinite(v):
                draws.setdefault(key, []).append(float(v))
    alpha = (1.0 - confidence) / 2.0
    low = {k: float(np.quantile(v, alpha)) for k, v in draws.items()}
    high = {k: float(np.quantile(v, 1.0 - alpha)) for k, v in draws.items()}
    return low, high

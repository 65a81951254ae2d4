"""Composite scores of the SoK paper (section 4.2, 4.3.1, appendix G, table 10).

Generators (higher is better): F = sum_i w_i * M_i,norm with M_norm = eps + (1 - eps) * t, where t
is the min-max normalisation of the metric over the systems compared, flipped (1 - t) for
lower-is-better metrics (the direction is the metric's own, ``voxarena.metric_catalogue``);
the parameter count ``params_m`` (millions, lower is better) enters as its natural log. A system without
trainable parameters (rule-based, DSP) gets the best parameter term. A metric missing for every system
is dropped and the remaining weights renormalised.

Detectors (lower is better): S_i = alpha * P_i + (1 - alpha) * C_i, P_i = sum_j w_j A_ij,
A_ij = mean of the min-max normalised EER, Cllr and minDCF (min and max over all pairs, per metric),
w_j = R_j / sum_k R_k (challenge scores, equal by default), C_i = min-max normalised log parameter count.

Ranks: 1 is the best system (highest F, lowest S); equal scores are ranked by system name.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from voxarena.metric_catalogue import HIGHER_IS_BETTER

TTS_WEIGHTS = {"dnsmos": 0.25, "sim": 0.25, "psnr": 0.15, "wer": 0.20, "rtf": 0.075, "params_m": 0.075}
RECONSTRUCTION_WEIGHTS = {"dnsmos": 0.25, "pesq": 0.225, "psnr": 0.15, "ssim": 0.225, "rtf": 0.075, "params_m": 0.075}
PARAMS = "params_m"  # the model-size term: parameter count in millions
EPSILON = 0.1
DETECTOR_ALPHA = 0.8


class CompositeError(ValueError):
    pass


def _is_missing(v: float | None) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _present(v: float | None) -> float | None:
    """``v``, or None when it is missing (None or NaN)."""
    return None if _is_missing(v) else v


def _normalise(values: dict[str, float], lower_is_better: bool, eps: float) -> dict[str, float]:
    lo, hi = min(values.values()), max(values.values())
    out = {}
    for k, v in values.items():
        t = (v - lo) / (hi - lo) if hi > lo else 1.0
        out[k] = eps + (1 - eps) * ((1 - t) if lower_is_better else t)
    return out


def _higher_is_better(metric: str) -> bool:
    if metric == PARAMS:
        return False
    if metric not in HIGHER_IS_BETTER:
        raise CompositeError(
            f"weighted metric {metric!r} has no known direction: weights name scorer metrics "
            f"({', '.join(sorted(HIGHER_IS_BETTER))}) or {PARAMS}"
        )
    return HIGHER_IS_BETTER[metric]


def generator_scores(
    table: Mapping[str, Mapping[str, float | None]], weights: dict[str, float], eps: float = EPSILON
) -> dict[str, float]:
    """``table``: system -> {metric: value} (None or NaN: missing).
    Returns system -> composite score (higher is better)."""
    if not table:
        raise CompositeError("no systems to compare")
    direction = {m: _higher_is_better(m) for m in weights}
    systems = sorted(table)
    usable = {m: w for m, w in weights.items() if any(not _is_missing(table[s].get(m)) for s in systems)}
    if not usable:
        raise CompositeError(f"none of the weighted metrics ({', '.join(weights)}) is present")
    total_w = sum(usable.values())
    scores = {s: 0.0 for s in systems}
    for metric, w in usable.items():
        raw = {}
        for s in systems:
            v = _present(table[s].get(metric))
            if metric == PARAMS:
                if v is None or v <= 0:
                    continue  # no trainable parameters: best term below
                v = math.log(v)
            elif v is None:
                raise CompositeError(f"{s}: metric {metric} is missing (it is present for other systems)")
            raw[s] = float(v)
        norm = _normalise(raw, not direction[metric], eps) if raw else {}
        for s in systems:
            scores[s] += (w / total_w) * norm.get(s, 1.0)
    return scores


def detector_scores(
    pairs: Sequence[Mapping[str, Any]],
    params_m: dict[str, float],
    alpha: float = DETECTOR_ALPHA,
    challenge: dict[str, float] | None = None,
) -> dict[str, float]:
    """Detector -> S_i (lower is better)."""
    if not pairs:
        raise CompositeError("no detector x generator pairs")
    detectors = sorted({p["detector"] for p in pairs})
    generators = sorted({p["generator"] for p in pairs})
    missing = [d for d in detectors if d not in params_m]
    if missing:
        raise CompositeError(f"no parameter count for detector(s) {', '.join(missing)}")
    r = {g: 1.0 for g in generators}
    if challenge:
        unknown = sorted(set(challenge) - set(generators))
        if unknown:
            raise CompositeError(f"challenge scores for unknown generator(s) {', '.join(unknown)}")
        r.update(challenge)
    total_r = sum(r[g] for g in generators)
    w = {g: r[g] / total_r for g in generators}
    norm: dict[str, dict[tuple[str, str], float]] = {}
    for metric in ("eer", "cllr", "min_dcf"):
        vals = {(p["detector"], p["generator"]): float(p[metric]) for p in pairs}
        lo, hi = min(vals.values()), max(vals.values())
        norm[metric] = {k: (v - lo) / (hi - lo) if hi != lo else 0.0 for k, v in vals.items()}
    logs = {d: math.log(params_m[d]) for d in detectors}
    lmin, lmax = min(logs.values()), max(logs.values())
    out = {}
    for d in detectors:
        p_i = 0.0
        for g in generators:
            key = (d, g)
            if key not in norm["eer"]:
                raise CompositeError(f"pair {d} x {g} is missing")
            p_i += w[g] * (norm["eer"][key] + norm["cllr"][key] + norm["min_dcf"][key]) / 3.0
        c_i = (logs[d] - lmin) / (lmax - lmin) if lmax != lmin else 0.0
        out[d] = alpha * p_i + (1 - alpha) * c_i
    return out


def ranks(scores: dict[str, float], higher_is_better: bool) -> dict[str, int]:
    """System -> rank, 1 for the best; equal scores are ranked by system name."""
    ordered = sorted(scores, key=lambda k: (-scores[k] if higher_is_better else scores[k], k))
    return {s: n for n, s in enumerate(ordered, 1)}

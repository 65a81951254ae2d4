"""CLONE by style search: which point of Kokoro's style space does the d-vector encoder place closest
to the reference speaker? Not a trained cloning model: the output can only be a voice Kokoro's five
stock voices span.

Per request, with the bank's d-vectors already computed:
1. embed the reference (no synthesis);
2. rank the bank by cosine to it; fit non-negative weights over the ``top_k`` nearest so their
   d-vectors' combination is closest (least squares) to the reference's, and take the same
   combination of their style points: one probe synthesis measures it;
3. refine: ``search_steps`` seeded random moves around the best point so far (one probe synthesis
   each), a move kept only when its d-vector is closer; the step shrinks after a miss. The wall
   time budget ``search_seconds`` stops it early (then, and only then, the result depends on the
   machine's speed: the log says so).
The caller then speaks the request's text once in the winning style.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import nnls

from .style_space import StyleBank, StylePoint

log = logging.getLogger("voxarena.kokoro")

STEP = 0.25  # first refinement step: standard deviation of the weight moves
SHRINK = 0.6  # step factor after a move that did not get closer


@dataclass
class SearchBudget:
    steps: int
    seconds: float
    top_k: int


@dataclass
class SearchOutcome:
    point: StylePoint
    cosine: float  # d-vector cosine of the probe in ``point`` to the reference
    probe_syntheses: int = 0
    bank_best_cosine: float = 0.0
    stopped_by_time: bool = False
    trace: list[float] = field(default_factory=list)


def interpolation_weights(bank_emb: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Non-negative weights (sum 1) whose combination of ``bank_emb`` rows is closest to ``target``."""
    w, _ = nnls(bank_emb.T.astype(np.float64), target.astype(np.float64))
    if w.sum() <= 0:
        w = np.zeros(len(bank_emb))
        w[0] = 1.0
    return w / w.sum()


def search(
    reference: np.ndarray, bank: StyleBank, probe: Callable[[StylePoint], np.ndarray], budget: SearchBudget, seed: int
) -> SearchOutcome:
    """The style whose probe d-vector is closest to ``reference`` within the budget (deterministic for a seed)."""
    t0 = time.perf_counter()
    cos = bank.embeddings @ reference
    order = np.argsort(-cos, kind="stable")
    best = SearchOutcome(bank.points[order[0]], float(cos[order[0]]), bank_best_cosine=float(cos[order[0]]))
    best.trace.append(best.cosine)
    top = order[: budget.top_k]
    if len(top) > 1:
        w = interpolation_weights(bank.embeddings[top], reference)
        if np.count_nonzero(w > 1e-6) > 1:
            mixed = StylePoint.from_vector(sum(wi * bank.points[i].vector() for wi, i in zip(w, top)))
            _consider(best, mixed, probe, reference)
    rng = np.random.default_rng(seed)
    step = STEP
    for _ in range(budget.steps):
        if time.perf_counter() - t0 > budget.seconds:
            best.stopped_by_time = True
            log.warning(
                "kokoro CLONE: search_seconds %.0f reached after %d probe syntheses; the result depends on "
                "this machine's speed",
                budget.seconds,
                best.probe_syntheses,
            )
            break
        move = rng.normal(0.0, step, size=best.point.vector().size)
        k = move.size // 2
        move[:k] -= move[:k].mean()  # stay on the plane where each half's weights sum to 1
        move[k:] -= move[k:].mean()
        if not _consider(best, StylePoint.from_vector(best.point.vector() + move), probe, reference):
            step *= SHRINK
    return best


def _consider(
    best: SearchOutcome, point: StylePoint, probe: Callable[[StylePoint], np.ndarray], reference: np.ndarray
) -> bool:
    c = float(probe(point) @ reference)
    best.probe_syntheses += 1
    best.trace.append(c)
    if c > best.cosine:
        best.point, best.cosine = point, c
        return True
    return False

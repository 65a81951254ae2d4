"""``Composite`` and ``I2DAggregates``: the SoK paper's composite scores and the I2D trajectory aggregates
of figures the client already measured, converted to and from the statistics core
(``voxarena.stats.composite``, ``voxarena.stats.i2d``), which computes them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from voxarena.sdk.errors import InvalidArgument
from voxarena.stats import composite, i2d
from voxarena.v1 import scorer_pb2


def composite_results(request: scorer_pb2.CompositeRequest) -> list[scorer_pb2.CompositeResult]:
    """Every generator composite, then every detector composite, of the request."""
    return [_generator_composite(c) for c in request.generators] + [_detector_composite(c) for c in request.detectors]


def trajectory_aggregates(request: scorer_pb2.I2DAggregatesRequest) -> list[scorer_pb2.TrajectoryAggregates]:
    """Each trajectory's I2D aggregates, its values oriented so that higher is better."""
    decay = request.ewa_decay if request.HasField("ewa_decay") else i2d.EWA_DECAY
    if not 0 < decay <= 1:
        raise InvalidArgument(f"ewa_decay {decay} is outside (0, 1]")
    out = []
    for t in request.trajectories:
        values = [i2d.oriented(v, t.higher_is_better) for v in t.values]
        out.append(
            scorer_pb2.TrajectoryAggregates(
                name=t.name, iterations=len(values), **i2d.aggregate_trajectory(values, decay)
            )
        )
    return out


def _unique(what: str, names: list[str], composite_name: str) -> None:
    seen = set()
    for n in names:
        if n in seen:
            raise InvalidArgument(f"composite {composite_name}: {what} {n!r} appears twice")
        seen.add(n)


def _scored(name: str, higher_is_better: bool, compute: Callable[[], dict[str, float]]) -> scorer_pb2.CompositeResult:
    """The composite's scores and ranks, or the reason it has none (a missing metric is a fact of the
    run, reported in its row, not a bad request)."""
    result = scorer_pb2.CompositeResult(name=name, higher_is_better=higher_is_better)
    try:
        scores = compute()
    except composite.CompositeError as e:
        result.error = str(e)
        return result
    ranks = composite.ranks(scores, higher_is_better)
    result.scores.extend(scorer_pb2.SystemScore(system=s, score=scores[s], rank=ranks[s]) for s in sorted(scores))
    return result


def _generator_composite(c: scorer_pb2.GeneratorComposite) -> scorer_pb2.CompositeResult:
    eps = c.epsilon if c.HasField("epsilon") else composite.EPSILON
    if not 0 <= eps < 1:
        raise InvalidArgument(f"composite {c.name}: epsilon {eps} is outside [0, 1)")
    _unique("system", [s.system for s in c.systems], c.name)
    _unique("weighted metric", [w.metric for w in c.weights], c.name)
    for w in c.weights:
        if not 0 < w.weight < math.inf:
            raise InvalidArgument(f"composite {c.name}: weight {w.weight} of {w.metric} is not a positive number")
    table = {s.system: dict(s.values) for s in c.systems}
    weights = {w.metric: w.weight for w in c.weights}
    return _scored(c.name, True, lambda: composite.generator_scores(table, weights, eps))


def _detector_composite(c: scorer_pb2.DetectorComposite) -> scorer_pb2.CompositeResult:
    alpha = c.alpha if c.HasField("alpha") else composite.DETECTOR_ALPHA
    if not 0 <= alpha <= 1:
        raise InvalidArgument(f"composite {c.name}: alpha {alpha} is outside [0, 1]")
    _unique("detector x generator pair", [f"{p.detector} x {p.generator}" for p in c.pairs], c.name)
    for what, table in (("params_m", c.params_m), ("challenge", c.challenge)):
        for key, value in table.items():
            if not 0 < value < math.inf:
                raise InvalidArgument(f"composite {c.name}: {what} {value} of {key} is not a positive number")
    pairs = [
        {"detector": p.detector, "generator": p.generator, "eer": p.eer, "cllr": p.cllr, "min_dcf": p.min_dcf}
        for p in c.pairs
    ]
    return _scored(c.name, False, lambda: composite.detector_scores(pairs, dict(c.params_m), alpha, dict(c.challenge)))

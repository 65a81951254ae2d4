"""``DetectionMetrics``: a detector's trial sets into the ASVspoof 5 figures, with speaker-cluster intervals.

The figures themselves are the statistics core's (``voxarena.stats.detection``); this module converts
the request, checks it against the bounds and the costs' ranges, and converts the answer back.
"""

from __future__ import annotations

import math

import grpc
import numpy as np

from voxarena.sdk.errors import InvalidArgument
from voxarena.stats import detection
from voxarena.stats.bootstrap import cluster_intervals
from voxarena.v1 import scorer_pb2

from .bounds import DEFAULT_CONFIDENCE, MAX_TRIALS_PER_SET, WhileWanted, check_bootstrap_work, requested_bootstrap


def detection_intervals(
    s: scorer_pb2.TrialSet,
    bona: np.ndarray,
    spoof: np.ndarray,
    costs: detection.CostModel,
    boot: scorer_pb2.Bootstrap,
    context: grpc.ServicerContext | None = None,
) -> tuple[dict[str, float], dict[str, float]]:
    """Speaker-cluster bootstrap of a trial set: a drawn speaker brings its bona fide and spoof trials."""
    clusters = list(s.bonafide_clusters or [f"b{i}" for i in range(bona.size)]) + list(
        s.spoof_clusters or [f"s{i}" for i in range(spoof.size)]
    )
    scores = np.concatenate([bona, spoof])
    is_bona = np.arange(scores.size) < bona.size

    def statistic(idx: np.ndarray) -> dict[str, float]:
        values = detection.detection_metrics(scores[idx][is_bona[idx]], scores[idx][~is_bona[idx]], costs)
        return detection.bootstrap_figures(values)

    return cluster_intervals(
        clusters, WhileWanted(statistic, context), boot.resamples, boot.seed, boot.confidence or DEFAULT_CONFIDENCE
    )


def requested_costs(request: scorer_pb2.DetectionMetricsRequest) -> detection.CostModel:
    """The request's cost model (ASVspoof 5's by default), or INVALID_ARGUMENT for costs out of range."""
    if not request.HasField("costs"):
        return detection.ASVSPOOF5_COSTS
    c = request.costs
    if not (0 < c.p_spoof < 1 and 0 < c.c_miss < math.inf and 0 < c.c_fa < math.inf):
        raise InvalidArgument(f"invalid costs: p_spoof={c.p_spoof} c_miss={c.c_miss} c_fa={c.c_fa}")
    return detection.CostModel(c.p_spoof, c.c_miss, c.c_fa)


def _trial_scores(s: scorer_pb2.TrialSet) -> tuple[np.ndarray, np.ndarray]:
    """The set's bona fide and spoof scores, or INVALID_ARGUMENT when the set is too large or its
    cluster lists do not match its scores."""
    n = len(s.bonafide_scores) + len(s.spoof_scores)
    if n > MAX_TRIALS_PER_SET:
        raise InvalidArgument(f"trial set {s.name}: {n} scores exceeds the maximum {MAX_TRIALS_PER_SET}")
    bona, spoof = np.array(s.bonafide_scores), np.array(s.spoof_scores)
    for what, clusters, count in (
        ("bonafide", s.bonafide_clusters, bona.size),
        ("spoof", s.spoof_clusters, spoof.size),
    ):
        if clusters and len(clusters) != count:
            raise InvalidArgument(f"trial set {s.name}: {len(clusters)} {what} clusters for {count} scores")
    return bona, spoof


def detection_metrics(
    request: scorer_pb2.DetectionMetricsRequest, context: grpc.ServicerContext | None
) -> scorer_pb2.DetectionMetricsResponse:
    """Each trial set's figures (and intervals, when the request asks for a bootstrap)."""
    costs = requested_costs(request)
    boot = requested_bootstrap(request)
    out = []
    for s in request.sets:
        bona, spoof = _trial_scores(s)
        try:
            values = detection.detection_metrics(bona, spoof, costs)
        except ValueError as e:
            raise InvalidArgument(f"trial set {s.name}: {e}") from None
        m = scorer_pb2.DetectionMetrics(
            name=s.name,
            n_bonafide=int(values["n_bonafide"]),
            n_spoof=int(values["n_spoof"]),
            eer=values["eer"],
            eer_threshold=values["eer_threshold"],
            min_dcf=values["min_dcf"],
            act_dcf=values["act_dcf"],
            cllr=values["cllr"],
            min_cllr=values["min_cllr"],
        )
        if boot:
            check_bootstrap_work(boot, bona.size + spoof.size, f"trial set {s.name}")
            low, high = detection_intervals(s, bona, spoof, costs, boot, context)
            m.ci_low.update(low)
            m.ci_high.update(high)
        out.append(m)
    return scorer_pb2.DetectionMetricsResponse(sets=out)

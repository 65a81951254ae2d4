"""What the metric tables ask the scorer for, and how they check its answers.

Detection rows go to the scorer as trial sets (scores, with speakers as the bootstrap's clusters),
generations as measurement groups of their stored measurements; every request carries the run's
bootstrap settings, and a summary the scorer returns must carry the run's scorer fingerprint.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
from google.protobuf.message import Message

from voxarena.orchestrator.errors import CallFailed, RunError
from voxarena.orchestrator.run.partial import is_partial
from voxarena.orchestrator.store.records import DetectionRecord, GenerationRecord, MeasurementRecord
from voxarena.stats.bootstrap import cluster_intervals
from voxarena.v1 import scorer_pb2

# What the metric tables ask the scorer for, by method, for an error message.
_COMPUTING = {
    "DetectionMetrics": "detection metrics (EER, minDCF, ... with bootstrap intervals)",
    "Aggregate": "generator metrics (aggregates of the measurements with bootstrap intervals)",
    "I2DAggregates": "I2D trajectory aggregates",
    "Composite": "composite scores",
}


class MetricsInterrupted(RunError):
    """The scorer failed while the metrics were computed; every row is kept and a rerun computes them."""


class MetricsScorer:
    """The scorer client as the metric tables call it: a failed call becomes one error naming the scorer and
    what it was computing, instead of a traceback out of the middle of the tables."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def call(self, method: str, request: Message) -> tuple[Any, int]:
        try:
            return self.client.call(method, request)
        except CallFailed as e:
            name = self.client.name if self.client.name == "scorer" else f"scorer {self.client.name}"
            raise MetricsInterrupted(
                f"{name} at {self.client.address} failed while computing the "
                f"{_COMPUTING.get(method, method)}: {e}; every row is kept: rerun `orchestrator run` with the "
                "same config and --out to compute the metrics"
            ) from None


def one_shot(row: GenerationRecord | DetectionRecord) -> bool:
    """The headline tables hold one-shot whole clips; I2D iterations beyond the first and partial fakes (which
    are mostly bona fide speech) have tables of their own."""
    return row.i2d_iteration == 1 and not is_partial(row.task or "")


def bootstrap_settings(cfg) -> scorer_pb2.Bootstrap:
    """The run's bootstrap (resamples, seed = run seed, confidence), as every scorer request carries it."""
    return scorer_pb2.Bootstrap(
        resamples=cfg.scorer.bootstrap_resamples, seed=cfg.protocol.seed, confidence=cfg.scorer.confidence
    )


def add_intervals(
    row: dict, clusters: list[str], statistic: Callable[[np.ndarray], dict[str, float]], boot, keys: Iterable[str]
) -> None:
    """``row[<key>_ci_low]`` and ``row[<key>_ci_high]`` for each of ``keys``: speaker-cluster bootstrap
    intervals of ``statistic(indices)`` (``stats.bootstrap.cluster_intervals``) with the run's resamples,
    seed and confidence (``boot``); nothing when the run asks for no resamples."""
    if not boot.resamples:
        return
    low, high = cluster_intervals(clusters, statistic, boot.resamples, boot.seed, boot.confidence)
    for k in keys:
        row[f"{k}_ci_low"], row[f"{k}_ci_high"] = low.get(k, math.nan), high.get(k, math.nan)


def trial_set(name: str, bona: list[DetectionRecord], spoof: list[DetectionRecord]) -> scorer_pb2.TrialSet:
    """Scores and speakers (the bootstrap's clusters) of detection rows, as the scorer takes them."""
    return scorer_pb2.TrialSet(
        name=name,
        bonafide_scores=[r.scored for r in bona],
        spoof_scores=[r.scored for r in spoof],
        bonafide_clusters=[r.speaker for r in bona],
        spoof_clusters=[r.speaker for r in spoof],
    )


def detection_results(scorer, cfg, sets: list) -> dict:
    """Trial set name -> the scorer's metrics with bootstrap CIs (one call for all sets)."""
    if not sets:
        return {}
    resp, _ = scorer.call(
        "DetectionMetrics", scorer_pb2.DetectionMetricsRequest(sets=sets, bootstrap=bootstrap_settings(cfg))
    )
    return {s.name: s for s in resp.sets}


def measurement_group(
    name: str, gens: list[GenerationRecord], meas: dict[str, MeasurementRecord]
) -> scorer_pb2.MeasurementGroup:
    """The stored measurements of the generations ``gens`` (those that have one) as one scorer group."""
    return scorer_pb2.MeasurementGroup(
        name=name,
        clips=[
            scorer_pb2.ClipMeasurement(
                request_id=r.id, values=meas[r.id].values, errors=meas[r.id].errors, cluster=meas[r.id].speaker
            )
            for r in gens
            if r.id in meas
        ],
    )


def check_scorer(resp, infos: dict, what: str) -> None:
    """The scorer's summaries come with its fingerprint: it must be the run's, whose hash the rows carry."""
    if dict(resp.fingerprint) != dict(infos["scorer"].fingerprint):
        raise RunError(f"{what}: computed by a scorer whose fingerprint is not the run's (metrics/fingerprint.json)")

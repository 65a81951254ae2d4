"""The capacity plan's model (``capacity_plan.py``): a target arena's volumes, work and wall time from
the measured per-item costs (``capacity_measure``).

The model (each rule once, here):
- work of a service = calls x CPU per call (the target's services cost what the measured ones do on
  average; the slowest service is as slow as the slowest measured one);
- a stage's wall = its slowest service's work / (N replicas x cores per replica x efficiency);
- the orchestrator's work (rows x CPU per row + degradations) / M shards, one core each;
- stages overlap (clips stream from generation to detection and measurement), so the slowest of them
  bounds the pipeline; then start-up (the slowest service's, once: replicas start together) before
  and, after it, the metrics (one scorer call, one core) and, with M > 1, the merge's row copying;
- the same cores spent by work (``balanced``): each service's replicas in proportion to what it has to do.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.capacity_measure import Measured  # noqa: E402


@dataclass(frozen=True)
class Target:
    utterances: int
    generators: int
    detectors: int
    conditions: int  # channel conditions, clean included

    @property
    def clips(self) -> int:
        """Clips each detector scores per condition: the bona fide utterances and every generated clip."""
        return self.utterances * (self.generators + 1)


@dataclass(frozen=True)
class Costs:
    """The figures not in the run directory."""

    orchestrator_cpu_per_row: float  # seconds, the orchestrator's own work per stored row
    merge_cpu_per_row: float  # seconds, the merge's copying per merged row
    set_cpu: float  # seconds per detection trial set (bootstrap included)
    trial_cpu: float  # seconds per trial in a set
    cores_per_replica: float = 1.0
    efficiency: float = 0.905  # N replicas on N cores give N x this (benchmarks/replica_throughput.py: 1.81x)
    rss_per_jsonl_byte: float = 1.2  # an open run store's memory per byte of its tables (orchestrator_ceiling)
    metrics_scale: float = 1.0  # measured / modelled metrics CPU of the measured run (generator metrics, labels)


def mean(xs: list[float]) -> float:
    return float(np.mean(xs)) if xs else 0.0


def volumes(m: Measured, t: Target) -> dict[str, float]:
    """Requests, rows and bytes of the target run."""
    generated = t.utterances * t.generators
    degraded = (t.conditions - 1) * t.clips
    scores = t.detectors * t.conditions * t.clips
    rows = {"manifest": t.utterances, "generations": generated, "detections": scores,
            "degradations": degraded, "measurements": generated}  # fmt: skip
    generated_bytes = generated * m.generated_clip_bytes
    degraded_bytes = degraded * mean(list(m.degraded_clip_bytes.values()))
    # Detection trial sets and trials grow as the measured run's do: sets with D x C x (G + 1) (each
    # generator and the pool), trials with D x C x U x (3G + 1) (a generator's set: U bona fide + U
    # spoofs; the pool: U + U x G).
    g, d, c, u = len(m.generators), len(m.detectors), len(m.conditions) + 1, m.utterances
    sets = m.trial_sets * (t.detectors * t.conditions * (t.generators + 1)) / (d * c * (g + 1))
    trials = m.trials * (t.detectors * t.conditions * t.utterances * (3 * t.generators + 1)) / (d * c * u * (3 * g + 1))
    metrics_bytes = m.metrics_bytes * (t.detectors * t.conditions * (t.generators + 1)) / (d * c * (g + 1))
    rows_bytes = sum(n * m.row_bytes.get(k, 0.0) for k, n in rows.items())
    return {
        "Generate requests": generated,
        "ScoreBatch requests": t.detectors * t.conditions * math.ceil(t.clips / m.detector_batch),
        "MeasureClips requests": math.ceil(generated / m.scorer_batch),
        "detection scores": scores,
        "degradations": degraded,
        "rows": sum(rows.values()),
        "generated audio bytes": generated_bytes,
        "degraded audio bytes": degraded_bytes,
        "JSONL bytes": rows_bytes,
        "metrics bytes": metrics_bytes,
        "run store bytes": generated_bytes + degraded_bytes + rows_bytes + metrics_bytes,
        "trial sets": sets,
        "trials": trials,
        "DetectionMetrics request bytes": trials * m.trial_bytes,
    }


@dataclass(frozen=True)
class TargetService:
    """A kind of service of the target run: a measured one, standing for ``count`` services like it."""

    name: str
    stage: str
    count: float  # G / g for a generator, D / d for a detector, 1 for the scorer
    cpu_seconds: float  # the work of each of them in the target run


def target_services(m: Measured, t: Target) -> list[TargetService]:
    """The target's services: each measured generator stands for G / g of its 20, each detector for D / d."""
    gens, dets = t.generators / len(m.generators), t.detectors / len(m.detectors)
    return [
        *(TargetService(s.name, "generate", gens, t.utterances * s.cpu_per_call) for s in m.generators),
        *(TargetService(s.name, "detect", dets, t.conditions * t.clips * s.cpu_per_call) for s in m.detectors),
        TargetService("scorer", "measure", 1.0, t.utterances * t.generators * m.scorer.cpu_per_call),
    ]


def stage_work(m: Measured, t: Target, k: Costs) -> dict[str, tuple[float, float]]:
    """Per stage: (CPU seconds in all, CPU seconds of its slowest service)."""
    v = volumes(m, t)
    services = target_services(m, t)
    degrade = (t.conditions - 1) * t.clips * mean(list(m.degrade_cpu_per_clip.values()))
    orchestrator = v["rows"] * k.orchestrator_cpu_per_row + degrade
    return {
        **{
            stage: (
                sum(s.count * s.cpu_seconds for s in services if s.stage == stage),
                max(s.cpu_seconds for s in services if s.stage == stage),
            )
            for stage in ("generate", "detect", "measure")
        },
        "orchestrator": (orchestrator, orchestrator),
        "metrics": ((v["trial sets"] * k.set_cpu + v["trials"] * k.trial_cpu) * k.metrics_scale,) * 2,
    }


def wall_seconds(m: Measured, t: Target, k: Costs, replicas: int, shards: int) -> dict[str, float]:
    """The wall-time model (the module docstring states it), its terms by name."""
    work = stage_work(m, t, k)
    lanes = replicas * k.cores_per_replica * k.efficiency
    terms = {stage: work[stage][1] / lanes for stage in ("generate", "detect", "measure")}
    terms["orchestrator"] = work["orchestrator"][1] / shards
    return {f"{s} (wall)": w for s, w in terms.items()} | total_wall(m, t, k, max(terms.values()), shards)


def total_wall(m: Measured, t: Target, k: Costs, pipeline: float, shards: int) -> dict[str, float]:
    """The slowest stage's wall (``pipeline``, the orchestrator's included) with what comes before and after."""
    startups = [s.startup_cpu_seconds or 0.0 for s in [*m.generators, *m.detectors, m.scorer]]
    out = {"start-up": max(startups) / k.cores_per_replica, "pipeline": pipeline}
    out["metrics"] = stage_work(m, t, k)["metrics"][1]
    out["merge"] = volumes(m, t)["rows"] * k.merge_cpu_per_row if shards > 1 else 0.0
    out["total"] = out["start-up"] + out["pipeline"] + out["metrics"] + out["merge"]
    return out


def balanced(m: Measured, t: Target, k: Costs, cores: float) -> tuple[dict[str, int], float, float]:
    """Replicas within ``cores`` service cores that keep the slowest service fast: one each, then one
    more at a time (for every service like it) to the service whose wall is the longest, while the cores
    last. Returns the replicas of each service like a measured one, the cores used and the slowest wall."""
    services = target_services(m, t)
    replicas = {s.name: 1 for s in services}
    used = sum(s.count for s in services) * k.cores_per_replica
    while True:
        slowest = max(services, key=lambda s: s.cpu_seconds / replicas[s.name])
        if used + slowest.count * k.cores_per_replica > cores:
            break
        replicas[slowest.name] += 1
        used += slowest.count * k.cores_per_replica
    wall = max(s.cpu_seconds / replicas[s.name] for s in services) / (k.cores_per_replica * k.efficiency)
    return replicas, used, wall


def memory_bytes(m: Measured, t: Target, k: Costs, shards: int) -> float:
    """Resident memory of one shard's orchestrator: it holds its share of the tables' rows."""
    return volumes(m, t)["JSONL bytes"] / shards * k.rss_per_jsonl_byte

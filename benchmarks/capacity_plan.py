"""The capacity plan: a target arena's requests, audio, run-store size, CPU and wall time, extrapolated
from the per-item costs measured in a run directory.

    python benchmarks/capacity_plan.py RUN_DIR [--utterances 10000 --generators 20 --detectors 10
        --conditions 3 --replicas 1,4,16 --shards 1,4 --cores-per-replica 1 --efficiency 0.905]

RUN_DIR is best a merged sharded run with one start-up-only session (docs/scaling.md says how to make
one): a service's start-up CPU is then its cheapest session, and its work is the rest; the merge's
session holds the metrics' cost apart from the per-clip measurements.

What is read, per service, from the run: calls (rows), the service's process CPU over the sessions
(run.json ``service_cpu_seconds``, children included) less one start-up per session, the wall and CPU
seconds the rows carry, the audio seconds in and out; the bytes of each stored clip and of each JSONL
row. Measured here, in this process: each channel condition's CPU per clip (the orchestrator degrades
clips itself; its rows carry no timing) on up to ``--degrade-sample`` of the run's clips, and the
detection bootstrap's CPU per trial set and per trial (two trial-set sizes, the run's resamples).
Given on the command line: the orchestrator's own CPU per stored row and the merge's per merged row
(``/usr/bin/time`` of a shard and of the merge; docs/scaling.md has the figures and the commands).

The model (each rule once, in ``plan``):
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

import argparse
import csv
import json
import math
import re
import sys
import time
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from voxarena.orchestrator.fleet.clients import MAX_MESSAGE_BYTES  # noqa: E402
from voxarena.orchestrator.run.channel import apply_condition, condition_seed  # noqa: E402
from voxarena.orchestrator.run.config import ChannelStep  # noqa: E402
from voxarena.orchestrator.store.clips import read_clip  # noqa: E402
from voxarena.v1 import scorer_pb2  # noqa: E402

TABLES = ("manifest", "generations", "detections", "degradations", "measurements")
DETECTION_CSVS = ("detection_metrics.csv", "detection_by_label.csv")


class RunReadError(ValueError):
    """The run directory lacks what the plan needs: says the file and what is missing."""


@dataclass(frozen=True)
class ServiceCost:
    """One service as measured: its calls (clips served) and what they cost."""

    name: str
    calls: int
    cpu_seconds: float  # process CPU over the run's sessions, start-ups taken out
    startup_cpu_seconds: float | None  # None: one session only, so start-up is inside cpu_seconds
    audio_seconds: float  # audio seconds served (generated, scored or measured)
    row_wall_seconds: float | None = None  # as the rows report it (a detector's batch wall counted once)
    row_cpu_seconds: float | None = None  # as the rows report it (generators only)

    @property
    def cpu_per_call(self) -> float:
        return self.cpu_seconds / self.calls

    @property
    def cpu_per_audio_second(self) -> float:
        return self.cpu_seconds / self.audio_seconds if self.audio_seconds else math.nan

    @property
    def wall_per_call(self) -> float:
        return self.row_wall_seconds / self.calls if self.row_wall_seconds else math.nan


@dataclass(frozen=True)
class Measured:
    """Everything the plan extrapolates from."""

    utterances: int
    generators: list[ServiceCost]
    detectors: list[ServiceCost]
    scorer: ServiceCost
    conditions: list[str]  # besides clean
    clip_seconds: float  # mean generated clip
    generated_clip_bytes: float  # mean stored generated clip
    degraded_clip_bytes: dict[str, float]  # per condition, mean stored degraded clip
    row_bytes: dict[str, float]  # per table, mean JSONL bytes per row
    metrics_bytes: int
    detector_batch: int
    scorer_batch: int
    trial_sets: int  # detection trial sets the metrics computed (csv rows)
    trials: int  # their trials (n_bonafide + n_spoof, summed)
    trial_bytes: float  # bytes a trial adds to the DetectionMetrics request (score + speaker, serialised)
    metrics_cpu_seconds: float | None  # the merge's scorer work; None: not a merged run
    degrade_cpu_per_clip: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------- reading
def read_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    rows = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise RunReadError(f"{path}:{n}: not JSON ({e.msg})") from None
    return rows


def instant(stamp: str) -> datetime:
    """An ISO 8601 UTC stamp as the run writes them (nanoseconds, ``Z`` or ``+00:00``)."""
    m = re.fullmatch(r"(.+T\d\d:\d\d:\d\d)(\.\d+)?(Z|[+-]\d\d:\d\d)?", stamp)
    if m is None:
        raise RunReadError(f"not an ISO 8601 time: {stamp!r}")
    tz = "+00:00" if m[3] in (None, "Z") else m[3]
    return datetime.fromisoformat(m[1] + (m[2] or "")[:7] + tz)


def service_cpu(
    sessions: list[dict], name: str, notes: list[str], generation_starts: list[datetime]
) -> tuple[float, float | None]:
    """(work CPU, start-up CPU or None) of a service: its sessions' CPU less one start-up each, a start-up
    being its cheapest session (a rerun of a complete run starts every service and does no work)."""
    ran = [s for s in sessions if name in s.get("service_cpu_seconds", {})]
    if not ran:
        raise RunReadError(f"run.json: no session recorded the CPU of {name} (a run still going?)")
    cpus = [float(s["service_cpu_seconds"][name]) for s in ran]
    if len(ran) == 1:
        notes.append(f"{name}: one session only, so its CPU per call includes its start-up")
        return cpus[0], None
    cheapest = ran[int(np.argmin(cpus))]
    t0, t1 = instant(cheapest["started_at"]), instant(cheapest["ended_at"])
    if any(t0 <= t <= t1 for t in generation_starts):
        notes.append(f"{name}: the session taken for its start-up ({cheapest['started_at']}) also generated")
    return sum(cpus) - len(cpus) * min(cpus), min(cpus)


def file_bytes(run: Path, rows: list[dict]) -> list[int]:
    return [(run / r["audio"]).stat().st_size for r in rows]


def ok(rows: list[dict]) -> list[dict]:
    return [r for r in rows if r.get("status") == "ok"]


def group(rows: list[dict], key: str) -> dict[str, list[dict]]:
    """Rows by the value of ``key``, in sorted order."""
    out: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        out[r[key]].append(r)
    return dict(sorted(out.items()))


def generator_cost(name: str, rows: list[dict], cpu: tuple[float, float | None]) -> ServiceCost:
    timings = [r["timing"] for r in rows]
    return ServiceCost(
        name,
        len(rows),
        *cpu,
        audio_seconds=sum(r["duration"] for r in rows),
        row_wall_seconds=sum(t.get("wall_seconds", 0.0) for t in timings),
        row_cpu_seconds=sum(t.get("cpu_seconds", 0.0) for t in timings),
    )


def detector_cost(
    name: str, rows: list[dict], cpu: tuple[float, float | None], duration: dict[str, float]
) -> ServiceCost:
    # A batch's wall time is on each of its rows: count each (condition, wall) once.
    batch_walls = {(r["condition"], r["wall_seconds"]) for r in rows if "wall_seconds" in r}
    return ServiceCost(
        name,
        len(rows),
        *cpu,
        audio_seconds=sum(duration.get(r["clip"], 0.0) for r in rows),
        row_wall_seconds=sum(w for _, w in batch_walls),
    )


def trial_counts(metrics: Path) -> tuple[int, int]:
    """(detection trial sets, their trials) in the metrics' CSVs."""
    sets, trials = 0, 0
    for name in DETECTION_CSVS:
        if (metrics / name).exists():
            with (metrics / name).open(newline="") as f:
                for row in csv.DictReader(f):
                    sets += 1
                    trials += int(float(row["n_bonafide"] or 0)) + int(float(row["n_spoof"] or 0))
    return sets, trials


def measure(run: Path, degrade_sample: int = 12) -> Measured:
    record_path = run / "run.json"
    if not record_path.exists():
        raise RunReadError(f"{record_path}: missing (not a run directory)")
    record = json.loads(record_path.read_text())
    cfg = record["config"]
    notes: list[str] = []
    tables = {t: read_rows(run / f"{t}.jsonl") for t in TABLES}
    manifest = {r["id"]: r for r in tables["manifest"]}
    gens = [r for r in tables["generations"] if r.get("status") == "ok"]
    if not gens:
        raise RunReadError(f"{run / 'generations.jsonl'}: no successful generation to measure")
    starts = [instant(r["timing"]["start"]) for r in gens if r.get("timing", {}).get("start")]
    sessions = [s for s in record.get("sessions", []) if "merge" not in s]
    merges = [s for s in record.get("sessions", []) if "merge" in s]
    failed = {t: sum(r.get("status") != "ok" for r in rows) for t, rows in tables.items() if t != "manifest"}
    for t, n in failed.items():
        if n:
            notes.append(f"{t}: {n} failed rows left out of the costs")

    duration = {r["id"]: float(r["duration"]) for r in gens} | {i: float(r["duration"]) for i, r in manifest.items()}
    by_gen, by_det = group(gens, "generator"), group(ok(tables["detections"]), "detector")
    generators = [generator_cost(n, rows, service_cpu(sessions, n, notes, starts)) for n, rows in by_gen.items()]
    detectors = [
        detector_cost(n, rows, service_cpu(sessions, n, notes, starts), duration) for n, rows in by_det.items()
    ]
    measured = ok(tables["measurements"])
    if not measured or not detectors:
        raise RunReadError(f"{run}: the plan needs detections and measurements (has {len(measured)} measured clips)")
    work, startup = service_cpu(sessions, "scorer", notes, starts)
    metrics_cpu = None
    if merges and startup is not None:
        metrics_cpu = sum(float(s["service_cpu_seconds"].get("scorer", 0.0)) for s in merges) - len(merges) * startup
    else:
        notes.append("not a merged sharded run: the metrics' cost is inside the scorer's per-clip cost")
    scorer = ServiceCost("scorer", len(measured), work, startup, sum(duration.get(r["id"], 0.0) for r in measured))

    by_condition = group(ok(tables["degradations"]), "condition")
    conditions = sorted(cfg.get("conditions") or {})
    degraded_bytes = {c: float(np.mean(file_bytes(run, by_condition.get(c, [])) or math.nan)) for c in conditions}
    sets, trials = trial_counts(run / "metrics")
    if not sets:
        notes.append("no metrics/detection_metrics.csv: the metrics' cost is left out")
    metrics_dir = run / "metrics"
    scored = [r for rows in by_det.values() for r in rows]
    as_sent = scorer_pb2.TrialSet(
        bonafide_scores=[r["score"] for r in scored], bonafide_clusters=[r.get("speaker", "") for r in scored]
    )
    degrade_cpu = (
        degrade_costs(run, cfg["conditions"], int(cfg["protocol"]["seed"]), gens, degrade_sample)
        if degrade_sample and conditions
        else {}
    )
    return Measured(
        utterances=len(manifest),
        generators=generators,
        detectors=detectors,
        scorer=scorer,
        conditions=conditions,
        clip_seconds=float(np.mean([r["duration"] for r in gens])),
        generated_clip_bytes=float(np.mean(file_bytes(run, gens))),
        degraded_clip_bytes=degraded_bytes,
        row_bytes={t: (run / f"{t}.jsonl").stat().st_size / len(rows) if rows else 0.0 for t, rows in tables.items()},
        metrics_bytes=sum(p.stat().st_size for p in metrics_dir.glob("*") if p.is_file()),
        detector_batch=int(cfg.get("execution", {}).get("detector_batch_size", 16)),
        scorer_batch=int(cfg.get("scorer", {}).get("batch_size", 8)),
        trial_sets=sets,
        trials=trials,
        trial_bytes=as_sent.ByteSize() / len(scored),
        metrics_cpu_seconds=metrics_cpu,
        degrade_cpu_per_clip=degrade_cpu,
        notes=notes,
    )


def degrade_costs(run: Path, conditions: dict, seed: int, gens: list[dict], sample: int) -> dict[str, float]:
    """Process CPU seconds per clip of each condition, applied here to ``sample`` of the run's clips (every
    k-th, so each generator's clips are among them)."""
    picked = gens[:: max(1, len(gens) // sample)][:sample]
    clips = [(r["id"], read_clip(run / r["audio"], r["audio_sha256"], r["id"])) for r in picked]
    out = {}
    for name, steps in conditions.items():
        parsed = [ChannelStep.model_validate(s) for s in steps]
        t0 = time.process_time()
        for clip_id, clip in clips:
            apply_condition(clip, parsed, condition_seed(seed, name, clip_id))
        out[name] = (time.process_time() - t0) / len(clips)
    return out


def bootstrap_cpu(n: int, resamples: int, rng: np.random.Generator) -> float:
    """Process CPU seconds of one detection trial set's bootstrap CIs (n trials, half bona fide, 20
    speakers), computed by the scorer's own function."""
    from voxarena.scorers.trial_sets import detection_intervals
    from voxarena.stats import detection

    bona, spoof = rng.normal(1.0, 1.0, n // 2), rng.normal(-0.5, 1.5, n // 2)
    speakers = [f"spk{i % 20}" for i in range(n // 2)]
    s = SimpleNamespace(bonafide_clusters=speakers, spoof_clusters=speakers)
    boot = SimpleNamespace(resamples=resamples, seed=1, confidence=0.95)
    t0 = time.process_time()
    detection_intervals(s, bona, spoof, detection.ASVSPOOF5_COSTS, boot)  # type: ignore[arg-type]
    return time.process_time() - t0


def bootstrap_costs(resamples: int, sizes: tuple[int, int] = (100, 2000), repeats: int = 3) -> tuple[float, float]:
    """(CPU seconds per trial set, per trial) of the detection bootstrap at ``resamples``: each of two set
    sizes timed (the cheapest of ``repeats``, after a warm-up call), a line through the two."""
    rng = np.random.default_rng(0)
    bootstrap_cpu(sizes[0], resamples, rng)  # imports and first-call costs
    small, large = (min(bootstrap_cpu(n, resamples, rng) for _ in range(repeats)) for n in sizes)
    per_trial = max(0.0, (large - small) / (sizes[1] - sizes[0]))
    return max(0.0, small - per_trial * sizes[0]), per_trial


# ---------------------------------------------------------------------------------------------- the plan
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


# ---------------------------------------------------------------------------------------------- output
def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n:.0f} B"
        n /= 1000
    raise AssertionError("unreachable")


def hours(s: float) -> str:
    return f"{s / 3600:.2f} h" if s >= 360 else f"{s:.1f} s"


def print_measured(m: Measured) -> None:
    print(f"## Measured per-item costs ({m.utterances} utterances; CPU: service process, start-up taken out)\n")
    print("| service | calls | CPU s/call | CPU s per audio s | wall s/call (rows) | row CPU s/call | start-up CPU s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for s in [*m.generators, *m.detectors, m.scorer]:
        row_cpu = f"{s.row_cpu_seconds / s.calls:.4f}" if s.row_cpu_seconds is not None else ""
        wall = f"{s.wall_per_call:.4f}" if math.isfinite(s.wall_per_call) else ""
        startup = f"{s.startup_cpu_seconds:.1f}" if s.startup_cpu_seconds is not None else "in the calls"
        print(
            f"| {s.name} | {s.calls} | {s.cpu_per_call:.4f} | {s.cpu_per_audio_second:.4f} | "
            f"{wall} | {row_cpu} | {startup} |"
        )
    print(f"\nmean generated clip: {m.clip_seconds:.2f} s, {human_bytes(m.generated_clip_bytes)} stored")
    for c in m.conditions:
        cpu = m.degrade_cpu_per_clip.get(c)
        print(
            f"condition {c}: {human_bytes(m.degraded_clip_bytes[c])} per degraded clip"
            + (f", {cpu * 1000:.1f} ms CPU per clip (orchestrator)" if cpu is not None else "")
        )
    print("JSONL bytes per row: " + ", ".join(f"{t} {b:.0f}" for t, b in m.row_bytes.items()))
    if m.metrics_cpu_seconds is not None:
        print(f"metrics (merge session, scorer): {m.metrics_cpu_seconds:.1f} CPU s for {m.trial_sets} trial sets, "
              f"{m.trials} trials")  # fmt: skip
    for n in m.notes:
        print(f"note: {n}")


def print_plan(m: Measured, t: Target, k: Costs, replicas: list[int], shards: list[int]) -> None:
    print(f"\n## Target: {t.utterances} utterances x {t.generators} generators x {t.detectors} detectors x "
          f"{t.conditions} conditions (clean included)\n")  # fmt: skip
    for name, value in volumes(m, t).items():
        print(f"- {name}: {human_bytes(value) if 'bytes' in name else f'{value:,.0f}'}")
    work = stage_work(m, t, k)
    print("\n| stage | CPU-hours | slowest service, CPU-hours |\n|---|---:|---:|")
    for stage, (total, slowest) in work.items():
        print(f"| {stage} | {total / 3600:.2f} | {slowest / 3600:.2f} |")
    print(f"\nWall time (replicas per service with {k.cores_per_replica:g} core(s) each, efficiency "
          f"{k.efficiency:g}; M orchestrator shards):\n")  # fmt: skip
    cols = ["generate (wall)", "detect (wall)", "measure (wall)", "orchestrator (wall)", "start-up", "metrics",
            "merge", "total"]  # fmt: skip
    print("| N | M | " + " | ".join(cols) + " | bound by |\n|---:|---:|" + "---:|" * len(cols) + "---|")
    for n in replicas:
        for s in shards:
            w = wall_seconds(m, t, k, n, s)
            bound = max(cols[:4], key=lambda c: w[c]).removesuffix(" (wall)")
            print(f"| {n} | {s} | " + " | ".join(hours(w[c]) for c in cols) + f" | {bound} |")
    services = target_services(m, t)
    print("\nThe same cores, each service's replicas by its work (at least one each):\n")
    print("| service cores | used | M | services (wall) | total | replicas |\n|---:|---:|---:|---:|---:|---|")
    for n in replicas:
        cores = n * sum(s.count for s in services) * k.cores_per_replica
        r, used, wall = balanced(m, t, k, cores)
        shown = ", ".join(f"{name} {r[name]}" for name in sorted(r, key=lambda x: -r[x])[:4])
        for s in shards:
            orchestrator = stage_work(m, t, k)["orchestrator"][1] / s
            w = total_wall(m, t, k, max(wall, orchestrator), s)
            print(f"| {cores:g} | {used:g} | {s} | {hours(wall)} | {hours(w['total'])} | {shown}, ... |")
    print("\nOrchestrator memory (its run store's rows): " + ", ".join(
        f"M={s}: {human_bytes(memory_bytes(m, t, k, s))} per shard" for s in shards))  # fmt: skip
    request = volumes(m, t)["DetectionMetrics request bytes"]
    if request > MAX_MESSAGE_BYTES:
        print(f"warning: the metrics' one DetectionMetrics request would be {human_bytes(request)}, over the "
              f"{human_bytes(MAX_MESSAGE_BYTES)} gRPC message limit (voxarena.orchestrator.fleet.clients)")  # fmt: skip


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",")]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--utterances", type=int, default=10000)
    ap.add_argument("--generators", type=int, default=20)
    ap.add_argument("--detectors", type=int, default=10)
    ap.add_argument("--conditions", type=int, default=3, help="channel conditions, clean included")
    ap.add_argument("--replicas", type=ints, default=[1, 4, 16], help="N replicas per service, e.g. 1,4,16")
    ap.add_argument("--shards", type=ints, default=[1, 4], help="M orchestrator shards, e.g. 1,4")
    ap.add_argument("--cores-per-replica", type=float, default=1.0)
    ap.add_argument("--efficiency", type=float, default=0.905, help="replica scaling efficiency")
    # Measured 2026-12-02 (docs/scaling.md): the orchestrator's own CPU in shards 0 and 1 of
    # configs/capacity.yaml (8.0 and 14.3 ms per row), less its start-up-only session and the degradations.
    ap.add_argument("--orchestrator-ms-per-row", type=float, default=10.1, help="orchestrator CPU per row")
    # Not measurable at the measured run's size (its merge's own CPU was its start-up): the rate at which
    # orchestrator_ceiling.py opens a 100,000-row store (0.072 ms per row), rounded up for the rewrite.
    ap.add_argument("--merge-ms-per-row", type=float, default=0.1, help="merge CPU per merged row")
    ap.add_argument("--rss-per-jsonl-byte", type=float, default=1.2, help="run store memory per table byte")
    ap.add_argument("--degrade-sample", type=int, default=12, help="clips to time each condition on (0: none)")
    args = ap.parse_args(argv)
    try:
        m = measure(args.run_dir, args.degrade_sample)
    except (RunReadError, OSError, KeyError) as e:
        sys.exit(f"{args.run_dir}: cannot read the measured costs: {e}")
    record = json.loads((args.run_dir / "run.json").read_text())
    set_cpu, trial_cpu = bootstrap_costs(int(record["config"]["scorer"].get("bootstrap_resamples", 1000)))
    print_measured(m)
    print(f"bootstrap (timed here): {set_cpu:.3f} CPU s per trial set + {trial_cpu * 1000:.3f} ms per trial")
    scale = 1.0
    if m.metrics_cpu_seconds is not None and m.trial_sets:
        model = m.trial_sets * set_cpu + m.trials * trial_cpu
        scale = m.metrics_cpu_seconds / model
        print(f"that model gives {model:.1f} CPU s for the measured run's metrics, measured "
              f"{m.metrics_cpu_seconds:.1f}: the target's metrics are scaled by {scale:.2f}")  # fmt: skip
    k = Costs(args.orchestrator_ms_per_row / 1000, args.merge_ms_per_row / 1000, set_cpu, trial_cpu,
              args.cores_per_replica, args.efficiency, args.rss_per_jsonl_byte, scale)  # fmt: skip
    t = Target(args.utterances, args.generators, args.detectors, args.conditions)
    print_plan(m, t, k, args.replicas, args.shards)


if __name__ == "__main__":
    main()

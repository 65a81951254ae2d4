"""The capacity plan's measurements (``capacity_plan.py``): the per-item costs of a run directory.

What is read, per service, from the run: calls (rows), the service's process CPU over the sessions
(run.json ``service_cpu_seconds``, children included) less one start-up per session, the wall and CPU
seconds the rows carry, the audio seconds in and out; the bytes of each stored clip and of each JSONL
row. Measured here, in this process: each channel condition's CPU per clip (the orchestrator degrades
clips itself; its rows carry no timing) on up to ``--degrade-sample`` of the run's clips, and the
detection bootstrap's CPU per trial set and per trial (two trial-set sizes, the run's resamples).
Given on the command line: the orchestrator's own CPU per stored row and the merge's per merged row
(``/usr/bin/time`` of a shard and of the merge; docs/scaling.md has the figures and the commands).
"""

from __future__ import annotations

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

from voxarena.orchestrator.run.channel import apply_condition, condition_seed  # noqa: E402
from voxarena.orchestrator.run.config import ChannelStep  # noqa: E402
from voxarena.orchestrator.store.clips import read_clip  # noqa: E402
from voxarena.orchestrator.store.json_lines import read_json_lines  # noqa: E402
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
    return read_json_lines(path, RunReadError)


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

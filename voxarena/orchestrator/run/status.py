"""``orchestrator status RUN_DIR``: coverage of a run, per stage and per service.

The expected work is the run's ``Plan``, rebuilt from its own records (the frozen manifest, the
resolved config and the tasks each generator declared in ``run.json``): the same plan the pipeline
ran, so a run that stopped half-way shows what is still pending. A failure is a row with its reason
and its kind (``failures``); identical reasons are counted together. A shard's plan is its share of
the items, and it is complete without metrics: they are the merge's (``shard``).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from voxarena.orchestrator.run.manifest import ManifestSet
from voxarena.orchestrator.run.plan import Plan
from voxarena.orchestrator.run.shard import Shard
from voxarena.orchestrator.store.failures import failure_kind
from voxarena.orchestrator.store.outcome import Outcome
from voxarena.orchestrator.store.records import DetectionRecord, GenerationRecord, MeasurementRecord, Row, StreamRecord
from voxarena.orchestrator.store.run_store import detector_label, read_records

# Present while the metrics are being written (a run that stopped then has none, whatever CSVs are there).
METRICS_WRITING = ".writing"


class NotARunDirectory(ValueError):
    pass


@dataclass
class Coverage:
    stage: str
    service: str
    expected: int
    done: int = 0
    failed: int = 0
    reasons: Counter = field(default_factory=Counter)
    kinds: Counter = field(default_factory=Counter)

    @property
    def pending(self) -> int:
        return self.expected - self.done - self.failed

    def as_dict(self) -> dict:
        return {
            "stage": self.stage,
            "service": self.service,
            "expected": self.expected,
            "done": self.done,
            "failed": self.failed,
            "pending": self.pending,
            "failure_reasons": dict(self.reasons.most_common()),
            "failure_kinds": dict(self.kinds.most_common()),
        }


def _reason(row: Row) -> str:
    """A failure reason without the clip-specific prefix, so identical causes group together."""
    reason = row.reason or ("unknown" if row.code is None else row.code)
    return re.sub(r"^\S*\|\S*:\s*", "", reason)[:200]


def _count(cov: Coverage, expected_ids: list[str], rows: Mapping[str, Row]) -> Coverage:
    for i in expected_ids:
        row = rows.get(i)
        if row is None:
            continue
        if row.ok:
            cov.done += 1
        else:
            cov.failed += 1
            cov.reasons[_reason(row)] += 1
            cov.kinds[failure_kind(row)] += 1
    return cov


def run_status(run_dir: Path) -> dict:
    record_path = run_dir / "run.json"
    if not record_path.exists() or not (run_dir / "manifest.jsonl").exists():
        raise NotARunDirectory(f"{run_dir}: not a run directory (no run.json and manifest.jsonl)")
    record = json.loads(record_path.read_text())
    plan = Plan.of_record(record, ManifestSet.from_file(run_dir / "manifest.jsonl"))
    gens = read_records(run_dir / "generations.jsonl", GenerationRecord)
    dets = read_records(run_dir / "detections.jsonl", DetectionRecord)
    meas = read_records(run_dir / "measurements.jsonl", MeasurementRecord)
    coverage: list[Coverage] = []
    planned: set[str] = set()
    for g in plan.generators:
        ids = plan.generation_ids(g)
        planned.update(ids)
        coverage.append(_count(Coverage("generation", g, len(ids)), ids, gens))
    # Clips the plan made (a row that is not the plan's, e.g. another shard's, brings no work).
    generated = {i: r for i, r in sorted(gens.items()) if r.ok and i in planned}
    for d in plan.reported_detectors:  # fused detectors too: their rows are made after detection
        for condition in plan.conditions:
            ids = plan.detection_ids(d, condition, generated)
            coverage.append(_count(Coverage("detection", detector_label(d, condition), len(ids)), ids, dets))
    if plan.streamed:
        streams = read_records(run_dir / "streams.jsonl", StreamRecord)
        for d in plan.streamed:
            ids = plan.stream_ids(d, generated)
            coverage.append(_count(Coverage("stream", d, len(ids)), ids, streams))
    if plan.measures:
        ids = plan.measurement_ids(generated)
        coverage.append(_count(Coverage("measurement", "scorer", len(ids)), ids, meas))
    rows = [c.as_dict() for c in coverage]
    metrics = run_dir / "metrics"
    metrics_written = not (metrics / METRICS_WRITING).exists() and (
        (metrics / "detection_metrics.csv").exists() or (metrics / "generator_metrics.csv").exists()
    )
    shard = Shard.of_record(record)
    # A shard computes no metrics: the merge does, over the union.
    outcome = Outcome.of_coverage(rows, metrics_written or shard is not None)
    verdict = outcome.as_dict()
    if shard is not None:
        verdict["summary"] = shard.summary(outcome, run_dir)
    return {
        "run_dir": str(run_dir),
        "name": record.get("name"),
        "manifest_sha256": record["manifest"]["sha256"],
        "finished": "ended_at" in record,
        "shard": str(shard) if shard else None,
        "metrics_written": metrics_written,
        "coverage": rows,
        "complete": outcome.complete,  # every planned call done, none failed, metrics written
        "failed": sum(r["failed"] for r in rows),
        "outcome": verdict,
    }


def start_metrics(run_dir: Path) -> None:
    """Mark the metrics as being written: until ``write_coverage``, the run has no metrics."""
    (run_dir / "metrics" / METRICS_WRITING).touch()
    (run_dir / "metrics" / "coverage.json").unlink(missing_ok=True)


def write_coverage(run_dir: Path) -> Path:
    """``metrics/coverage.json``: whether the metrics beside it were computed on every planned row, and
    if not, what is missing by kind. The CSVs stay as they are; this file marks them complete or not
    (no path or time in it, so a complete run's metrics directory has the same bytes wherever it is)."""
    (run_dir / "metrics" / METRICS_WRITING).unlink(missing_ok=True)  # every table is written
    st = run_status(run_dir)
    coverage = {"format": "voxarena.coverage/1", **st["outcome"], "coverage": st["coverage"]}
    path = run_dir / "metrics" / "coverage.json"
    path.write_text(json.dumps(coverage, indent=1, sort_keys=True) + "\n")
    return path

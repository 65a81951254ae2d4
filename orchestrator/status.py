"""``orchestrator status RUN_DIR``: coverage of a run, per stage and per service.

The plan is rebuilt from the run's own records (the frozen manifest, the resolved config and the
tasks each generator declared in ``run.json``), so a run that stopped half-way shows what is still
pending: generation (generator x task x item, x I2D iteration for CLONE/CONVERT), detection (detector
x channel condition x every bona fide item and every generated clip) and measurement (every generated clip, when metrics are configured). A failure is a
row with its reason; identical reasons are counted together.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .config import ProtocolConfig
from .manifest import ManifestSet
from .run_store import CLEAN, read_jsonl, detection_id, detector_label, generation_id, iteration_of


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

    @property
    def pending(self) -> int:
        return self.expected - self.done - self.failed

    def as_dict(self) -> dict:
        return {"stage": self.stage, "service": self.service, "expected": self.expected, "done": self.done,
                "failed": self.failed, "pending": self.pending, "failure_reasons": dict(self.reasons.most_common())}


def _reason(row: dict) -> str:
    """A failure reason without the clip-specific prefix, so identical causes group together."""
    reason = row.get("reason", "") or row.get("code", "unknown")
    return re.sub(r"^\S*\|\S*:\s*", "", reason)[:200]


def _count(cov: Coverage, expected_ids: list[str], rows: dict[str, dict]) -> Coverage:
    for i in expected_ids:
        row = rows.get(i)
        if row is None:
            continue
        if row["status"] == "ok":
            cov.done += 1
        else:
            cov.failed += 1
            cov.reasons[_reason(row)] += 1
    return cov


def run_status(run_dir: Path) -> dict:
    record_path = run_dir / "run.json"
    if not record_path.exists() or not (run_dir / "manifest.jsonl").exists():
        raise NotARunDirectory(f"{run_dir}: not a run directory (no run.json and manifest.jsonl)")
    record = json.loads(record_path.read_text())
    cfg = record["config"]
    manifest = ManifestSet.from_file(run_dir / "manifest.jsonl")
    items = [it.id for it in manifest]                 # every corpus clip is scored, spoofs included
    sources = [it.id for it in manifest.bonafide()]    # generators take bona fide inputs only
    gens = read_jsonl(run_dir / "generations.jsonl")
    dets = read_jsonl(run_dir / "detections.jsonl")
    meas = read_jsonl(run_dir / "measurements.jsonl")
    coverage: list[Coverage] = []
    protocol = ProtocolConfig.model_validate(cfg["protocol"])
    for g in cfg["generators"]:
        declared = set(record.get("services", {}).get(g, {}).get("info", {}).get("tasks", []))
        ids = [generation_id(g, t, i, k) for t in cfg["protocol"]["tasks"] if t in declared for i in sources
               for k in range(1, protocol.depth(t) + 1)]
        coverage.append(_count(Coverage("generation", g, len(ids)), ids, gens))
    generated = sorted(i for i, r in gens.items() if r["status"] == "ok")
    one_shot = items + [i for i in generated if iteration_of(gens[i]) == 1]
    iterated = [i for i in generated if iteration_of(gens[i]) > 1]
    conditions = [CLEAN, *cfg.get("conditions", {})]
    for d in cfg["detectors"]:
        for condition in conditions:
            # I2D iterations beyond the first are scored on the clean channel only.
            clips = one_shot + iterated if condition == CLEAN else one_shot
            ids = [detection_id(d, condition, c) for c in clips]
            coverage.append(_count(Coverage("detection", detector_label(d, condition), len(ids)), ids, dets))
    if cfg["scorer"]["metrics"]:
        ids = generated
        coverage.append(_count(Coverage("measurement", "scorer", len(ids)), ids, meas))
    rows = [c.as_dict() for c in coverage]
    metrics_written = (run_dir / "metrics" / "detection_metrics.csv").exists() or \
        (run_dir / "metrics" / "generator_metrics.csv").exists()
    return {"run_dir": str(run_dir), "name": record.get("name"), "manifest_sha256": record["manifest"]["sha256"],
            "finished": "ended_at" in record, "metrics_written": metrics_written, "coverage": rows,
            "complete": all(r["pending"] == 0 for r in rows) and metrics_written,
            "failed": sum(r["failed"] for r in rows)}

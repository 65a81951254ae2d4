"""``orchestrator report RUN_DIR``: ``report.json`` and a single static ``report.html``.

The HTML needs no server, no internet and no script: the detector x generator EER heatmap is a
coloured table (one more per channel condition: the generator x condition x detector matrix), DET
curves are inline SVG on normal-deviate axes, Tippett plots and reliability curves too
(``calibration_plots``), I2D trajectories are inline SVG line plots, and the
rest are tables: generator metrics with confidence intervals and composite ranks, detector composite
ranks, per-label breakdowns, I2D aggregates, coverage and failures, and provenance (models,
licences, weights hashes, versions, manifest hash, scorer fingerprint). A run that is incomplete
(pending work, no metrics) is refused
unless ``allow_incomplete``; the report then says so at the top. A finished run with failed rows is
reported, with a banner at the top counting them by kind.

This module assembles the report's data (``report.json``); ``html`` renders the page.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from voxarena.orchestrator.metrics.fusion import recorded_calibration_items
from voxarena.orchestrator.report.attribution import attribution_data
from voxarena.orchestrator.report.calibration_plots import calibration_data
from voxarena.orchestrator.report.html import render_html
from voxarena.orchestrator.report.localisation import localisation_data
from voxarena.orchestrator.report.streaming import streaming_data
from voxarena.orchestrator.report.watermark import watermark_data
from voxarena.orchestrator.run.manifest import ManifestSet
from voxarena.orchestrator.run.status import run_status
from voxarena.orchestrator.store.outcome import Outcome
from voxarena.orchestrator.store.records import (
    DegradationRecord,
    DetectionRecord,
    GenerationRecord,
    MeasurementRecord,
    Row,
)
from voxarena.orchestrator.store.run_store import CLEAN, read_csv, read_records
from voxarena.stats import detection

# The tables whose failed rows the report lists, in its order.
TABLES: tuple[type[Row], ...] = (GenerationRecord, DetectionRecord, MeasurementRecord, DegradationRecord)


class ReportError(ValueError):
    pass


def det_curve(bona: list[float], spoof: list[float], max_points: int = 200) -> list[tuple[float, float]]:
    """(P_fa, P_miss) before the lowest score and after each distinct score (score >= threshold = accepted
    as bona fide): the stats core's DET curve at the thresholds between distinct scores, thinned to about
    ``max_points`` (the last point kept)."""
    if not bona or not spoof:
        return []
    miss, fa, thresholds = detection.det_curve(np.array(bona, float), np.array(spoof, float))
    scores = thresholds[1:]  # the trials' scores, sorted
    # The curve's points are where the threshold passes a score: after the last trial of each tied group.
    keep = np.concatenate([[True], scores[1:] != scores[:-1], [True]])
    points = list(zip(fa[keep].tolist(), miss[keep].tolist()))
    if len(points) > max_points:
        step = len(points) / max_points
        points = [points[int(k * step)] for k in range(max_points)] + [points[-1]]
    return points


def _problems(run_dir: Path, status: dict, allow_incomplete: bool) -> list[str]:
    """What keeps the report from being final; raises ReportError for an unfinished run unless
    ``allow_incomplete``."""
    problems = []
    if not status["metrics_written"]:
        problems.append("no metrics written (the run did not finish)")
    problems += [f"{r['stage']} {r['service']}: {r['pending']} pending" for r in status["coverage"] if r["pending"]]
    if problems and not allow_incomplete:
        raise ReportError(
            f"{run_dir}: incomplete run ({'; '.join(problems)}); finish it with `orchestrator run` "
            "(same config and --out) or pass --allow-incomplete to report it as such"
        )
    failed = Outcome.of_coverage(status["coverage"], metrics_written=True)
    if failed.failed:  # reported, never refused: the metrics are computed on what passed
        problems.append(f"{failed.counts()} rows, left out of the metrics")
    return problems


def _curves(run_dir: Path, record: dict) -> tuple[dict, dict]:
    """Per detector: its DET curve and calibration data, on the clean one-shot scores of the evaluation
    items (what the matrices measure: the calibration split left out)."""
    held_out = recorded_calibration_items(record, ManifestSet.from_file(run_dir / "manifest.jsonl"))
    detections = [
        r for r in read_records(run_dir / "detections.jsonl", DetectionRecord).values() if r.item not in held_out
    ]
    curves, calibration = {}, {}
    for d in record["config"]["detectors"]:
        ok = [r for r in detections if r.detector == d and r.ok and r.channel == CLEAN and r.i2d_iteration == 1]
        bona = [r.scored for r in ok if r.kind == "bonafide"]
        spoof = [r.scored for r in ok if r.kind == "spoof"]
        curves[d] = det_curve(bona, spoof)
        calibration[d] = calibration_data(bona, spoof)
    return curves, calibration


def _services(record: dict) -> dict:
    """Each service's identity as its GetInfo told it."""
    services = {}
    for name, svc in record.get("services", {}).items():
        model = svc.get("info", {}).get("model", {})
        services[name] = {
            "role": svc.get("role"),
            "address": svc.get("address"),
            "name": model.get("name"),
            "version": model.get("version"),
            "licence": model.get("licence"),
            "weights_sha256": model.get("weights_sha256", ""),
            "parameter_count": model.get("parameter_count"),
            "family": svc.get("info", {}).get("family"),
            "deterministic": model.get("deterministic", False),
        }
    return services


def _failures(run_dir: Path) -> list[dict]:
    """Every failed row of every table (the latest row per id: a retried failure is gone)."""
    failures = []
    for table in TABLES:
        for row in read_records(run_dir / table.TABLE, table).values():
            if not row.ok:
                failures.append(
                    {"table": table.TABLE, "id": row.id, "code": row.code or "", "reason": row.reason or ""}
                )
    return failures


def _provenance(record: dict, fingerprint: dict) -> dict:
    return {
        "manifest": record["manifest"],
        "seeds": record.get("seeds"),
        "versions": record.get("versions"),
        "git_commit": record.get("git_commit"),
        "stack": record.get("stack", "local"),
        "started_at": record.get("started_at"),
        "ended_at": record.get("ended_at"),
        "scorer_fingerprint": fingerprint.get("fingerprint", {}),
        "scorer_fingerprint_sha256_16": fingerprint.get("sha256_16"),
        "services": _services(record),
        "calibration_split": record.get("calibration_split"),
        "fusion": record.get("fusion"),
    }


def build_report(run_dir: Path, allow_incomplete: bool = False) -> dict:
    status = run_status(run_dir)  # raises NotARunDirectory
    problems = _problems(run_dir, status, allow_incomplete)
    record = json.loads((run_dir / "run.json").read_text())
    metrics = run_dir / "metrics"
    fingerprint = (
        json.loads((metrics / "fingerprint.json").read_text()) if (metrics / "fingerprint.json").exists() else {}
    )
    detection_rows = read_csv(metrics / "detection_metrics.csv")
    curves, calibration = _curves(run_dir, record)
    generators = record["config"]["generators"]
    return {
        "format": "voxarena.report/1",
        "run_dir": str(run_dir),
        "name": record.get("name"),
        "complete": not problems,
        "problems": problems,
        "outcome": status["outcome"],
        "provenance": _provenance(record, fingerprint),
        "generators": list(generators)
        + sorted({r["generator"] for r in detection_rows} - set(generators) - {"pooled"}),
        "detectors": list(record["config"]["detectors"]),
        "conditions": {CLEAN: [], **record["config"].get("conditions", {})},
        "i2d": record["config"]["protocol"].get("i2d"),
        "i2d_iterations": read_csv(metrics / "i2d_iterations.csv"),
        "i2d_aggregates": read_csv(metrics / "i2d_aggregates.csv"),
        "detection": detection_rows,
        "attacks": read_csv(metrics / "attack_metrics.csv"),
        "attack_transfer": read_csv(metrics / "attack_transfer.csv"),
        "localisation": localisation_data(run_dir),
        "streaming": streaming_data(run_dir),
        "attribution": attribution_data(run_dir),
        "watermark": watermark_data(run_dir),
        "detection_by_label": read_csv(metrics / "detection_by_label.csv"),
        "generation": read_csv(metrics / "generator_metrics.csv"),
        "generation_by_label": read_csv(metrics / "generator_metrics_by_label.csv"),
        "composite": read_csv(metrics / "composite_scores.csv"),
        "det_curves": {d: [[round(a, 6), round(b, 6)] for a, b in pts] for d, pts in curves.items()},
        "calibration": calibration,
        "coverage": status["coverage"],
        "failures": _failures(run_dir),
    }


def write_report(run_dir: Path, allow_incomplete: bool = False) -> tuple[Path, Path]:
    rep = build_report(run_dir, allow_incomplete)
    json_path, html_path = run_dir / "report.json", run_dir / "report.html"
    json_path.write_text(json.dumps(rep, indent=1, sort_keys=True) + "\n")
    html_path.write_text(render_html(rep))
    return json_path, html_path

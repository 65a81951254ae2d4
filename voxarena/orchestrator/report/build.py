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

from voxarena.orchestrator.metrics.fusion import recorded_calibration_items
from voxarena.orchestrator.report.calibration_plots import calibration_data
from voxarena.orchestrator.report.html import render_html
from voxarena.orchestrator.run.manifest import ManifestSet
from voxarena.orchestrator.run.status import run_status
from voxarena.orchestrator.store.outcome import Outcome
from voxarena.orchestrator.store.run_store import CLEAN, condition_of, iteration_of, read_csv, read_jsonl


class ReportError(ValueError):
    pass


def det_curve(bona: list[float], spoof: list[float], max_points: int = 200) -> list[tuple[float, float]]:
    """(P_fa, P_miss) at every threshold between sorted scores (score >= threshold = accepted as bona fide)."""
    scores = sorted([(s, 1) for s in bona] + [(s, 0) for s in spoof])
    nb, ns = len(bona), len(spoof)
    if not nb or not ns:
        return []
    points, miss, fa = [(1.0, 0.0)], 0, ns
    for i, (_, is_bona) in enumerate(scores):
        if is_bona:
            miss += 1
        else:
            fa -= 1
        if i + 1 == len(scores) or scores[i + 1][0] != scores[i][0]:
            points.append((fa / ns, miss / nb))
    if len(points) > max_points:
        step = len(points) / max_points
        points = [points[int(k * step)] for k in range(max_points)] + [points[-1]]
    return points


def build_report(run_dir: Path, allow_incomplete: bool = False) -> dict:
    status = run_status(run_dir)  # raises NotARunDirectory
    problems = []
    if not status["metrics_written"]:
        problems.append("no metrics written (the run did not finish)")
    pending = [f"{r['stage']} {r['service']}: {r['pending']} pending" for r in status["coverage"] if r["pending"]]
    problems += pending
    if problems and not allow_incomplete:
        raise ReportError(
            f"{run_dir}: incomplete run ({'; '.join(problems)}); finish it with `orchestrator run` "
            "(same config and --out) or pass --allow-incomplete to report it as such"
        )
    failed = Outcome.of_coverage(status["coverage"], metrics_written=True)
    if failed.failed:  # reported, never refused: the metrics are computed on what passed
        problems.append(f"{failed.counts()} rows, left out of the metrics")
    record = json.loads((run_dir / "run.json").read_text())
    metrics = run_dir / "metrics"
    fingerprint = (
        json.loads((metrics / "fingerprint.json").read_text()) if (metrics / "fingerprint.json").exists() else {}
    )
    # Curves are drawn on what the matrices measure: the evaluation items (the calibration split left out).
    held_out = recorded_calibration_items(record, ManifestSet.from_file(run_dir / "manifest.jsonl"))
    detections = [r for r in read_jsonl(run_dir / "detections.jsonl").values() if r.get("item") not in held_out]
    detection_rows = read_csv(metrics / "detection_metrics.csv")
    curves, calibration = {}, {}
    for d in record["config"]["detectors"]:
        ok = [
            r
            for r in detections
            if r["detector"] == d and r["status"] == "ok" and condition_of(r) == CLEAN and iteration_of(r) == 1
        ]
        bona, spoof = (
            [r["score"] for r in ok if r["kind"] == "bonafide"],
            [r["score"] for r in ok if r["kind"] == "spoof"],
        )
        curves[d] = det_curve(bona, spoof)
        calibration[d] = calibration_data(bona, spoof)
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
    failures = []
    for table in ("generations.jsonl", "detections.jsonl", "measurements.jsonl", "degradations.jsonl"):
        for row in read_jsonl(run_dir / table).values():  # the latest row per id: a retried failure is gone
            if row.get("status") != "ok":
                failures.append(
                    {"table": table, "id": row["id"], "code": row.get("code", ""), "reason": row.get("reason", "")}
                )
    return {
        "format": "voxarena.report/1",
        "run_dir": str(run_dir),
        "name": record.get("name"),
        "complete": not problems,
        "problems": problems,
        "outcome": status["outcome"],
        "provenance": {
            "manifest": record["manifest"],
            "seeds": record.get("seeds"),
            "versions": record.get("versions"),
            "git_commit": record.get("git_commit"),
            "stack": record.get("stack", "local"),
            "started_at": record.get("started_at"),
            "ended_at": record.get("ended_at"),
            "scorer_fingerprint": fingerprint.get("fingerprint", {}),
            "scorer_fingerprint_sha256_16": fingerprint.get("sha256_16"),
            "services": services,
            "calibration_split": record.get("calibration_split"),
            "fusion": record.get("fusion"),
        },
        "generators": list(record["config"]["generators"])
        + sorted({r["generator"] for r in detection_rows} - set(record["config"]["generators"]) - {"pooled"}),
        "detectors": list(record["config"]["detectors"]),
        "conditions": {CLEAN: [], **record["config"].get("conditions", {})},
        "i2d": record["config"]["protocol"].get("i2d"),
        "i2d_iterations": read_csv(metrics / "i2d_iterations.csv"),
        "i2d_aggregates": read_csv(metrics / "i2d_aggregates.csv"),
        "detection": detection_rows,
        "attacks": read_csv(metrics / "attack_metrics.csv"),
        "attack_transfer": read_csv(metrics / "attack_transfer.csv"),
        "detection_by_label": read_csv(metrics / "detection_by_label.csv"),
        "generation": read_csv(metrics / "generator_metrics.csv"),
        "generation_by_label": read_csv(metrics / "generator_metrics_by_label.csv"),
        "composite": read_csv(metrics / "composite_scores.csv"),
        "det_curves": {d: [[round(a, 6), round(b, 6)] for a, b in pts] for d, pts in curves.items()},
        "calibration": calibration,
        "coverage": status["coverage"],
        "failures": failures,
    }


def write_report(run_dir: Path, allow_incomplete: bool = False) -> tuple[Path, Path]:
    rep = build_report(run_dir, allow_incomplete)
    json_path, html_path = run_dir / "report.json", run_dir / "report.html"
    json_path.write_text(json.dumps(rep, indent=1, sort_keys=True) + "\n")
    html_path.write_text(render_html(rep))
    return json_path, html_path

"""Turns the stored records into ``metrics/*.csv`` through the scorer service.

Detection metrics are computed once per trial set over pooled scores (never averaged per item):
one row per detector x generator (that generator's spoofs against all bona fide clips) and one row
per detector with generator ``pooled`` (all spoofs). Rows are sorted and floats printed with full
precision, so the same records always give the same bytes.
"""
from __future__ import annotations

import csv
import io
import math

from voxarena.v1 import scorer_pb2

from .manifest import ManifestSet
from .run_store import RunStore

DETECTION_COLUMNS = ["detector", "generator", "n_bonafide", "n_spoof", "eer", "min_dcf", "act_dcf", "cllr", "min_cllr",
                     "scores_are_llr", "n_failed"]
POOLED = "pooled"


def _fmt(v) -> str:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else repr(round(v, 10))
    return str(v)


def _write_csv(path, columns: list[str], rows: list[dict]) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([_fmt(r.get(c, "")) for c in columns])
    tmp = path.with_suffix(".tmp")
    tmp.write_text(buf.getvalue())
    tmp.replace(path)


def detection_rows(store: RunStore, scorer, generators: list[str], detectors: list[str]) -> list[dict]:
    dets = store.detections.sorted_rows()
    sets, meta = [], []
    for d in detectors:
        mine = [r for r in dets if r["detector"] == d]
        ok = [r for r in mine if r["status"] == "ok"]
        bona = [r["score"] for r in ok if r["kind"] == "bonafide"]
        llr = bool(ok) and all(r.get("is_llr") for r in ok)
        for g in generators + [POOLED]:
            spoof = [r["score"] for r in ok if r["kind"] == "spoof" and (g == POOLED or r["generator"] == g)]
            failed = sum(1 for r in mine if r["status"] != "ok" and (g == POOLED or r["generator"] in (g, "bonafide")))
            meta.append({"detector": d, "generator": g, "n_bonafide": len(bona), "n_spoof": len(spoof),
                         "scores_are_llr": llr, "n_failed": failed})
            if bona and spoof:
                sets.append(scorer_pb2.TrialSet(name=f"{d}|{g}", bonafide_scores=bona, spoof_scores=spoof))
    results = {}
    if sets:
        resp, _ = scorer.call("DetectionMetrics", scorer_pb2.DetectionMetricsRequest(sets=sets))
        results = {s.name: s for s in resp.sets}
    rows = []
    for m in meta:
        s = results.get(f"{m['detector']}|{m['generator']}")
        for k in ("eer", "min_dcf", "act_dcf", "cllr", "min_cllr"):
            m[k] = getattr(s, k) if s is not None else math.nan
        rows.append(m)
    return rows


def generator_rows(store: RunStore, scorer, generators: list[str], metric_names: list[str]) -> list[dict]:
    gens = store.generations.sorted_rows()
    meas = {r["id"]: r for r in store.measurements.sorted_rows() if r["status"] == "ok"}
    groups = []
    for g in generators:
        clips = [scorer_pb2.ClipMeasurement(request_id=r["id"], values=meas[r["id"]]["values"], errors=meas[r["id"]]["errors"])
                 for r in gens if r["generator"] == g and r["id"] in meas]
        groups.append(scorer_pb2.MeasurementGroup(name=g, clips=clips))
    resp, _ = scorer.call("Aggregate", scorer_pb2.AggregateRequest(metrics=metric_names, groups=groups))
    by_name = {gm.name: gm for gm in resp.groups}
    rows = []
    for g in generators:
        mine = [r for r in gens if r["generator"] == g]
        row = {"generator": g, "n_ok": sum(r["status"] == "ok" for r in mine),
               "n_failed": sum(r["status"] != "ok" for r in mine)}
        for name in metric_names:
            row[name] = by_name[g].values[name]
            row[f"n_{name}"] = by_name[g].counts[name]
        rows.append(row)
    return rows


def write_metrics(store: RunStore, scorer, manifest: ManifestSet, generators: list[str], detectors: list[str],
                  metric_names: list[str]) -> tuple[list[dict], list[dict]]:
    det = detection_rows(store, scorer, generators, detectors)
    _write_csv(store.metrics_dir / "detection_metrics.csv", DETECTION_COLUMNS, det)
    gen = generator_rows(store, scorer, generators, list(metric_names))
    columns = ["generator", "n_ok", "n_failed"] + list(metric_names) + [f"n_{m}" for m in metric_names]
    _write_csv(store.metrics_dir / "generator_metrics.csv", columns, gen)
    return det, gen

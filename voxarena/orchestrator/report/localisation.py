"""The report's localisation section (runs with partial fakes): ``metrics/localisation.csv`` as a table with
its intervals, and a timeline of a few partial fakes: the waveform, the true fake spans (red), and each
detector's segment scores against its utterance EER threshold (dashed; below it = called fake)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import soundfile as sf

from voxarena.orchestrator.report.tables import esc, html_table, num
from voxarena.orchestrator.store.run_store import CLEAN, read_csv
from voxarena.stats.detection import eer

TIMELINES = 3  # partial fakes shown, one per method first
ENVELOPE_POINTS = 300
LABEL_W = 190  # the lane names' column, px
COLUMNS = ["eer_utt", "seg_eer_20ms", "seg_eer_160ms", "seg_eer_640ms", "range_eer", "precision", "recall", "iou"]


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def localisation_data(run_dir: Path) -> dict:
    """The table and the timelines' data (an empty dict when the run made no partial fakes)."""
    table = read_csv(run_dir / "metrics" / "localisation.csv")
    if not table:
        return {}
    gens = {g["id"]: g for g in _rows(run_dir / "generations.jsonl") if g.get("status") == "ok" and g.get("partial")}
    dets = [d for d in _rows(run_dir / "detections.jsonl") if d.get("status") == "ok" and d.get("segments")]
    dets = [d for d in dets if d.get("condition", CLEAN) == CLEAN]
    thresholds = {}
    for detector in sorted({d["detector"] for d in dets}):
        bona = [d["score"] for d in dets if d["detector"] == detector and d["kind"] == "bonafide"]
        fakes = [d["score"] for d in dets if d["detector"] == detector and d["clip"] in gens]
        if bona and fakes:
            thresholds[detector] = eer(np.array(bona), np.array(fakes))[1]
    chosen: list[dict] = []
    for method in ("vocoded", "words"):  # one of each first, then the next ones in id order
        chosen += [g for g in gens.values() if g["partial"]["method"] == method][:1]
    chosen += [g for g in gens.values() if g not in chosen][: max(0, TIMELINES - len(chosen))]
    timelines = []
    for g in chosen[:TIMELINES]:
        x, rate = sf.read(run_dir / g["audio"], dtype="float32")
        blocks = np.array_split(np.abs(x) / max(float(np.abs(x).max()), 1e-9), min(ENVELOPE_POINTS, x.size))
        timelines.append(
            {
                "clip": g["id"],
                "seconds": x.size / rate,
                "envelope": [round(float(b.max()), 4) for b in blocks],
                "spans": [[s["start_seconds"], s["end_seconds"]] for s in g["partial"]["spans"]],
                "detectors": {
                    d["detector"]: {**d["segments"], "threshold": thresholds.get(d["detector"])}
                    for d in dets
                    if d["clip"] == g["id"]
                },
            }
        )
    return {"table": table, "timelines": timelines}


def _timeline_svg(t: dict, w: int = 820, wave_h: int = 60, lane_h: int = 50, pad: int = 4) -> str:
    lanes = sorted(t["detectors"])
    h = wave_h + lane_h * len(lanes) + pad * (len(lanes) + 2)
    sx = (w - LABEL_W) / max(t["seconds"], 1e-9)
    parts = [f"<svg width='{w}' height='{h}' role='img' aria-label='timeline of {esc(t['clip'])}'>"]
    for a, b in t["spans"]:  # the true fake spans, across every lane
        parts.append(
            f"<rect x='{LABEL_W + a * sx:.1f}' y='0' width='{max((b - a) * sx, 1):.1f}' height='{h}' fill='#f6c6c6'/>"
        )
    env, mid = t["envelope"], pad + wave_h / 2
    step = (w - LABEL_W) / max(len(env), 1)
    points = " ".join(f"{LABEL_W + i * step:.1f},{mid - v * wave_h / 2:.1f}" for i, v in enumerate(env))
    points += " " + " ".join(
        f"{LABEL_W + i * step:.1f},{mid + v * wave_h / 2:.1f}" for i, v in reversed(list(enumerate(env)))
    )
    parts.append(f"<text x='0' y='{mid:.0f}' font-size='11'>waveform</text><polygon points='{points}' fill='#888'/>")
    for k, name in enumerate(lanes):
        d = t["detectors"][name]
        top = pad * (k + 2) + wave_h + lane_h * k
        scores = np.asarray(d["scores"], dtype=float)
        threshold = d.get("threshold")
        # The lane spans the 2nd..98th percentile of the scores and the threshold (an outlier is drawn at its edge).
        lo, hi = (float(v) for v in np.percentile(scores, [2, 98]))
        if threshold is not None:
            lo, hi = min(lo, threshold), max(hi, threshold)
        scores = np.clip(scores, lo, hi)
        span = hi - lo or 1.0

        def y(v: float, top: int = top, lo: float = lo, span: float = span) -> float:
            return top + lane_h - (v - lo) / span * lane_h

        hop = d["hop_seconds"]
        line = " ".join(
            f"{LABEL_W + i * hop * sx:.1f},{y(v):.1f} {LABEL_W + min((i + 1) * hop, t['seconds']) * sx:.1f},{y(v):.1f}"
            for i, v in enumerate(scores)
        )
        parts.append(f"<text x='0' y='{top + lane_h / 2:.0f}' font-size='11'>{esc(name)} ({esc(d['source'])})</text>")
        parts.append(f"<polyline points='{line}' fill='none' stroke='#1f5fa8' stroke-width='1.2'/>")
        if threshold is not None:
            at = f"{y(threshold):.1f}"
            parts.append(f"<line x1='{LABEL_W}' x2='{w}' y1='{at}' y2='{at}' stroke='#333' stroke-dasharray='4 3'/>")
    parts.append("</svg>")
    return "".join(parts)


def localisation_section(rep: dict) -> str:
    data = rep.get("localisation") or {}
    if not data:
        return ""
    rows = []
    for r in data["table"]:
        row = {c: r[c] for c in ("detector", "method", "segments", "n_bonafide", "n_partial")}
        row["fake fraction"] = num(r["mean_fake_fraction"])
        for c in COLUMNS:
            ci = f" [{num(r[c + '_ci_low'])}, {num(r[c + '_ci_high'])}]" if r.get(c + "_ci_low") else ""
            row[c] = num(r[c]) + ci
        rows.append(row)
    columns = ["detector", "method", "segments", "n_bonafide", "n_partial", "fake fraction", *COLUMNS]
    timelines = "".join(f"<h3>{esc(t['clip'])}</h3>" + _timeline_svg(t) for t in data.get("timelines", []))
    return (
        "<h2>Localisation (partial fakes)</h2><p class='small'>Partial fakes: bona fide clips with word spans "
        "vocoded or replaced by new words. eer_utt: utterance EER against the bona fide clips; seg_eer: "
        "segment EER at 20/160/640 ms (a segment is fake if any of its samples is); range_eer: duration-"
        "weighted, no resolution; precision/recall/iou: of the time scored below the utterance EER threshold "
        "against the true fake time. Segments: the detector's own (native) or sliding windows. 95% speaker-"
        "bootstrap intervals in brackets; metrics/localisation.csv has every resolution and fake-fraction bin.</p>"
        + html_table(rows, columns, left=3, table_id="localisation")
        + "<p class='small'>Timelines: waveform, true fake spans (red), each detector's segment scores (higher = "
        "more bona fide) and its utterance EER threshold (dashed).</p>" + timelines
    )

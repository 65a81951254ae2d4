"""The report's streaming section (runs with ``protocol.streaming``): ``metrics/streaming.csv`` as a table
with its intervals, and the EER-vs-seconds chart: each detector's pooled EER after 0.5, 1, 2 and 4 s of
audio and after the whole clip, with the 95 % intervals where the table has them."""

from __future__ import annotations

import math
from pathlib import Path

from voxarena.orchestrator.report.tables import as_float, esc, html_table, num
from voxarena.orchestrator.store.run_store import read_csv
from voxarena.stats.streaming import HORIZONS

POINTS = [f"eer_{round(t * 1000)}ms" for t in HORIZONS] + ["eer_final"]
LABELS = [f"{t:g} s" for t in HORIZONS] + ["whole"]
COLORS = ("#1f5fa8", "#c0392b", "#27ae60", "#8e44ad", "#d68910", "#555")


def streaming_data(run_dir: Path) -> list[dict]:
    return read_csv(run_dir / "metrics" / "streaming.csv")


def _chart(rows: list[dict], w: int = 560, h: int = 250, left: int = 44, bottom: int = 44, right: int = 30) -> str:
    pooled = [r for r in rows if r["generator"] == "pooled"]
    if not pooled:
        return ""
    top = max([0.5] + [as_float(r[c]) for r in pooled for c in POINTS if not math.isnan(as_float(r[c]))])
    top = math.ceil(top * 10) / 10
    sx = (w - left - right) / (len(POINTS) - 1)

    def y(v: float) -> float:
        return 8 + (h - bottom - 8) * (1 - v / top)

    parts = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' role='img' "
        "aria-label='EER after t seconds of audio'>"
    ]
    for k in range(0, round(top * 10) + 1, 1 if top <= 0.5 else 2):
        v = k / 10
        parts.append(f"<line x1='{left}' x2='{w - right}' y1='{y(v):.1f}' y2='{y(v):.1f}' stroke='#ddd'/>")
        parts.append(f"<text x='{left - 4}' y='{y(v) + 4:.1f}' font-size='10' text-anchor='end'>{v * 100:.0f}%</text>")
    for i, label in enumerate(LABELS):
        parts.append(f"<text x='{left + i * sx:.1f}' y='{h - 28}' font-size='10' text-anchor='middle'>{label}</text>")
    for k, r in enumerate(pooled):
        color = COLORS[k % len(COLORS)]
        pts = [(left + i * sx, as_float(r[c])) for i, c in enumerate(POINTS)]
        line = " ".join(f"{x:.1f},{y(v):.1f}" for x, v in pts if not math.isnan(v))
        parts.append(f"<polyline points='{line}' fill='none' stroke='{color}' stroke-width='2'/>")
        for i, c in enumerate(POINTS):
            lo, hi = as_float(r.get(f"{c}_ci_low", "")), as_float(r.get(f"{c}_ci_high", ""))
            if not (math.isnan(lo) or math.isnan(hi)):
                x = left + i * sx + 4 * (k - (len(pooled) - 1) / 2)  # side by side, not on top of each other
                parts.append(f"<line x1='{x:.1f}' x2='{x:.1f}' y1='{y(lo):.1f}' y2='{y(hi):.1f}' stroke='{color}'/>")
        parts.append(
            f"<text x='{left + 130 * k}' y='{h - 6}' font-size='11' fill='{color}'>&#9644; {esc(r['detector'])}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def streaming_section(rep: dict) -> str:
    rows = rep.get("streaming") or []
    if not rows:
        return ""
    table = []
    for r in rows:
        row = {c: r[c] for c in ("detector", "generator", "n_bonafide", "n_spoof")}
        for c, label in zip(POINTS, LABELS):
            ci = f" [{num(r[c + '_ci_low'])}, {num(r[c + '_ci_high'])}]" if r.get(c + "_ci_low") else ""
            row[f"EER {label}"] = num(r[c]) + ci
        row["detected 2 s"] = num(r["detected_2000ms"])
        row["median TTD s"] = num(r["median_ttd_seconds"])
        row["FA 4 s"] = num(r["false_alarm_4000ms"])
        row["latency p50/p95/p99 ms"] = "/".join(
            "—"
            if math.isnan(as_float(r[f"latency_{p}_seconds"]))
            else f"{as_float(r[f'latency_{p}_seconds']) * 1000:.0f}"
            for p in ("p50", "p95", "p99")
        )
        row["RTF"] = num(r["rtf"])
        table.append(row)
    columns = list(table[0])
    first = rows[0]
    return (
        "<h2>Streaming: how soon a detector knows</h2><p class='small'>"
        f"Every clip streamed in {esc(first['chunk_seconds'])} s chunks ({esc(first['pacing'])} pacing). "
        "EER after t seconds of audio (a stream's latest running score by then; the final score once the clip "
        "ended); detected 2 s: fakes below the detector's whole-clip EER threshold within 2 s of their onset; "
        "median TTD: time to detect of the fakes flagged; FA 4 s: bona fide streams flagged by 4 s; latency: "
        "chunk sent to score arrived (real-time pacing only). 95% speaker-bootstrap intervals in brackets; "
        "metrics/streaming.csv has every horizon.</p>"
        + _chart(rows)
        + html_table(table, columns, left=2, table_id="streaming")
    )

"""The report's watermark section (runs with a watermark detector): the survival heatmap, one per watermark
detector: rows are the generators (watermarked ones first), columns the channel conditions; a cell is the share
of the generator's clips the detector flags as marked at a 1 % false-alarm rate on bona fide speech (green:
the mark survives, red: it is gone; for an unmarked generator, a false alarm) with, under it, the best
fake-voice detector's EER on the same clips. The full table (intervals, thresholds) follows."""

from __future__ import annotations

from pathlib import Path

from voxarena.orchestrator.report.tables import PALETTE, as_float, esc, html_table, num
from voxarena.orchestrator.store.run_store import read_csv

CM_STYLE = "font-size:11px;font-weight:400;color:#111"  # legible on every shade
COLUMNS = ["detector", "generator", "condition", "watermarked", "n_clips", "false_alarm", "flagged", "eer"]


def watermark_data(run_dir: Path) -> dict:
    return {
        "survival": read_csv(run_dir / "metrics" / "watermark_survival.csv"),
        "cost": read_csv(run_dir / "metrics" / "watermark_cost.csv"),
    }


def _colour(flagged: float, marked: bool) -> str:
    """Green when a mark is found (or an unmarked clip is not flagged), red when not."""
    good = flagged if marked else 1 - flagged
    if good != good:  # nan
        return "#eee"
    return PALETTE[min(len(PALETTE) - 1, int((1 - good) * len(PALETTE)))]


def survival_heatmap(detector: str, rows: list[dict]) -> str:
    conditions = list(dict.fromkeys(r["condition"] for r in rows))
    generators = sorted({r["generator"] for r in rows}, key=lambda g: (not _marked(rows, g), g))
    cell = {(r["generator"], r["condition"]): r for r in rows}
    out = [f"<table class='heat' aria-label='watermark survival {esc(detector)}'><tr><th class='l'>generator</th>"]
    out += [f"<th>{esc(c)}</th>" for c in conditions] + ["</tr>"]
    for g in generators:
        marked = _marked(rows, g)
        out.append(f"<tr><th class='l'>{esc(g)}{' (marked)' if marked else ''}</th>")
        for c in conditions:
            r = cell.get((g, c))
            if r is None:
                out.append("<td class='c'>—</td>")
                continue
            flagged = as_float(r["flagged"])
            ci = f" [{num(r['flagged_ci_low'], 2)}, {num(r['flagged_ci_high'], 2)}]" if r.get("flagged_ci_low") else ""
            cm = (
                f"<br><span style='{CM_STYLE}'>{esc(r['cm_detector'])} EER {num(r['cm_eer'], 2)}</span>"
                if r["cm_detector"]
                else ""
            )
            out.append(
                f"<td class='c' style='background:{_colour(flagged, marked)}' title='flagged {num(flagged)}{ci}'>"
                f"{num(100 * flagged, 3)} %{cm}</td>"
            )
        out.append("</tr>")
    return "".join(out) + "</table>"


def _marked(rows: list[dict], generator: str) -> bool:
    return any(r["generator"] == generator and r["watermarked"] == "yes" for r in rows)


def watermark_section(rep: dict) -> str:
    data = rep.get("watermark") or {}
    rows = data.get("survival") or []
    if not rows:
        return ""
    maps = []
    for detector in sorted({r["detector"] for r in rows}):
        mine = [r for r in rows if r["detector"] == detector]
        maps.append(f"<h3>{esc(detector)}</h3>" + survival_heatmap(detector, mine))
    table = []
    for r in rows:
        row = {c: r[c] for c in COLUMNS[:5]}
        row["false_alarm"] = num(r["false_alarm"])
        for c in ("flagged", "eer"):
            ci = f" [{num(r[c + '_ci_low'])}, {num(r[c + '_ci_high'])}]" if r.get(c + "_ci_low") else ""
            row[c] = num(r[c]) + ci
        row["best fake-voice detector"] = f"{r['cm_detector']} {num(r['cm_eer'])}" if r["cm_detector"] else "—"
        table.append(row)
    return (
        "<h2>Watermark survival</h2><p class='small'>Each cell: the share of the generator's clips the watermark "
        "detector flags as marked, at the threshold where it flags 1 % of the bona fide clips (under the same "
        "condition): for a marked generator the detection rate (green: the mark survives), for an unmarked one a "
        "false alarm. Under it, the fake-voice detector with the lowest EER on the same clips. 95% "
        "speaker-bootstrap intervals in the table.</p>"
        + "".join(maps)
        + html_table(table, [*COLUMNS, "best fake-voice detector"], left=4, table_id="watermark")
        + _cost(data.get("cost") or [])
    )


def _cost(rows: list[dict]) -> str:
    if not rows:
        return ""
    columns = [c for c in rows[0] if not c.endswith(("_ci_low", "_ci_high"))]
    table = [
        {
            c: (num(r[c]) + (f" [{num(r[c + '_ci_low'])}, {num(r[c + '_ci_high'])}]" if r.get(c + "_ci_low") else ""))
            if c not in ("generator", "watermark", "n_clips")
            else r[c]
            for c in columns
        }
        for r in rows
    ]
    return (
        "<h3>What the mark costs</h3><p class='small'>Measured by the run's scorer on every marked clip against the "
        "unmarked one the run keeps: PESQ and STOI with the unmarked clip as reference, SIM between them, DNSMOS of "
        "both (unmarked_ columns).</p>" + html_table(table, columns, left=2, table_id="watermark-cost")
    )

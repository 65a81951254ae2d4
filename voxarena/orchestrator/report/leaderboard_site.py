"""The leaderboard as a static site (``orchestrator leaderboard RUN... --out SITE/``): no server, no internet.

``index.html``: the newest run's detector x generator EER matrix (95% CI, rank in the column; a cell not
fully measured shows its coverage and no rank), the detectors' and generators' overall ranks with the
refusals, the confirmed changes, the detectors' half-life charts, the series' runs and the runs listed
apart. ``cells/DETECTOR__GENERATOR.html``: one cell's history across the series, a chart and a table with
what changed in the two services. The numbers and rules are ``leaderboard``'s.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from voxarena.orchestrator.report.html import CSS
from voxarena.orchestrator.report.leaderboard import POOLED, Cell, Leaderboard, RunEntry, service_changes
from voxarena.orchestrator.report.tables import esc, heat_colour, html_table

EXTRA_CSS = ".unranked{background:#eee;color:#555;font-weight:400}.confirmed{font-weight:700;color:#b00}sup{color:#333}"


def pct(x: float) -> str:
    return "—" if math.isnan(x) else f"{100 * x:.1f}"


def cell_text(cell: Cell) -> str:
    return f"{pct(cell.eer)} [{pct(cell.low)}, {pct(cell.high)}]"


def cell_page(detector: str, generator: str) -> str:
    return "cells/" + re.sub(r"[^A-Za-z0-9_.-]", "_", f"{detector}__{generator}") + ".html"


def _page(title: str, body: list[str], up: str = "") -> str:
    return (
        f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{esc(title)}</title>"
        f"<style>{CSS}{EXTRA_CSS}</style></head><body>{up}<h1>{esc(title)}</h1>" + "".join(body) + "</body></html>"
    )


def _matrix(lb: Leaderboard) -> str:
    latest = lb.latest
    out = ['<table class="heat" id="matrix"><tr><th class="l">generator \\ detector</th>']
    out += [f"<th>{esc(d)}</th>" for d in latest.detectors] + ["</tr>"]
    for g in [*latest.generators, POOLED]:
        column = lb.column_ranks(g)
        out.append(f'<tr><th class="l">{esc(g)}</th>')
        for d in latest.detectors:
            cell = latest.cells[(d, g)]
            link = f'<a href="{esc(cell_page(d, g))}">{cell_text(cell)}</a>'
            if cell.measured:
                rank = f"<sup>#{column[d]}</sup>" if g != POOLED else ""
                out.append(
                    f'<td class="c" data-detector="{esc(d)}" data-generator="{esc(g)}" data-rank="{column.get(d, "")}" '
                    f'style="background:{heat_colour(cell.eer)}">{link}{rank}</td>'
                )
            else:
                out.append(
                    f'<td class="c unranked" data-detector="{esc(d)}" data-generator="{esc(g)}" data-rank="" '
                    f'title="not ranked">{link}<br><span class="small">not ranked: {esc(cell.coverage)}</span></td>'
                )
        out.append("</tr>")
    return "".join(out) + "</table>"


def _rank_table(table_id: str, what: str, ranked: tuple[dict, dict, dict], order: list[str]) -> str:
    rank, means, refused = ranked
    rows = [
        {what: n, "rank": rank[n], "mean EER %": pct(means[n])} if n in rank else {what: n, "rank": refused[n]}
        for n in sorted(order, key=lambda n: (n not in rank, rank.get(n, 0), n))
    ]
    return html_table(rows, [what, "rank", "mean EER %"], table_id=table_id)


def _changes(lb: Leaderboard) -> str:
    rows = []
    latest = lb.latest
    for d in latest.detectors:
        for g in latest.generators:
            for h in lb.history(d, g):
                if h["changes"] or h["confirmed"]:
                    rows.append(
                        {
                            "run": f"{h['run'].path.name} ({h['run'].started[:16].replace('T', ' ')})",
                            "cell": f"{d} x {g}",
                            "EER % [CI]": cell_text(h["cell"]),
                            "changed": "; ".join(h["changes"]) or "nothing in these services",
                            "CIs apart": "confirmed" if h["confirmed"] else "no",
                        }
                    )
    rows.sort(key=lambda r: r["CIs apart"] != "confirmed")  # the confirmed ones first, each group in run order
    return html_table(rows, ["run", "cell", "EER % [CI]", "changed", "CIs apart"], left=4, table_id="changes")


def _svg_points(points: list[tuple[str, float, float, float]], title: str, svg_id: str) -> str:
    """Labelled points with CI bars: (x label, EER, low, high), x in the given order; y from 0 to 60 %. A label
    may have two lines."""
    n = max(len(points), 1)
    w, h, left, bottom, top = max(640, 44 + 120 * n), 240, 44, 40, 16
    xs = [left + (k + 0.5) * (w - left - 10) / n for k in range(n)]

    def y(v: float) -> float:
        return top + (1 - min(max(v, 0.0), 0.6) / 0.6) * (h - top - bottom)

    out = [f'<svg id="{esc(svg_id)}" width="{w}" height="{h}" role="img" aria-label="{esc(title)}">']
    for t in (0.0, 0.1, 0.2, 0.3, 0.4, 0.5):
        out.append(f'<line x1="{left}" x2="{w - 10}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#eee"/>')
        out.append(f'<text x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{int(t * 100)}</text>')
    poly = []
    for x, (label, eer, low, high) in zip(xs, points):
        if not math.isnan(eer):
            if not (math.isnan(low) or math.isnan(high)):
                out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y(low):.1f}" y2="{y(high):.1f}" stroke="#888"/>')
            out.append(f'<circle cx="{x:.1f}" cy="{y(eer):.1f}" r="4" fill="#d73027"><title>{esc(label)}: '
                       f"{pct(eer)} %</title></circle>")  # fmt: skip
            poly.append(f"{x:.1f},{y(eer):.1f}")
        lines = label.split("\n")[:2]
        for k, line in enumerate(lines):
            out.append(f'<text x="{x:.1f}" y="{h - bottom + 14 + 12 * k}" text-anchor="middle">{esc(line[:28])}</text>')
    if len(poly) > 1:
        out.append(f'<polyline points="{" ".join(poly)}" fill="none" stroke="#d73027" stroke-opacity=".4"/>')
    out.append(f'<text x="{left}" y="11">{esc(title)} (EER %, 95% CI)</text></svg>')
    return "".join(out)


def _half_life(lb: Leaderboard) -> list[str]:
    joined, latest = lb.joined(), lb.latest
    order = sorted(latest.generators, key=lambda g: (joined[g], g))
    out = [
        "<h2 id='half-life'>Detector half-life</h2><p class='small'>Each detector's EER in the newest run on each "
        "generator, generators in the order they joined the arena (under each, the UTC date and time of its "
        "first run here).</p>"
    ]
    for d in latest.detectors:
        cells = [(g, latest.cells[(d, g)]) for g in order]
        points = [(f"{g}\n{joined[g][5:16].replace('T', ' ')}", c.eer, c.low, c.high) for g, c in cells]
        out.append(_svg_points(points, d, f"half-life-{d}"))
    return out


def _runs(lb: Leaderboard) -> str:
    rows: list[dict] = []
    previous: RunEntry | None = None
    for run in lb.series:
        changed: list[str] = []
        if previous is not None:
            for name in sorted(set(run.record.get("services", {})) & set(previous.record.get("services", {}))):
                changed += service_changes(previous, run, name)
        rows.append(
            {
                "started": run.started[:19],
                "run": run.path.name,
                "config name": run.name,
                "generators": len(run.generators),
                "detectors": len(run.detectors),
                "changed since the run before": "; ".join(changed) or "—",
            }
        )
        previous = run
    return html_table(rows, list(rows[0]), left=3, table_id="runs")


def render_index(lb: Leaderboard) -> str:
    latest = lb.latest
    body = [
        f"<p>{len(lb.series)} runs of one protocol, {lb.series[0].started[:19]} to {latest.started[:19]} (UTC); "
        f"the newest, <code>{esc(latest.name)}</code> ({esc(str(latest.path))}), is shown. EER % with its 95% "
        "speaker-bootstrap CI, clean condition; <sup>#k</sup> its rank in the row's generator column; a cell "
        "not fully measured is not ranked. Click a cell for its history.</p>",
        "<h2>Detector x generator, newest run</h2>",
        _matrix(lb),
        "<h2>Detectors (lower mean EER is better)</h2>",
        _rank_table("detector-ranks", "detector", lb.detector_ranks(), latest.detectors),
        "<h2>Generators (higher mean EER is harder to detect)</h2>",
        _rank_table("generator-ranks", "generator", lb.generator_ranks(), latest.generators),
        "<h2>Changes across the series</h2><p class='small'>Each run in which a cell's detector or generator "
        "service changed (version, weights, calibration, image) or its EER moved with CIs apart.</p>",
        _changes(lb),
        *_half_life(lb),
        "<h2>Runs of the series</h2>",
        _runs(lb),
        "<h2>Runs listed apart (another protocol)</h2>",
        html_table(
            [
                {"run": r.name, "started": r.started[:19], "directory": str(r.path), "differs": "; ".join(d)}
                for r, d in lb.apart
            ],
            ["run", "started", "directory", "differs"],
            left=4,
            table_id="apart",
        ),  # fmt: skip
    ]
    return _page("VoxArena leaderboard", body)


def render_cell(lb: Leaderboard, detector: str, generator: str) -> str:
    history = lb.history(detector, generator)
    points = [(h["run"].started[5:16].replace("T", " "), h["cell"].eer, h["cell"].low, h["cell"].high) for h in history]
    rows = [
        {
            "started": h["run"].started[:19],
            "run": h["run"].name,
            "EER % [95% CI]": cell_text(h["cell"]),
            "coverage": h["cell"].coverage + ("" if h["cell"].measured else " (not ranked)"),
            "changed since the run before": "; ".join(h["changes"]) or "—",
            "CIs apart": "confirmed" if h["confirmed"] else "",
        }
        for h in history
    ]
    body = [
        _svg_points(points, f"{detector} on {generator}", "history"),
        html_table(rows, list(rows[0]) if rows else ["run"], left=2, table_id="history"),
    ]
    return _page(f"{detector} on {generator}", body, up='<p><a href="../index.html">leaderboard</a></p>')


def write_site(lb: Leaderboard, out: Path) -> Path:
    """Write the site under ``out``; returns index.html's path."""
    (out / "cells").mkdir(parents=True, exist_ok=True)
    latest: RunEntry = lb.latest
    for d in latest.detectors:
        for g in [*latest.generators, POOLED]:
            (out / cell_page(d, g)).write_text(render_cell(lb, d, g))
    index = out / "index.html"
    index.write_text(render_index(lb))
    return index

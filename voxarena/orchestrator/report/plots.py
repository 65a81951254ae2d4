"""The report's line plots as inline SVG: DET curves on normal-deviate axes and I2D trajectories.

(The calibration plots, Tippett and reliability, are in ``calibration_plots``.)
"""

from __future__ import annotations

import math
from statistics import NormalDist

from voxarena.orchestrator.report.tables import as_float, esc, html_table, num


def det_svg(rep: dict) -> str:
    nd = NormalDist()
    lo, hi = nd.inv_cdf(0.001), nd.inv_cdf(0.6)
    w, h, pad = 460, 380, 45
    colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f"]

    def xy(p_fa: float, p_miss: float) -> tuple[float, float]:
        clip = lambda p: min(max(p, 0.001), 0.6)  # noqa: E731
        x = pad + (nd.inv_cdf(clip(p_fa)) - lo) / (hi - lo) * (w - 2 * pad)
        y = h - pad - (nd.inv_cdf(clip(p_miss)) - lo) / (hi - lo) * (h - 2 * pad)
        return x, y

    parts = [
        f'<svg id="det-curves" width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg" role="img">',
        f'<rect x="{pad}" y="{pad}" width="{w - 2 * pad}" height="{h - 2 * pad}" fill="none" stroke="#999"/>',
    ]
    for tick in (0.001, 0.01, 0.05, 0.2, 0.4):
        x, _ = xy(tick, 0.001)
        _, y = xy(0.001, tick)
        parts.append(
            f'<line x1="{x:.1f}" y1="{pad}" x2="{x:.1f}" y2="{h - pad}" stroke="#eee"/>'
            f'<text x="{x:.1f}" y="{h - pad + 14}" text-anchor="middle">{tick * 100:g}</text>'
            f'<line x1="{pad}" y1="{y:.1f}" x2="{w - pad}" y2="{y:.1f}" stroke="#eee"/>'
            f'<text x="{pad - 4}" y="{y + 4:.1f}" text-anchor="end">{tick * 100:g}</text>'
        )
    parts.append(
        f'<text x="{w / 2}" y="{h - 8}" text-anchor="middle">false acceptance (spoof accepted), %</text>'
        f'<text x="12" y="{h / 2}" transform="rotate(-90 12 {h / 2})" text-anchor="middle">'
        "miss (bona fide rejected), %</text>"
    )
    x0, y0 = xy(0.001, 0.001)
    x1, y1 = xy(0.6, 0.6)
    parts.append(
        f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{x1:.1f}" y2="{y1:.1f}" stroke="#bbb" stroke-dasharray="4 3"/>'
    )
    for k, (d, pts) in enumerate(rep["det_curves"].items()):
        if not pts:
            continue
        c = colours[k % len(colours)]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(a, b) for a, b in pts))
        parts.append(
            f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"/>'
            f'<text x="{w - pad - 4}" y="{pad + 14 + 14 * k}" text-anchor="end" style="fill:{c}">{esc(d)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


I2D_COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f"]


def _i2d_svg(
    rows: list[dict], metric: str, depth: int, colour: dict[str, str], w: int = 330, h: int = 220, pad: int = 52
) -> str:
    """One I2D trajectory plot: the metric per iteration, one line per generator/task (shared legend)."""
    lines: dict[str, list[tuple[int, float]]] = {}
    for r in rows:
        if r["metric"] == metric and not math.isnan(as_float(r["value"])):
            lines.setdefault(f"{r['generator']} {r['task']}", []).append((int(r["iteration"]), as_float(r["value"])))
    values = [v for pts in lines.values() for _, v in pts]
    if not values:
        return ""
    lo, hi = min(values), max(values)
    if hi - lo < 1e-9:
        lo, hi = lo - 0.5, hi + 0.5
    span_x = max(depth - 1, 1)

    def xy(k: int, v: float) -> tuple[float, float]:
        return pad + (k - 1) / span_x * (w - 2 * pad), h - pad - (v - lo) / (hi - lo) * (h - 2 * pad)

    sid = "i2d-" + "".join(ch if ch.isalnum() else "-" for ch in metric)
    parts = [
        f'<svg class="i2d" id="{esc(sid)}" width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg" role="img">',
        f'<text x="{w / 2}" y="14" text-anchor="middle">{esc(metric)}</text>',
        f'<rect x="{pad}" y="{pad}" width="{w - 2 * pad}" height="{h - 2 * pad}" fill="none" stroke="#999"/>',
    ]
    for k in range(1, depth + 1):
        x, _ = xy(k, lo)
        parts.append(f'<text x="{x:.1f}" y="{h - pad + 14}" text-anchor="middle">{k}</text>')
    for v in (lo, hi):
        _, y = xy(1, v)
        parts.append(f'<text x="{pad - 4}" y="{y + 4:.1f}" text-anchor="end">{num(v)}</text>')
    parts.append(f'<text x="{w / 2}" y="{h - 6}" text-anchor="middle">iteration</text>')
    for name, pts in sorted(lines.items()):
        c = colour[name]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(k, v) for k, v in sorted(pts)))
        parts.append(
            f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"><title>{esc(name)}</title></polyline>'
        )
        parts.extend(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{c}"/>' for x, y in (xy(k, v) for k, v in pts))
    parts.append("</svg>")
    return "".join(parts)


def i2d_section(rep: dict) -> str:
    if not rep.get("i2d"):
        return ""
    depth = int(rep["i2d"]["iterations"])
    rows = rep["i2d_iterations"]
    metrics = list(dict.fromkeys(r["metric"] for r in rows))
    names = sorted({f"{r['generator']} {r['task']}" for r in rows})
    colour = {n: I2D_COLOURS[i % len(I2D_COLOURS)] for i, n in enumerate(names)}
    legend = " ".join(f'<span style="color:{c};font-weight:600">&#9632; {esc(n)}</span>' for n, c in colour.items())
    plots = "".join(_i2d_svg(rows, m, depth, colour) for m in metrics)
    aggregates = [{**r, **{k: num(r.get(k)) for k in ("mean", "lwa", "ewa", "auc")}} for r in rep["i2d_aggregates"]]
    return "".join(
        [
            f"<h2>I2D: iterate to differentiate ({depth} iterations)</h2>",
            "<p class='small'>For CLONE and CONVERT, iteration k takes iteration k&minus;1's clip as its reference; "
            "SIM is measured against the original reference speaker; eer:&lt;detector&gt; is that detector's EER on "
            "the iteration's clips (clean channel).</p>",
            f"<p>{legend}</p><div id='i2d-plots'>{plots}</div>" if plots else "<p class='small'>no I2D clips</p>",
            "<h3>Aggregates</h3><p class='small'>On the metric oriented higher-is-better (lower-is-better metrics as "
            f"1 &minus; x): mean; LWA, weight k; EWA, weight {esc(rep['i2d'].get('ewa_decay', 0.5))}^(k&minus;1); "
            "AUC, trapezoidal rule with unit spacing.</p>",
            html_table(
                aggregates,
                ["generator", "task", "metric", "iterations", "mean", "lwa", "ewa", "auc"],
                left=3,
                table_id="i2d-aggregates",
            ),
        ]
    )

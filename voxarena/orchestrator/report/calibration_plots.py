"""Calibration plots of the report: a Tippett plot per detector and a reliability curve, as inline SVG.

Both read a detector's clean, one-shot LLRs (bona fide and spoof), the same trials as its pooled
DET curve. The Tippett plot draws, for each class, the share of trials whose LLR is at least x:
well-calibrated LLRs put the bona fide curve high on the right of 0 and the spoof curve low, and a
spoof curve that stays high far to the right of 0 shows confidently wrong scores. The reliability
curve bins the posterior sigmoid(LLR) at the effective prior 0.5 (equal class weights, the prior
at which an LLR is its own log posterior odds) and plots, per bin, the observed share of bona fide
weight against the mean stated posterior; the diagonal is perfect calibration.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Sequence

RELIABILITY_BINS = 10
MAX_POINTS = 200
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#7f7f7f"]
BONAFIDE_COLOUR, SPOOF_COLOUR = "#1a9850", "#d73027"


def tippett_curve(llrs: list[float], max_points: int = MAX_POINTS) -> list[tuple[float, float]]:
    """(x, share of ``llrs`` >= x) at each distinct LLR, thinned to about ``max_points`` points."""
    s = sorted(llrs)
    n = len(s)
    if not n:
        return []
    points = [(v, (n - i) / n) for i, v in enumerate(s) if i == 0 or s[i - 1] != v]
    if len(points) > max_points:
        step = len(points) / max_points
        points = [points[int(k * step)] for k in range(max_points)] + [points[-1]]
    return points


def _posterior(llr: float) -> float:
    return 1 / (1 + math.exp(-llr)) if llr >= 0 else math.exp(llr) / (1 + math.exp(llr))


def reliability_bins(bona: list[float], spoof: list[float], bins: int = RELIABILITY_BINS) -> list[dict]:
    """Per posterior bin [k/bins, (k+1)/bins): trial counts, the mean stated posterior sigmoid(LLR) (equal class
    weights) and the observed bona fide share of the bin's weight, (nb/Nb) / (nb/Nb + ns/Ns). Empty bins are
    left out."""
    if not bona or not spoof:
        return []
    rows = []
    weight = {1: 0.5 / len(bona), 0: 0.5 / len(spoof)}
    stats = [[0, 0, 0.0, 0.0] for _ in range(bins)]  # n_bona, n_spoof, weighted sum of posteriors, total weight
    for llr, label in [(x, 1) for x in bona] + [(x, 0) for x in spoof]:
        p = _posterior(llr)
        k = min(int(p * bins), bins - 1)
        stats[k][1 - label] += 1
        stats[k][2] += weight[label] * p
        stats[k][3] += weight[label]
    for k, (nb, ns, wp, w) in enumerate(stats):
        if nb + ns:
            observed = (nb / len(bona)) / (nb / len(bona) + ns / len(spoof))
            rows.append(
                {
                    "bin_low": k / bins,
                    "bin_high": (k + 1) / bins,
                    "n_bonafide": nb,
                    "n_spoof": ns,
                    "mean_posterior": wp / w,
                    "observed": observed,
                }
            )
    return rows


def calibration_data(bona: list[float], spoof: list[float]) -> dict:
    """What ``report.json`` keeps per detector for these plots."""
    return {
        "tippett": {
            "bonafide": [[round(x, 4), round(p, 5)] for x, p in tippett_curve(bona)],
            "spoof": [[round(x, 4), round(p, 5)] for x, p in tippett_curve(spoof)],
        },
        "reliability": [
            {k: (round(v, 5) if isinstance(v, float) else v) for k, v in r.items()}
            for r in reliability_bins(bona, spoof)
        ],
    }


def _e(x: object) -> str:
    return html.escape(str(x))


def _axes(
    parts: list[str],
    w: int,
    h: int,
    pad: int,
    x_ticks: Sequence[float],
    y_ticks: Sequence[float],
    to_xy: Callable[[float, float], tuple[float, float]],
    x_label: str,
    y_label: str,
) -> None:
    parts.append(f'<rect x="{pad}" y="{pad}" width="{w - 2 * pad}" height="{h - 2 * pad}" fill="none" stroke="#999"/>')
    for t in x_ticks:
        x, _ = to_xy(t, y_ticks[0])
        parts.append(
            f'<line x1="{x:.1f}" y1="{pad}" x2="{x:.1f}" y2="{h - pad}" stroke="#eee"/>'
            f'<text x="{x:.1f}" y="{h - pad + 14}" text-anchor="middle">{t:g}</text>'
        )
    for t in y_ticks:
        _, y = to_xy(x_ticks[0], t)
        parts.append(
            f'<line x1="{pad}" y1="{y:.1f}" x2="{w - pad}" y2="{y:.1f}" stroke="#eee"/>'
            f'<text x="{pad - 4}" y="{y + 4:.1f}" text-anchor="end">{t:g}</text>'
        )
    parts.append(
        f'<text x="{w / 2}" y="{h - 8}" text-anchor="middle">{_e(x_label)}</text>'
        f'<text x="12" y="{h / 2}" transform="rotate(-90 12 {h / 2})" text-anchor="middle">{_e(y_label)}</text>'
    )


NICE_STEPS = (1, 2, 5, 10, 20)
MAX_LLR_AXIS = 40.0


def _llr_axis(curves: dict) -> tuple[float, list[float]]:
    """Half-width of a symmetric LLR axis covering the 1st to 99th percentile of every curve (at least 5,
    at most ``MAX_LLR_AXIS``: further out a curve is flat and drawn at the edge), and its ticks."""
    xs = sorted(x for c in curves.values() for x, _ in c)
    extent = max(abs(xs[int(0.01 * (len(xs) - 1))]), abs(xs[int(0.99 * (len(xs) - 1))])) if xs else 5.0
    step = next((st for st in NICE_STEPS if extent / st <= 4), NICE_STEPS[-1])
    span = min(MAX_LLR_AXIS, max(5.0, step * math.ceil(extent / step)))
    n = int(span // step)
    return span, [k * step for k in range(-n, n + 1)]


def tippett_svg(detector: str, data: dict, w: int = 360, h: int = 260, pad: int = 45) -> str:
    """Share of trials with LLR >= x, bona fide and spoof, for one detector, on a symmetric LLR axis."""
    curves = {k: v for k, v in data["tippett"].items() if v}
    if not curves:
        return ""
    hi, ticks = _llr_axis(curves)
    lo = -hi

    def xy(x: float, p: float) -> tuple[float, float]:
        x = min(max(x, lo), hi)
        return pad + (x - lo) / (hi - lo) * (w - 2 * pad), h - pad - p * (h - 2 * pad)

    sid = "tippett-" + "".join(ch if ch.isalnum() else "-" for ch in detector)
    parts = [
        f'<svg class="tippett" id="{_e(sid)}" width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg" role="img">',
        f'<text x="{w / 2}" y="14" text-anchor="middle">{_e(detector)}</text>',
    ]
    _axes(parts, w, h, pad, ticks, [0, 0.25, 0.5, 0.75, 1], xy, "LLR x", "share of trials with LLR ≥ x")
    x0, _ = xy(0, 0)
    parts.append(f'<line x1="{x0:.1f}" y1="{pad}" x2="{x0:.1f}" y2="{h - pad}" stroke="#888" stroke-dasharray="4 3"/>')
    for k, (name, colour) in enumerate((("bonafide", BONAFIDE_COLOUR), ("spoof", SPOOF_COLOUR))):
        pts = curves.get(name)
        if not pts:
            continue
        # A survival function is a staircase: from each point, flat to the next LLR, then a drop.
        xs = (
            [(xy(lo, 1.0))]
            + [q for (x, p), nxt in zip(pts, pts[1:] + [(hi, 0.0)]) for q in (xy(x, p), xy(nxt[0], p))]
            + [xy(hi, 0.0)]
        )
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in xs)
        parts.append(
            f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>'
            f'<text x="{w - pad - 4}" y="{pad + 14 + 14 * k}" text-anchor="end" style="fill:{colour}">'
            f"{'bona fide' if name == 'bonafide' else 'spoof'}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def reliability_svg(data: dict[str, dict], w: int = 380, h: int = 320, pad: int = 48) -> str:
    """Observed bona fide share against the mean stated posterior per bin, one line per detector."""
    if not any(d["reliability"] for d in data.values()):
        return ""

    def xy(p: float, q: float) -> tuple[float, float]:
        return pad + p * (w - 2 * pad), h - pad - q * (h - 2 * pad)

    ticks = [0, 0.25, 0.5, 0.75, 1]
    parts = [f'<svg id="reliability" width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg" role="img">']
    _axes(parts, w, h, pad, ticks, ticks, xy, "stated posterior sigmoid(LLR), prior 0.5", "observed bona fide share")
    (x0, y0), (x1, y1) = xy(0, 0), xy(1, 1)
    parts.append(
        f'<line x1="{x0:.1f}" y1="{y0:.1f}" x2="{x1:.1f}" y2="{y1:.1f}" stroke="#bbb" stroke-dasharray="4 3"/>'
    )
    for k, (d, rows) in enumerate((d, v["reliability"]) for d, v in data.items()):
        if not rows:
            continue
        c = COLOURS[k % len(COLOURS)]
        pts = [xy(r["mean_posterior"], r["observed"]) for r in rows]
        parts.append(
            f'<polyline points="{" ".join(f"{x:.1f},{y:.1f}" for x, y in pts)}" fill="none" stroke="{c}" '
            f'stroke-width="2"/><text x="{pad + 6}" y="{pad + 14 + 14 * k}" style="fill:{c}">{_e(d)}</text>'
        )
        for r, (x, y) in zip(rows, pts):
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{c}"><title>{_e(d)}: '
                f"{r['n_bonafide']} bona fide + {r['n_spoof']} spoof trials, stated "
                f"{r['mean_posterior']:.3f}, observed {r['observed']:.3f}</title></circle>"
            )
    parts.append("</svg>")
    return "".join(parts)


def calibration_section(calibration: dict[str, dict], llr_detectors: set[str]) -> str:
    """The report's calibration section: one Tippett plot per detector and the reliability curves of those
    whose scores are LLRs (a raw score has no stated posterior to check)."""
    if not calibration:
        return ""
    tippett = "".join(tippett_svg(d, v) for d, v in calibration.items())
    reliable = {d: v for d, v in calibration.items() if d in llr_detectors}
    return "".join(
        [
            "<h2>Calibration</h2>",
            "<p class='small'>Tippett plots: for each class, the share of clean trials (pooled over generators) whose "
            "score is at least x. With calibrated LLRs, a spoof curve far above zero right of x = 0 means "
            "confidently wrong answers, which Cllr and actDCF punish and EER does not see. calibration_loss in the "
            "detector table is Cllr &minus; minCllr, the bits lost to miscalibration.</p>",
            f"<div id='tippett-plots'>{tippett}</div>",
            "<h3>Reliability</h3><p class='small'>Trials binned by their stated posterior sigmoid(LLR) at prior 0.5 "
            "(classes weighted equally); each point is a bin's observed share of bona fide weight. On the diagonal, "
            "the LLRs mean what they say; below it, fewer trials are bona fide than the LLRs claim.</p>",
            reliability_svg(reliable) or "<p class='small'>no detector in this run serves LLRs</p>",
        ]
    )

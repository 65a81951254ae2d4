"""``orchestrator report RUN_DIR``: ``report.json`` and a single static ``report.html``.

The HTML needs no server, no internet and no script: the detector x generator EER heatmap is a
coloured table (one more per channel condition: the generator x condition x detector matrix), DET
curves are inline SVG on normal-deviate axes, Tippett plots and reliability curves too
(``calibration_plots``), I2D trajectories are inline SVG line plots, and the
rest are tables: generator metrics with confidence intervals and composite ranks, detector composite
ranks, per-label breakdowns, I2D aggregates, coverage and failures, and provenance (models,
licences, weights hashes, versions, manifest hash, scorer fingerprint). A run that is incomplete
(pending work, no metrics) is refused
unless ``allow_incomplete``; the report then says so at the top.
"""

from __future__ import annotations

import html
import json
import math
from pathlib import Path
from statistics import NormalDist

from .calibration_plots import calibration_data, calibration_section
from .fusion import fusion_table, recorded_calibration_items
from .manifest import ManifestSet
from .run_store import CLEAN, condition_of, iteration_of, read_csv, read_jsonl
from .status import run_status


class ReportError(ValueError):
    pass


def _f(v) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


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
        "detection_by_label": read_csv(metrics / "detection_by_label.csv"),
        "generation": read_csv(metrics / "generator_metrics.csv"),
        "generation_by_label": read_csv(metrics / "generator_metrics_by_label.csv"),
        "composite": read_csv(metrics / "composite_scores.csv"),
        "det_curves": {d: [[round(a, 6), round(b, 6)] for a, b in pts] for d, pts in curves.items()},
        "calibration": calibration,
        "coverage": status["coverage"],
        "failures": failures,
    }


# ------------------------------------------------------------------------------------------- HTML
CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1200px;\
color:#222;padding:0 1em}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:.5em 0 1em}td,th{border:1px solid #ddd;padding:3px 7px;text-align:right}
th{background:#f4f4f4}td.l,th.l{text-align:left}.warn{background:#fff3cd;border:1px solid #e0c36a;padding:.6em 1em}
.heat td.c{min-width:7em;font-weight:600}.small{color:#666;font-size:12px}code{font-size:12px}
.seen{outline:2px dashed #333;outline-offset:-4px}svg text{font-size:11px;fill:#333}
"""
PALETTE = ["#1a9850", "#66bd63", "#a6d96a", "#d9ef8b", "#fee08b", "#fdae61", "#f46d43", "#d73027"]


def _e(x) -> str:
    return html.escape(str(x))


def _n(v, digits: int = 3) -> str:
    x = _f(v)
    return "—" if math.isnan(x) else f"{x:.{digits}g}" if abs(x) < 1000 else f"{x:.0f}"


def _heat_colour(eer: float) -> str:
    """Green when the detector wins (EER 0), red at chance (EER >= 0.5)."""
    if math.isnan(eer):
        return "#eee"
    return PALETTE[min(len(PALETTE) - 1, int(min(eer, 0.5) / 0.5 * (len(PALETTE) - 1) + 0.5))]


def _heatmap(rep: dict, condition: str = CLEAN, table_id: str = "eer-heatmap") -> str:
    by = {(r["detector"], r["generator"]): r for r in rep["detection"] if condition_of(r) == condition}
    dets = rep["detectors"]
    out = [f'<table class="heat" id="{_e(table_id)}"><tr><th class="l">generator \\ detector</th>']
    out += [f"<th>{_e(d)}</th>" for d in dets] + ["</tr>"]
    for g in rep["generators"] + ["pooled"]:
        out.append(f'<tr><th class="l">{_e(g)}</th>')
        for d in dets:
            r = by.get((d, g))
            if r is None:
                out.append('<td class="c">—</td>')
                continue
            eer = _f(r["eer"])
            seen = r.get("attack_seen_in_training") == "yes"
            ci = f"[{_n(r.get('eer_ci_low'), 2)}, {_n(r.get('eer_ci_high'), 2)}]"
            out.append(
                f'<td class="c{" seen" if seen else ""}" style="background:{_heat_colour(eer)}" '
                f'title="{_e(d)} vs {_e(g)}: EER {eer:.4f} {ci}, n={r["n_bonafide"]}+{r["n_spoof"]}">'
                f"{'—' if math.isnan(eer) else f'{100 * eer:.1f}%'}</td>"
            )
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


HEAT_NOTE = (
    "<p class='small'>EER (lower = the detector wins; green 0%, red at or above 50%). "
    "Dashed cells: attacks the detector was trained on. Hover for the 95% CI.</p>"
)


def _step_text(step: dict) -> str:
    """``codec=mp3 compression=0.5``; the noise colour only where there is noise."""
    shown = {k: v for k, v in step.items() if v is not None and (k != "noise" or step.get("noise_snr_db") is not None)}
    return " ".join(f"{k}={v}" for k, v in shown.items())


def _conditions_section(rep: dict) -> str:
    """Pooled EER per detector x condition, then the full generator x detector matrix per condition."""
    conditions = list(rep["conditions"])
    if len(conditions) < 2:
        return ""
    by = {(r["detector"], condition_of(r)): r for r in rep["detection"] if r["generator"] == "pooled"}
    out = [
        "<h2>Channel conditions</h2><p class='small'>Every clip a detector scores, bona fide and spoof, "
        "goes through the condition's channel first (steps in order).</p>",
        '<table class="heat" id="condition-heatmap"><tr><th class="l">condition</th><th class="l">steps</th>',
    ]
    out += [f"<th>{_e(d)}</th>" for d in rep["detectors"]] + ["</tr>"]
    for c in conditions:
        steps = ", ".join(_step_text(step) for step in rep["conditions"][c]) or "as generated"
        out.append(f'<tr><th class="l">{_e(c)}</th><td class="l small">{_e(steps)}</td>')
        for d in rep["detectors"]:
            r = by.get((d, c))
            eer = _f(r["eer"]) if r else math.nan
            out.append(
                f'<td class="c" style="background:{_heat_colour(eer)}">'
                f"{'—' if math.isnan(eer) else f'{100 * eer:.1f}%'}</td>"
            )
        out.append("</tr>")
    out.append("</table><p class='small'>Pooled EER over all generators, per condition.</p>")
    for c in conditions[1:]:
        out += [f"<h3>Condition {_e(c)}</h3>", _heatmap(rep, c, f"eer-heatmap-{c}")]
    return "".join(out)


def _det_svg(rep: dict) -> str:
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
            f'<text x="{w - pad - 4}" y="{pad + 14 + 14 * k}" text-anchor="end" style="fill:{c}">{_e(d)}</text>'
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
        if r["metric"] == metric and not math.isnan(_f(r["value"])):
            lines.setdefault(f"{r['generator']} {r['task']}", []).append((int(r["iteration"]), _f(r["value"])))
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
        f'<svg class="i2d" id="{_e(sid)}" width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg" role="img">',
        f'<text x="{w / 2}" y="14" text-anchor="middle">{_e(metric)}</text>',
        f'<rect x="{pad}" y="{pad}" width="{w - 2 * pad}" height="{h - 2 * pad}" fill="none" stroke="#999"/>',
    ]
    for k in range(1, depth + 1):
        x, _ = xy(k, lo)
        parts.append(f'<text x="{x:.1f}" y="{h - pad + 14}" text-anchor="middle">{k}</text>')
    for v in (lo, hi):
        _, y = xy(1, v)
        parts.append(f'<text x="{pad - 4}" y="{y + 4:.1f}" text-anchor="end">{_n(v)}</text>')
    parts.append(f'<text x="{w / 2}" y="{h - 6}" text-anchor="middle">iteration</text>')
    for name, pts in sorted(lines.items()):
        c = colour[name]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(k, v) for k, v in sorted(pts)))
        parts.append(
            f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"><title>{_e(name)}</title></polyline>'
        )
        parts.extend(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="2.5" fill="{c}"/>' for x, y in (xy(k, v) for k, v in pts))
    parts.append("</svg>")
    return "".join(parts)


def _i2d_section(rep: dict) -> str:
    if not rep.get("i2d"):
        return ""
    depth = int(rep["i2d"]["iterations"])
    rows = rep["i2d_iterations"]
    metrics = list(dict.fromkeys(r["metric"] for r in rows))
    names = sorted({f"{r['generator']} {r['task']}" for r in rows})
    colour = {n: I2D_COLOURS[i % len(I2D_COLOURS)] for i, n in enumerate(names)}
    legend = " ".join(f'<span style="color:{c};font-weight:600">&#9632; {_e(n)}</span>' for n, c in colour.items())
    plots = "".join(_i2d_svg(rows, m, depth, colour) for m in metrics)
    aggregates = [{**r, **{k: _n(r.get(k)) for k in ("mean", "lwa", "ewa", "auc")}} for r in rep["i2d_aggregates"]]
    return "".join(
        [
            f"<h2>I2D: iterate to differentiate ({depth} iterations)</h2>",
            "<p class='small'>For CLONE and CONVERT, iteration k takes iteration k&minus;1's clip as its reference; "
            "SIM is measured against the original reference speaker; eer:&lt;detector&gt; is that detector's EER on "
            "the iteration's clips (clean channel).</p>",
            f"<p>{legend}</p><div id='i2d-plots'>{plots}</div>" if plots else "<p class='small'>no I2D clips</p>",
            "<h3>Aggregates</h3><p class='small'>On the metric oriented higher-is-better (lower-is-better metrics as "
            f"1 &minus; x): mean; LWA, weight k; EWA, weight {_e(rep['i2d'].get('ewa_decay', 0.5))}^(k&minus;1); "
            "AUC, trapezoidal rule with unit spacing.</p>",
            _table(
                aggregates,
                ["generator", "task", "metric", "iterations", "mean", "lwa", "ewa", "auc"],
                left=3,
                table_id="i2d-aggregates",
            ),
        ]
    )


def _table(rows: list[dict], columns: list[str], left: int = 1, table_id: str = "") -> str:
    if not rows:
        return "<p class='small'>none</p>"
    out = [f"<table{f' id={chr(34)}{table_id}{chr(34)}' if table_id else ''}><tr>"]
    out += [f'<th class="{"l" if i < left else ""}">{_e(c)}</th>' for i, c in enumerate(columns)] + ["</tr>"]
    for r in rows:
        out.append(
            "<tr>"
            + "".join(f'<td class="{"l" if i < left else ""}">{_e(r.get(c, ""))}</td>' for i, c in enumerate(columns))
            + "</tr>"
        )
    return "".join(out) + "</table>"


def _with_ci(rows: list[dict], names: list[str], ident: list[str]) -> tuple[list[dict], list[str]]:
    out = []
    for r in rows:
        row = {k: r.get(k, "") for k in ident}
        for m in names:
            if m in r:
                lo, hi = r.get(f"{m}_ci_low"), r.get(f"{m}_ci_high")
                row[m] = _n(r[m]) + (
                    f" [{_n(lo)}, {_n(hi)}]" if lo not in (None, "") and not math.isnan(_f(lo)) else ""
                )
        out.append(row)
    return out, ident + [m for m in names if rows and m in rows[0]]


def _llr_detectors(rep: dict) -> set[str]:
    """Detectors whose clean pooled scores are all LLRs (the CSV holds the flag as text)."""
    return {
        r["detector"]
        for r in rep["detection"]
        if r["generator"] == "pooled" and condition_of(r) == CLEAN and r.get("scores_are_llr") == "True"
    }


def render_html(rep: dict) -> str:
    prov = rep["provenance"]
    gen_metrics = [
        c
        for c in (rep["generation"][0] if rep["generation"] else {})
        if not c.endswith(("_ci_low", "_ci_high"))
        and not c.startswith("n_")
        and c not in ("generator", "family", "tasks", "scorer_fingerprint")
    ]
    gen_rows, gen_cols = _with_ci(rep["generation"], gen_metrics, ["generator", "family", "tasks", "n_ok", "n_failed"])
    det_rows, det_cols = _with_ci(
        [r for r in rep["detection"] if r["generator"] == "pooled" and condition_of(r) == CLEAN],
        ["eer", "min_dcf", "act_dcf", "cllr", "min_cllr", "calibration_loss"],
        ["detector", "n_bonafide", "n_spoof", "scores_are_llr"],
    )
    label_rows, label_cols = _with_ci(
        rep["detection_by_label"],
        ["eer", "min_dcf", "cllr"],
        ["label", "value", "detector", "generator", "n_bonafide", "n_spoof"],
    )
    gen_label_rows, gen_label_cols = _with_ci(
        rep["generation_by_label"], gen_metrics, ["label", "value", "generator", "n_ok"]
    )
    services = [
        {"service": n, **{k: ("" if v is None else v) for k, v in s.items()}} for n, s in prov["services"].items()
    ]
    fp = [{"key": k, "value": v} for k, v in sorted(prov["scorer_fingerprint"].items())]
    failures = rep["failures"][:200]
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>VoxArena report: {_e(rep['name'])}</title><style>{CSS}</style></head><body>",
        f"<h1>VoxArena report: {_e(rep['name'])}</h1>",
        f"<p class='small'>run <code>{_e(rep['run_dir'])}</code>, "
        f"manifest <code>{_e(prov['manifest']['sha256'])}</code> "
        f"({prov['manifest']['items']} items), stack {_e(prov['stack'])}, "
        f"commit <code>{_e(prov.get('git_commit'))}</code>, "
        f"{_e(prov.get('started_at'))} to {_e(prov.get('ended_at'))}</p>",
    ]
    if not rep["complete"]:
        problems = _e("; ".join(rep["problems"]))
        parts.append(
            f'<p class="warn" id="incomplete"><b>Incomplete run</b>: {problems}. These are not final results.</p>'
        )
    parts += [
        "<h2>Detector x generator EER</h2>",
        _heatmap(rep),
        HEAT_NOTE,
        "<h2>Detectors (pooled over generators)</h2>",
        _table(det_rows, det_cols, table_id="detectors"),
        "<p class='small'>actDCF and Cllr are meaningful only when the scores are calibrated LLRs "
        "(scores_are_llr); calibration_loss = Cllr &minus; minCllr.</p>",
        "<h2>DET curves (pooled)</h2>",
        _det_svg(rep),
        calibration_section(rep.get("calibration", {}), _llr_detectors(rep)),
        _conditions_section(rep),
        "<h2>Generators</h2>",
        _table(gen_rows, gen_cols, left=3, table_id="generators"),
        _i2d_section(rep),
        "<h2>Composite ranks</h2>",
        _table(rep["composite"], ["kind", "system", "score", "rank", "note"], left=2),
        "<h2>Per-label breakdown</h2><p class='small'>Every manifest label (sex, subset, corpus, emotion, attack "
        "id, ...) is an axis.</p>",
        "<h3>Detection</h3>",
        _table(label_rows, label_cols, left=4, table_id="labels"),
        "<h3>Generation</h3>",
        _table(gen_label_rows, gen_label_cols, left=3, table_id="generator-labels"),
        "<h2>Coverage</h2>",
        _table(rep["coverage"], ["stage", "service", "expected", "done", "failed", "pending"], left=2),
        f"<h2>Failures ({len(rep['failures'])})</h2>",
        _table(failures, ["table", "id", "code", "reason"], left=4),
        "<h2>Provenance</h2>",
        _table(
            services,
            [
                "service",
                "role",
                "name",
                "version",
                "family",
                "licence",
                "weights_sha256",
                "parameter_count",
                "deterministic",
                "address",
            ],
            left=7,
        ),
        f"<p class='small'>versions: {_e(json.dumps(prov.get('versions'), sort_keys=True))}; seeds: "
        f"{_e(json.dumps(prov.get('seeds'), sort_keys=True))}</p>",
        "<h3>Scorer fingerprint</h3>",
        _table(fp, ["key", "value"], left=2),
        *(
            [
                "<h3>Calibration split and score fusion</h3>",
                f"<p class='small'>left out of every detection matrix: "
                f"{_e(json.dumps(prov['calibration_split'], sort_keys=True))}</p>",
                _table(fusion_table(prov), ["detector", "term", "value"], left=3, table_id="fusion"),
            ]
            if prov.get("calibration_split")
            else []
        ),
        "</body></html>",
    ]
    return "\n".join(parts)


def write_report(run_dir: Path, allow_incomplete: bool = False) -> tuple[Path, Path]:
    rep = build_report(run_dir, allow_incomplete)
    json_path, html_path = run_dir / "report.json", run_dir / "report.html"
    json_path.write_text(json.dumps(rep, indent=1, sort_keys=True) + "\n")
    html_path.write_text(render_html(rep))
    return json_path, html_path

"""``report.html``: one static page from the report data (``report.build_report``).

It needs no server, no internet and no script: tables and heatmaps (``tables``), DET curves
and I2D trajectories (``plots``), Tippett plots and reliability curves
(``calibration_plots``), all inline. A report of an incomplete run says so at the top.
"""

from __future__ import annotations

import json
import math

from voxarena.orchestrator.metrics.fusion import fusion_table
from voxarena.orchestrator.report.attribution import attribution_section
from voxarena.orchestrator.report.calibration_plots import calibration_section
from voxarena.orchestrator.report.localisation import localisation_section
from voxarena.orchestrator.report.plots import det_svg, i2d_section
from voxarena.orchestrator.report.streaming import streaming_section
from voxarena.orchestrator.report.tables import (
    HEAT_NOTE,
    as_float,
    attacks_section,
    conditions_section,
    eer_heatmap,
    esc,
    html_table,
    num,
)
from voxarena.orchestrator.report.watermark import watermark_section
from voxarena.orchestrator.store.run_store import CLEAN, condition_of

CSS = """
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1200px;\
color:#222;padding:0 1em}
h1{font-size:1.6em}h2{margin-top:2em;border-bottom:1px solid #ddd;padding-bottom:.2em}
table{border-collapse:collapse;margin:.5em 0 1em}td,th{border:1px solid #ddd;padding:3px 7px;text-align:right}
th{background:#f4f4f4}td.l,th.l{text-align:left}.warn{background:#fff3cd;border:1px solid #e0c36a;padding:.6em 1em}
.heat td.c{min-width:7em;font-weight:600}.small{color:#666;font-size:12px}code{font-size:12px}
.seen{outline:2px dashed #333;outline-offset:-4px}svg text{font-size:11px;fill:#333}
"""


def _with_ci(rows: list[dict], names: list[str], ident: list[str]) -> tuple[list[dict], list[str]]:
    out = []
    for r in rows:
        row = {k: r.get(k, "") for k in ident}
        for m in names:
            if m in r:
                lo, hi = r.get(f"{m}_ci_low"), r.get(f"{m}_ci_high")
                row[m] = num(r[m]) + (
                    f" [{num(lo)}, {num(hi)}]" if lo not in (None, "") and not math.isnan(as_float(lo)) else ""
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
    return "\n".join([*_header(rep), *_results(rep), *_provenance(rep), "</body></html>"])


def _header(rep: dict) -> list[str]:
    """The page's head, title line and, for an incomplete run, the banner that says so."""
    prov = rep["provenance"]
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>VoxArena report: {esc(rep['name'])}</title><style>{CSS}</style></head><body>",
        f"<h1>VoxArena report: {esc(rep['name'])}</h1>",
        f"<p class='small'>run <code>{esc(rep['run_dir'])}</code>, "
        f"manifest <code>{esc(prov['manifest']['sha256'])}</code> "
        f"({prov['manifest']['items']} items), stack {esc(prov['stack'])}, "
        f"commit <code>{esc(prov.get('git_commit'))}</code>, "
        f"{esc(prov.get('started_at'))} to {esc(prov.get('ended_at'))}</p>",
    ]
    if not rep["complete"]:
        problems = esc("; ".join(rep["problems"]))
        parts.append(
            f'<p class="warn" id="incomplete"><b>Incomplete run</b>: {problems}. These are not final results.</p>'
        )
    return parts


def _generator_metrics(rep: dict) -> list[str]:
    """The metric columns of the generator table (identity, counts and CI columns left out)."""
    return [
        c
        for c in (rep["generation"][0] if rep["generation"] else {})
        if not c.endswith(("_ci_low", "_ci_high"))
        and not c.startswith("n_")
        and c not in ("generator", "family", "tasks", "scorer_fingerprint")
    ]


def _results(rep: dict) -> list[str]:
    """The results: detection, generation, composite ranks, per-label breakdowns, coverage and failures."""
    gen_metrics = _generator_metrics(rep)
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
    return [
        "<h2>Detector x generator EER</h2>",
        eer_heatmap(rep),
        HEAT_NOTE,
        "<h2>Detectors (pooled over generators)</h2>",
        html_table(det_rows, det_cols, table_id="detectors"),
        "<p class='small'>actDCF and Cllr are meaningful only when the scores are calibrated LLRs "
        "(scores_are_llr); calibration_loss = Cllr &minus; minCllr.</p>",
        "<h2>DET curves (pooled)</h2>",
        det_svg(rep),
        calibration_section(rep.get("calibration", {}), _llr_detectors(rep)),
        conditions_section(rep),
        attacks_section(rep),
        localisation_section(rep),
        streaming_section(rep),
        attribution_section(rep),
        watermark_section(rep),
        "<h2>Generators</h2>",
        html_table(gen_rows, gen_cols, left=3, table_id="generators"),
        i2d_section(rep),
        "<h2>Composite ranks</h2>",
        html_table(rep["composite"], ["kind", "system", "score", "rank", "note"], left=2),
        "<h2>Per-label breakdown</h2><p class='small'>Every manifest label (sex, subset, corpus, emotion, attack "
        "id, ...) is an axis.</p>",
        "<h3>Detection</h3>",
        html_table(label_rows, label_cols, left=4, table_id="labels"),
        "<h3>Generation</h3>",
        html_table(gen_label_rows, gen_label_cols, left=3, table_id="generator-labels"),
        "<h2>Coverage</h2>",
        html_table(rep["coverage"], ["stage", "service", "expected", "done", "failed", "pending"], left=2),
        f"<h2>Failures ({len(rep['failures'])})</h2>",
        html_table(rep["failures"][:200], ["table", "id", "code", "reason"], left=4),
    ]


def _provenance(rep: dict) -> list[str]:
    """Services, versions, seeds, the scorer fingerprint and, with a calibration split, the fusion fits."""
    prov = rep["provenance"]
    services = [
        {"service": n, **{k: ("" if v is None else v) for k, v in s.items()}} for n, s in prov["services"].items()
    ]
    fp = [{"key": k, "value": v} for k, v in sorted(prov["scorer_fingerprint"].items())]
    columns = ["service", "role", "name", "version", "family", "licence", "weights_sha256", "parameter_count"]
    parts = [
        "<h2>Provenance</h2>",
        html_table(services, [*columns, "deterministic", "address"], left=7),
        f"<p class='small'>versions: {esc(json.dumps(prov.get('versions'), sort_keys=True))}; seeds: "
        f"{esc(json.dumps(prov.get('seeds'), sort_keys=True))}</p>",
        "<h3>Scorer fingerprint</h3>",
        html_table(fp, ["key", "value"], left=2),
    ]
    if prov.get("calibration_split"):
        parts += [
            "<h3>Calibration split and score fusion</h3>",
            f"<p class='small'>left out of every detection matrix: "
            f"{esc(json.dumps(prov['calibration_split'], sort_keys=True))}</p>",
            html_table(fusion_table(prov), ["detector", "term", "value"], left=3, table_id="fusion"),
        ]
    return parts

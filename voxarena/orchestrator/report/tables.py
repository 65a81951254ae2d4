"""The report's tables: the HTML primitives every part of the page uses, and the EER heatmaps.

The detector x generator EER heatmap is a coloured table (green when the detector wins, red at
chance), one more per channel condition, with a pooled detector x condition table above them.
"""

from __future__ import annotations

import html
import math

from voxarena.orchestrator.store.run_store import CLEAN, condition_of

PALETTE = ["#1a9850", "#66bd63", "#a6d96a", "#d9ef8b", "#fee08b", "#fdae61", "#f46d43", "#d73027"]


def as_float(v) -> float:
    """A CSV cell as a number; nan when it is empty or not one."""
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def esc(x) -> str:
    """``x`` as HTML text."""
    return html.escape(str(x))


def num(v, digits: int = 3) -> str:
    """A number as the report prints it: ``digits`` significant digits, whole from 1000 up, a dash for none."""
    x = as_float(v)
    return "—" if math.isnan(x) else f"{x:.{digits}g}" if abs(x) < 1000 else f"{x:.0f}"


def html_table(rows: list[dict], columns: list[str], left: int = 1, table_id: str = "") -> str:
    """``rows`` under ``columns`` (the first ``left`` aligned left); "none" when there are no rows."""
    if not rows:
        return "<p class='small'>none</p>"
    out = [f"<table{f' id={chr(34)}{table_id}{chr(34)}' if table_id else ''}><tr>"]
    out += [f'<th class="{"l" if i < left else ""}">{esc(c)}</th>' for i, c in enumerate(columns)] + ["</tr>"]
    for r in rows:
        out.append(
            "<tr>"
            + "".join(f'<td class="{"l" if i < left else ""}">{esc(r.get(c, ""))}</td>' for i, c in enumerate(columns))
            + "</tr>"
        )
    return "".join(out) + "</table>"


def heat_colour(eer: float) -> str:
    """Green when the detector wins (EER 0), red at chance (EER >= 0.5)."""
    if math.isnan(eer):
        return "#eee"
    return PALETTE[min(len(PALETTE) - 1, int(min(eer, 0.5) / 0.5 * (len(PALETTE) - 1) + 0.5))]


def eer_heatmap(rep: dict, condition: str = CLEAN, table_id: str = "eer-heatmap") -> str:
    by = {(r["detector"], r["generator"]): r for r in rep["detection"] if condition_of(r) == condition}
    dets = rep["detectors"]
    out = [f'<table class="heat" id="{esc(table_id)}"><tr><th class="l">generator \\ detector</th>']
    out += [f"<th>{esc(d)}</th>" for d in dets] + ["</tr>"]
    for g in rep["generators"] + ["pooled"]:
        out.append(f'<tr><th class="l">{esc(g)}</th>')
        for d in dets:
            r = by.get((d, g))
            if r is None:
                out.append('<td class="c">—</td>')
                continue
            eer = as_float(r["eer"])
            seen = r.get("attack_seen_in_training") == "yes"
            ci = f"[{num(r.get('eer_ci_low'), 2)}, {num(r.get('eer_ci_high'), 2)}]"
            out.append(
                f'<td class="c{" seen" if seen else ""}" style="background:{heat_colour(eer)}" '
                f'title="{esc(d)} vs {esc(g)}: EER {eer:.4f} {ci}, n={r["n_bonafide"]}+{r["n_spoof"]}">'
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
    """``codec=mp3 compression=0.5``; the noise colour only where there is noise; a transform step as
    ``laundering(codec=gsm, resample_hz=8000)``."""
    if step.get("attack"):
        settings = ", ".join(f"{k}={v}" for k, v in step["attack"].items() if k != "target")
        return f"attack on {step['attack']['target']} ({settings})"
    if step.get("transform"):
        return f"{step['transform']}({', '.join(f'{k}={v}' for k, v in (step.get('parameters') or {}).items())})"
    shown = {
        k: v
        for k, v in step.items()
        if v is not None and v != {} and (k != "noise" or step.get("noise_snr_db") is not None)
    }
    return " ".join(f"{k}={v}" for k, v in shown.items())


def conditions_section(rep: dict) -> str:
    """Pooled EER per detector x condition, then the full generator x detector matrix per condition."""
    conditions = list(rep["conditions"])
    if len(conditions) < 2:
        return ""
    by = {(r["detector"], condition_of(r)): r for r in rep["detection"] if r["generator"] == "pooled"}
    out = [
        "<h2>Conditions</h2><p class='small'>Every clip a detector scores goes through the condition's steps "
        "first, in order: channel steps and transforms change bona fide and spoof alike, an attack changes "
        "only the spoofed clips (against its target; the other detectors' cells are its transfer).</p>",
        '<table class="heat" id="condition-heatmap"><tr><th class="l">condition</th><th class="l">steps</th>',
    ]
    out += [f"<th>{esc(d)}</th>" for d in rep["detectors"]] + ["</tr>"]
    for c in conditions:
        steps = ", ".join(_step_text(step) for step in rep["conditions"][c]) or "as generated"
        out.append(f'<tr><th class="l">{esc(c)}</th><td class="l small">{esc(steps)}</td>')
        for d in rep["detectors"]:
            r = by.get((d, c))
            eer = as_float(r["eer"]) if r else math.nan
            out.append(
                f'<td class="c" style="background:{heat_colour(eer)}">'
                f"{'—' if math.isnan(eer) else f'{100 * eer:.1f}%'}</td>"
            )
        out.append("</tr>")
    out.append("</table><p class='small'>Pooled EER over all generators, per condition.</p>")
    for c in conditions[1:]:
        out += [f"<h3>Condition {esc(c)}</h3>", eer_heatmap(rep, c, f"eer-heatmap-{c}")]
    return "".join(out)


def attacks_section(rep: dict) -> str:
    """The attack conditions (metrics_attack): success rate at the target's clean EER threshold, the
    perceptual cost, and the transfer matrix (every detector's acceptance of each attack's clips)."""
    rows = rep.get("attacks") or []
    if not rows:
        return ""
    columns = ["condition", "target", "generator", "n_spoof", "accepted_clean", "success_rate", "eer_clean"]
    columns += ["eer_attacked", "median_queries", "mean_snr_db", "pesq_vs_original", "sim_vs_original"]
    columns += ["wer_original", "wer_attacked", "wer_change"]
    shown = [
        {c: num(r.get(c)) if c not in ("condition", "target", "generator", "n_spoof") else r[c] for c in columns}
        for r in rows
    ]
    return (
        "<h2>Attacks</h2><p class='small'>Adaptive black-box attacks on the spoofed clips, each against its "
        "target detector's scores only. success_rate: the share of attacked fakes the target accepts at its "
        "clean EER threshold (accepted_clean: before the attack). The cost: PESQ and speaker similarity of "
        "the attacked clip against the original, and the WER of both.</p>"
        + html_table(shown, columns, left=3, table_id="attacks")
        + transfer_heatmap(rep.get("attack_transfer") or [])
    )


def transfer_heatmap(rows: list[dict]) -> str:
    """Attack (row) x scoring detector (column): the share of the attacked fakes the detector accepts at its
    own clean EER threshold (red: most accepted), with the clean share in the tooltip."""
    if not rows:
        return ""
    attacks = list(dict.fromkeys((r["condition"], r["target"]) for r in rows))
    dets = list(dict.fromkeys(r["detector"] for r in rows))
    by = {(r["condition"], r["detector"]): r for r in rows}
    out = [
        "<h3>Transfer</h3><p class='small'>The share of each attack's fakes every detector accepts at its own "
        "clean EER threshold (the target's cell, dashed, is the attack's success rate; the others, how far it "
        "transfers). Hover for the share before the attack and the EER under it.</p>",
        '<table class="heat" id="attack-transfer"><tr><th class="l">attack \\ detector</th>',
    ]
    out += [f"<th>{esc(d)}</th>" for d in dets] + ["</tr>"]
    for condition, target in attacks:
        out.append(f'<tr><th class="l">{esc(condition)} (on {esc(target)})</th>')
        for d in dets:
            r = by.get((condition, d))
            share = as_float(r["accepted_attacked"]) if r else math.nan
            if r is None or math.isnan(share):
                out.append('<td class="c">—</td>')
                continue
            title = (
                f"{d} on {condition}: accepts {100 * share:.1f}% of attacked fakes, "
                f"{100 * as_float(r['accepted_clean']):.1f}% clean; EER {num(r['eer_attacked'])} "
                f"(clean {num(r['eer_clean'])})"
            )
            out.append(
                f'<td class="c{" seen" if d == target else ""}" style="background:{heat_colour(share / 2)}" '
                f'title="{esc(title)}">{100 * share:.1f}%</td>'
            )
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)

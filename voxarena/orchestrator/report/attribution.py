"""The report's source-tracing section (runs with a tracer): ``metrics/attribution.csv`` as a table with its
intervals, and one confusion heatmap per tracer x level x channel condition (rows: the true system, columns:
the tracer's top-1 label; a cell's shade is the fraction of its row)."""

from __future__ import annotations

import json
from pathlib import Path

from voxarena.orchestrator.report.tables import esc, html_table, num
from voxarena.orchestrator.store.run_store import read_csv

COLUMNS = ["accuracy", "top2_accuracy", "macro_f1", "open_auroc", "open_eer", "known_accuracy_at_eer"]


def attribution_data(run_dir: Path) -> dict:
    table = read_csv(run_dir / "metrics" / "attribution.csv")
    if not table:
        return {}
    path = run_dir / "metrics" / "attribution_confusion.json"
    return {"table": table, "confusion": json.loads(path.read_text()) if path.exists() else {}}


def _heatmap(name: str, labels: list[str], matrix: list[list[int]]) -> str:
    out = [f"<table class='heat' aria-label='confusion {esc(name)}'><tr><th class='l'>true \\ traced</th>"]
    out += [f"<th>{esc(label)}</th>" for label in labels] + ["</tr>"]
    for label, row in zip(labels, matrix):
        total = sum(row)
        if not total:
            continue
        out.append(f"<tr><th class='l'>{esc(label)}</th>")
        for count in row:
            share = count / total
            shade = f"rgba(31, 95, 168, {share:.2f})"
            out.append(f"<td class='c' style='background:{shade}' title='{count} of {total}'>{count}</td>")
        out.append("</tr>")
    return "".join(out) + "</table>"


def attribution_section(rep: dict) -> str:
    data = rep.get("attribution") or {}
    if not data:
        return ""
    rows = []
    for r in data["table"]:
        row = {c: r[c] for c in ("detector", "level", "condition", "n_known", "n_unseen")}
        for c in COLUMNS:
            ci = f" [{num(r[c + '_ci_low'])}, {num(r[c + '_ci_high'])}]" if r.get(c + "_ci_low") else ""
            row[c] = num(r[c]) + ci
        rows.append(row)
    maps = []
    for detector, levels in sorted(data.get("confusion", {}).items()):
        for level, conditions in sorted(levels.items()):
            for condition, m in sorted(conditions.items()):
                name = f"{detector} {level} {condition}"
                maps.append(f"<h3>{esc(name)}</h3>" + _heatmap(name, m["labels"], m["matrix"]))
    return (
        "<h2>Source tracing: which system made it</h2><p class='small'>Each tracer's top-1 label against the "
        "arena's own record of every fake (its generator, or the generator's family). accuracy, top-2 and "
        "macro-F1 on the fakes of systems the tracer knows; open_auroc / open_eer: how well P(unknown) tells "
        "the unseen systems' fakes from the known ones; known_accuracy_at_eer: accuracy on the known fakes it "
        "keeps at that threshold. 95% speaker-bootstrap intervals in brackets.</p>"
        + html_table(
            rows, ["detector", "level", "condition", "n_known", "n_unseen", *COLUMNS], left=3, table_id="attribution"
        )
        + "".join(maps)
    )

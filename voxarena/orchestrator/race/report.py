"""A race's tables and chart (``orchestrator race``): ``race_metrics.csv``, ``race_chart.svg``, ``race.html``.

Every number comes from the rounds' own ``metrics/detection_metrics.csv`` (each generator's spoofs against
all bona fide clips, with its speaker-bootstrap CI), so a race says nothing its runs do not. In round k a
generator is **seen** (in the training config), **added** (picked after an earlier round and trained on
since) or **unseen** (never trained on yet). A group's EER is the mean of its generators' EERs (each
generator counts once, however many clips it made); ``generator`` is ``mean`` on those rows.
"""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path
from typing import Any

from voxarena.orchestrator.report.tables import esc, html_table, num
from voxarena.orchestrator.store.run_store import read_csv

ATTACK_COLUMNS = ["round", "condition", "target", "accepted_clean", "success_rate", "eer_clean", "eer_attacked"]
RACE_COLUMNS = ["round", "detector", "retrained", "condition", "group", "generator", "eer", "eer_ci_low", "eer_ci_high"]
GROUPS = ("seen", "added", "unseen")
COLOURS = ["#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf", "#e377c2", "#bcbd22"]


def generator_eers(path: Path) -> dict[tuple[str, str, str], dict[str, float]]:
    """(detector, generator, condition) -> eer and its CI, from a run's detection_metrics.csv."""
    out = {}
    for r in read_csv(path):
        if r["generator"] != "pooled":
            out[(r["detector"], r["generator"], r["condition"])] = {
                k: float(r[k]) if r[k] not in ("", None) else math.nan for k in ("eer", "eer_ci_low", "eer_ci_high")
            }
    return out


def most_evasive(
    eers: dict[tuple[str, str, str], dict[str, float]], detectors: list[str], candidates: list[str], condition: str
) -> str | None:
    """The candidate with the highest EER on ``condition`` averaged over ``detectors`` (ties: the first by
    name); None when no candidate has an EER for every one of them."""
    best, best_eer = None, -1.0
    for g in sorted(candidates):
        values = [eers.get((d, g, condition), {}).get("eer", math.nan) for d in detectors]
        if any(math.isnan(v) for v in values):
            continue
        mean = sum(values) / len(values)
        if mean > best_eer:
            best, best_eer = g, mean
    return best


def race_rows(out: Path, record: dict[str, Any], seen: list[str], retrain: list[str]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for rnd in record["rounds"]:
        k, trained_on = rnd["round"], set(rnd["trained_on"])
        eers = generator_eers(out / rnd["run"] / "metrics" / "detection_metrics.csv")
        groups: dict[tuple[str, str, str], list[float]] = {}
        for (det, gen, cond), e in sorted(eers.items()):
            group = "seen" if gen in seen else "added" if gen in trained_on else "unseen"
            base = {"round": k, "detector": det, "retrained": det in retrain, "condition": cond, "group": group}
            rows.append({**base, "generator": gen, **e})
            groups.setdefault((det, cond, group), []).append(e["eer"])
        for (det, cond, group), values in sorted(groups.items()):
            mean = sum(values) / len(values)
            rows.append(
                {
                    "round": k,
                    "detector": det,
                    "retrained": det in retrain,
                    "condition": cond,
                    "group": group,
                    "generator": "mean",
                    "eer": mean,
                    "eer_ci_low": math.nan,
                    "eer_ci_high": math.nan,
                }
            )
    return rows


def attack_rows(out: Path, record: dict[str, Any]) -> list[dict[str, Any]]:
    """The evaluation's attack conditions per round (their pooled rows of attack_metrics.csv): how the
    retrained detectors stand against attacks that adapt to them anew every round."""
    rows = []
    for rnd in record["rounds"]:
        for r in read_csv(out / rnd["run"] / "metrics" / "attack_metrics.csv"):
            if r["generator"] == "pooled":
                rows.append({"round": rnd["round"], **{k: r[k] for k in ATTACK_COLUMNS[1:]}})
    return rows


def _csv(rows: list[dict[str, Any]], columns: list[str] = RACE_COLUMNS) -> str:
    buf = io.StringIO()
    w = csv.DictWriter(buf, columns, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if math.isnan(v) else f"{v:.6f}") if isinstance(v, float) else v for k, v in r.items()})
    return buf.getvalue()


def chart_svg(rows: list[dict[str, Any]], record: dict[str, Any], detector: str, condition: str = "clean") -> str:
    """EER per round of one detector on ``condition``: the seen generators' mean, the never-seen ones' mean,
    and each added generator's own line, its dot filled from the round it joined training."""
    n = len(record["rounds"])
    w, h, pad, legend = 600, 300, 48, 250
    mine = [r for r in rows if r["detector"] == detector and r["condition"] == condition]
    series: dict[str, list[tuple[int, float]]] = {}
    for r in mine:
        if r["generator"] == "mean" and r["group"] in ("seen", "unseen"):
            series.setdefault(f"{r['group']} (mean)", []).append((r["round"], r["eer"]))
    added = {rnd["added"]: rnd["round"] for rnd in record["rounds"] if rnd["added"]}
    for g, joined in added.items():
        pts = [(r["round"], r["eer"]) for r in mine if r["generator"] == g]
        series[f"{g} (added in round {joined})"] = sorted(pts)
    top = max([0.5] + [v for pts in series.values() for _, v in pts if not math.isnan(v)])

    def xy(k: float, v: float) -> tuple[float, float]:
        x = pad + (k / max(n - 1, 1)) * (w - legend - 2 * pad)
        return x, h - pad - v / top * (h - 2 * pad)

    parts = [
        f'<svg class="race" width="{w}" height="{h}" xmlns="http://www.w3.org/2000/svg" role="img" '
        f'font-family="sans-serif" font-size="12"><title>{esc(detector)}: EER per round ({esc(condition)})</title>',
        f'<text x="{(w - legend) / 2}" y="16" text-anchor="middle">{esc(detector)}</text>',
        f'<rect x="{pad}" y="{pad}" width="{w - legend - 2 * pad}" height="{h - 2 * pad}" fill="none" stroke="#999"/>',
    ]
    for k in range(n):
        x, _ = xy(k, 0)
        parts.append(f'<text x="{x:.1f}" y="{h - pad + 15}" text-anchor="middle">{k}</text>')
    for t in (0, 0.1, 0.2, 0.3, 0.4, 0.5):
        if t <= top:
            _, y = xy(0, t)
            parts.append(
                f'<line x1="{pad}" y1="{y:.1f}" x2="{w - legend - pad}" y2="{y:.1f}" stroke="#eee"/>'
                f'<text x="{pad - 4}" y="{y + 4:.1f}" text-anchor="end">{t * 100:g}</text>'
            )
    parts.append(
        f'<text x="{(w - legend) / 2}" y="{h - 8}" text-anchor="middle">round</text>'
        f'<text x="12" y="{h / 2}" transform="rotate(-90 12 {h / 2})" text-anchor="middle">EER, %</text>'
    )
    fixed = {"seen (mean)": "#7f7f7f", "unseen (mean)": "#1f77b4"}
    others = iter(COLOURS)
    colours = {name: fixed.get(name) or next(others, "#333") for name in series}
    # the added generators' lines first, the group means on top; the legend in series order
    for i, (name, pts) in sorted(enumerate(series.items()), key=lambda e: e[1][0] in fixed):
        colour = colours[name]
        width = 3 if name in fixed else 1.5
        good = [(k, v) for k, v in pts if not math.isnan(v)]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(k, v) for k, v in good))
        parts.append(
            f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="{width}">'
            f"<title>{esc(name)}</title></polyline>"
        )
        joined = next((j for g, j in added.items() if name.startswith(f"{g} ")), 0)
        for k, v in good:
            x, y = xy(k, v)
            fill = colour if k >= joined else "white"
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{fill}" stroke="{colour}">'
                f"<title>{esc(name)}, round {k}: EER {v * 100:.1f}%</title></circle>"
            )
        ly = pad + 16 * i
        parts.append(
            f'<line x1="{w - legend + 4}" y1="{ly}" x2="{w - legend + 24}" y2="{ly}" stroke="{colour}" '
            f'stroke-width="{width}"/><text x="{w - legend + 28}" y="{ly + 4}">{esc(name)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def race_html(
    rows: list[dict[str, Any]], record: dict[str, Any], retrain: list[str], attacks: list[dict[str, Any]]
) -> str:
    rounds = [
        {
            "round": r["round"],
            "trained on": ", ".join(r["trained_on"]),
            "added": r["added"] or "—",
            **{f"{d} dev EER": num(r["dev_eer"].get(d)) for d in retrain},
            **{f"{d} dev Cllr": num(r["dev_cllr"].get(d)) for d in retrain},
            "run": r["run"],
            "picked next": r["next"] or "—",
        }
        for r in record["rounds"]
    ]
    columns = list(rounds[0]) if rounds else []
    clean = [
        {**r, "eer": num(r["eer"]), "eer_ci_low": num(r["eer_ci_low"]), "eer_ci_high": num(r["eer_ci_high"])}
        for r in rows
        if r["condition"] == "clean"
    ]
    links = "".join(f'<li><a href="{esc(r["run"])}/report.html">round {r["round"]}</a></li>' for r in record["rounds"])
    return "".join(
        [
            "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
            f"<title>VoxArena race: {esc(record['name'])}</title>",
            "<style>body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;padding:0 1em}"
            "table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:3px 7px;text-align:right}"
            "td.l,th.l{text-align:left}</style></head><body>",
            f"<h1>Race: {esc(record['name'])}</h1>",
            "<p>Each round retrains the retrained detectors on the seen generators and every generator added "
            "so far, then evaluates every generator. Dots are filled from the round a generator joined "
            "training; a group's EER is the mean of its generators' EERs (clean condition).</p>",
            "".join(chart_svg(rows, record, d) for d in retrain),
            "<h2>Rounds</h2>",
            html_table(rounds, columns, left=2),
            "<h2>Attacks per round</h2><p>Each round's attack conditions, searched anew against that round's "
            "detectors: the share of fakes the target accepts at its clean EER threshold before and after.</p>"
            + html_table(
                [{k: r[k] if k in ("round", "condition", "target") else num(r[k]) for k in r} for r in attacks],
                ATTACK_COLUMNS,
                left=3,
            )
            if attacks
            else "",
            f"<h2>Round reports</h2><ul>{links}</ul>",
            "<h2>EER per round, detector and generator (clean)</h2>",
            html_table(clean, RACE_COLUMNS, left=6),
            "</body></html>\n",
        ]
    )


def write_race_outputs(out: Path, record: dict[str, Any], seen: list[str], retrain: list[str]) -> None:
    """race_metrics.csv, race_attacks.csv (when the evaluation attacks), one race_chart-DETECTOR.svg per
    retrained detector, race.html, and every round's report."""
    from voxarena.orchestrator.report.build import write_report

    rows = race_rows(out, record, seen, retrain)
    (out / "race_metrics.csv").write_text(_csv(rows))
    attacks = attack_rows(out, record)
    if attacks:
        (out / "race_attacks.csv").write_text(_csv(attacks, ATTACK_COLUMNS))
    for d in retrain:
        (out / f"race_chart-{d}.svg").write_text(chart_svg(rows, record, d) + "\n")
    for rnd in record["rounds"]:
        write_report(out / rnd["run"], False)
    (out / "race.html").write_text(race_html(rows, record, retrain, attacks))

"""``orchestrator compare BASELINE CURRENT``: the nightly regression gate.

A metric regresses when it moved in its bad direction by more than its threshold (absolute units of
the metric) **and** the bootstrap confidence intervals say the change is real: the current run's
interval lies entirely on the bad side of the baseline's (no overlap). A move past the threshold
whose intervals overlap is reported as "unconfirmed" and does not fail the gate; neither does a
move without intervals (a run with ``bootstrap_resamples: 0``).

Both runs must share the protocol (manifest, seeds, tasks, scorer fingerprint): otherwise the
numbers are not comparable and the command refuses. Services may differ: that is what is gated.
Thresholds come from a YAML file (``--thresholds``), over these defaults:

    detection:  {eer: 0.02, min_dcf: 0.05, act_dcf: 0.05, cllr: 0.1}
    generation: {wer: 0.02, cer: 0.01, sim: 0.02, dnsmos: 0.1, pesq: 0.1, stoi: 0.02, mcd: 0.5}
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import yaml

from voxarena.orchestrator.metrics.compare import protocol_differences
from voxarena.orchestrator.store.run_store import condition_of, detector_label, read_csv

DEFAULT_THRESHOLDS = {
    "detection": {"eer": 0.02, "min_dcf": 0.05, "act_dcf": 0.05, "cllr": 0.1},
    "generation": {"wer": 0.02, "cer": 0.01, "sim": 0.02, "dnsmos": 0.1, "pesq": 0.1, "stoi": 0.02, "mcd": 0.5},
}
LOWER_IS_BETTER_DETECTION = {"eer", "min_dcf", "act_dcf", "cllr", "min_cllr"}


class ThresholdError(ValueError):
    pass


def load_thresholds(path: Path | None) -> dict:
    out = {k: dict(v) for k, v in DEFAULT_THRESHOLDS.items()}
    if path is None:
        return out
    data = yaml.safe_load(path.read_text()) or {}
    for section, values in data.items():
        if section not in out:
            raise ThresholdError(f"{path}: unknown section {section!r}; use detection and/or generation")
        for name, value in (values or {}).items():
            if not isinstance(value, (int, float)) or value < 0:
                raise ThresholdError(f"{path}: {section}.{name} must be a non-negative number, got {value!r}")
            out[section][name] = float(value)
    return out


def _num(v: str | None) -> float:
    try:
        return float(v) if v not in (None, "") else math.nan
    except ValueError:
        return math.nan


def _higher_is_better(run_dir: Path) -> dict[str, bool]:
    """Column -> direction, from the scorer's metric specs recorded with the run."""
    path = run_dir / "metrics" / "fingerprint.json"
    specs = json.loads(path.read_text())["metrics"] if path.exists() else []
    return {col: bool(m.get("higher_is_better", False)) for m in specs for col in (m.get("columns") or [m["name"]])}


def _verdict(base: dict, cur: dict, metric: str, threshold: float, higher_better: bool) -> dict:
    b, c = _num(base.get(metric)), _num(cur.get(metric))
    bl, bh = _num(base.get(f"{metric}_ci_low")), _num(base.get(f"{metric}_ci_high"))
    cl, ch = _num(cur.get(f"{metric}_ci_low")), _num(cur.get(f"{metric}_ci_high"))
    row = {
        "metric": metric,
        "baseline": b,
        "current": c,
        "threshold": threshold,
        "baseline_ci": [bl, bh],
        "current_ci": [cl, ch],
    }
    if math.isnan(b) or math.isnan(c):
        return {**row, "change": math.nan, "verdict": "n/a"}
    worse_by = (b - c) if higher_better else (c - b)
    row["change"] = c - b
    if worse_by <= threshold:
        return {**row, "verdict": "improved" if worse_by < -threshold else "ok"}
    if any(math.isnan(x) for x in (bl, bh, cl, ch)):
        return {**row, "verdict": "unconfirmed (no CI)"}
    real = ch < bl if higher_better else cl > bh
    return {**row, "verdict": "REGRESSION" if real else "unconfirmed (CIs overlap)"}


def compare_runs(baseline: Path, current: Path, thresholds: dict) -> dict:
    differences = [
        d
        for d in protocol_differences(baseline, current)
        if not any(d.startswith(f"{s}:") for s in _service_names(baseline, current))
    ]
    if differences:
        from voxarena.orchestrator.metrics.compare import IncomparableRuns

        raise IncomparableRuns(differences)
    rows = []

    def det_key(r: dict) -> tuple[str, str, str]:
        return r["detector"], r["generator"], condition_of(r)

    base_det = {det_key(r): r for r in read_csv(baseline / "metrics" / "detection_metrics.csv")}
    for r in read_csv(current / "metrics" / "detection_metrics.csv"):
        key = det_key(r)
        if key in base_det:
            label = f"{detector_label(key[0], key[2])} vs {key[1]}"
            for metric, thr in thresholds["detection"].items():
                rows.append(
                    {
                        "table": "detection",
                        "row": label,
                        **_verdict(base_det[key], r, metric, thr, metric not in LOWER_IS_BETTER_DETECTION),
                    }
                )
    direction = _higher_is_better(current)
    base_gen = {r["generator"]: r for r in read_csv(baseline / "metrics" / "generator_metrics.csv")}
    for r in read_csv(current / "metrics" / "generator_metrics.csv"):
        if r["generator"] in base_gen:
            for metric, thr in thresholds["generation"].items():
                if metric in r:
                    rows.append(
                        {
                            "table": "generation",
                            "row": r["generator"],
                            **_verdict(base_gen[r["generator"]], r, metric, thr, direction.get(metric, False)),
                        }
                    )
    rows = [r for r in rows if r["verdict"] != "n/a"]
    changed = [d for d in protocol_differences(baseline, current) if d not in differences]
    return {
        "baseline": str(baseline),
        "current": str(current),
        "rows": rows,
        "changed_services": changed,
        "regressions": [r for r in rows if r["verdict"] == "REGRESSION"],
    }


def _service_names(a: Path, b: Path) -> set[str]:
    names = set()
    for run in (a, b):
        names |= set(json.loads((run / "run.json").read_text()).get("services", {}))
    return names


def _fmt(x: float) -> str:
    return "—" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.4g}"


def markdown(result: dict) -> str:
    reg = result["regressions"]
    lines = [
        f"## VoxArena regression check: {'FAIL' if reg else 'PASS'}",
        "",
        f"baseline `{result['baseline']}`, current `{result['current']}`; "
        f"{len(reg)} regression(s) in {len(result['rows'])} compared metrics.",
        "",
    ]
    if result["changed_services"]:
        lines += ["Changed services:", *[f"- {d}" for d in result["changed_services"]], ""]
    shown = [r for r in result["rows"] if r["verdict"] != "ok"]
    if shown:
        lines += [
            "| table | row | metric | baseline [CI] | current [CI] | change | threshold | verdict |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for r in shown:
            lines.append(
                f"| {r['table']} | {r['row']} | {r['metric']} | {_fmt(r['baseline'])} "
                f"[{_fmt(r['baseline_ci'][0])}, {_fmt(r['baseline_ci'][1])}] | {_fmt(r['current'])} "
                f"[{_fmt(r['current_ci'][0])}, {_fmt(r['current_ci'][1])}] | {_fmt(r['change'])} | "
                f"{_fmt(r['threshold'])} | {r['verdict']} |"
            )
    else:
        lines.append("Every compared metric is within its threshold.")
    return "\n".join(lines) + "\n"

"""The end-of-run summary: the detector x generator EER matrix and the generator table."""
from __future__ import annotations

import csv
from pathlib import Path

from rich.console import Console
from rich.table import Table


def _read(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _pct(v: str) -> str:
    return "-" if v in ("", "nan") else f"{100 * float(v):.1f}%"


def _num(v: str, digits: int = 3) -> str:
    return "-" if v in ("", "nan") else f"{float(v):.{digits}f}"


def print_summary(run_dir: Path, console: Console) -> None:
    det = _read(run_dir / "metrics" / "detection_metrics.csv")
    gen = _read(run_dir / "metrics" / "generator_metrics.csv")
    generators = list(dict.fromkeys(r["generator"] for r in det))
    detectors = list(dict.fromkeys(r["detector"] for r in det))
    if detectors:
        _print_detection(det, generators, detectors, console)
    _print_generators(gen, console)


def _print_detection(det: list[dict], generators: list[str], detectors: list[str], console: Console) -> None:
    # Generators as rows: an arena has many more generators than detectors.
    t = Table(title="EER, generator x detector (lower = the detector wins)")
    t.add_column("generator")
    for d in detectors:
        t.add_column(d, justify="right")
    by = {(r["detector"], r["generator"]): r for r in det}
    for g in generators:
        t.add_row(g, *[_pct(by[(d, g)]["eer"]) if (d, g) in by else "-" for d in detectors])
    console.print(t)
    t2 = Table(title="minDCF / actDCF / Cllr (pooled)")
    for c in ("detector", "n_bonafide", "n_spoof", "eer", "min_dcf", "act_dcf", "cllr", "llr?"):
        t2.add_column(c, justify="right")
    for r in det:
        if r["generator"] == "pooled":
            t2.add_row(r["detector"], r["n_bonafide"], r["n_spoof"], _pct(r["eer"]), _num(r["min_dcf"]),
                       _num(r["act_dcf"]), _num(r["cllr"]), r["scores_are_llr"])
    console.print(t2)


def _print_generators(gen: list[dict], console: Console) -> None:
    metric_cols = [c for c in (gen[0].keys() if gen else []) if c not in ("generator", "n_ok", "n_failed")
                   and not c.startswith("n_")]
    t3 = Table(title="Generators")
    for c in ["generator", "ok", "failed"] + metric_cols:
        t3.add_column(c, justify="right")
    for r in gen:
        t3.add_row(r["generator"], r["n_ok"], r["n_failed"], *[_num(r[c]) for c in metric_cols])
    console.print(t3)

"""The end-of-run summary: the detector x generator EER matrix (clean channel), pooled EER per channel
condition, the generator table, I2D aggregates, localisation of partial fakes and composite ranks."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from voxarena.orchestrator.store.run_store import CLEAN, condition_of, read_csv


def _pct(v: str) -> str:
    return "-" if v in ("", "nan") else f"{100 * float(v):.1f}%"


def _num(v: str, digits: int = 3) -> str:
    return "-" if v in ("", "nan") else f"{float(v):.{digits}f}"


def print_summary(run_dir: Path, console: Console) -> None:
    all_det = read_csv(run_dir / "metrics" / "detection_metrics.csv")
    det = [r for r in all_det if condition_of(r) == CLEAN]
    gen = read_csv(run_dir / "metrics" / "generator_metrics.csv")
    generators = list(dict.fromkeys(r["generator"] for r in det))
    detectors = list(dict.fromkeys(r["detector"] for r in det))
    if detectors:
        _print_detection(det, generators, detectors, console)
        _print_conditions(all_det, detectors, console)
    _print_generators(gen, console)
    _print_i2d(run_dir, console)
    _print_localisation(run_dir, console)
    _print_composites(run_dir, console)


def _print_table(console: Console, title: str, columns, rows, row_names: bool = False, caption: str | None = None):
    """A table of ``rows`` under ``columns``, right-aligned (the first column left with ``row_names``)."""
    t = Table(title=title, caption=caption)
    for i, c in enumerate(columns):
        t.add_column(c, justify="left" if row_names and i == 0 else "right")
    for row in rows:
        t.add_row(*row)
    console.print(t)


def _print_conditions(det: list[dict], detectors: list[str], console: Console) -> None:
    conditions = list(dict.fromkeys(condition_of(r) for r in det))
    if len(conditions) < 2:
        return
    by = {(r["detector"], condition_of(r)): r["eer"] for r in det if r["generator"] == "pooled"}
    rows = [(c, *[_pct(by.get((d, c), "")) for d in detectors]) for c in conditions]
    title = "Pooled EER per channel condition (every clip degraded before detection)"
    _print_table(console, title, ["condition", *detectors], rows, row_names=True)


def _print_i2d(run_dir: Path, console: Console) -> None:
    rows = read_csv(run_dir / "metrics" / "i2d_aggregates.csv")
    if rows:
        title = "I2D aggregates (higher = better for the generator; metrics/i2d_iterations.csv has each iteration)"
        columns = ("generator", "task", "metric", "mean", "lwa", "ewa", "auc")
        cells = [(r["generator"], r["task"], r["metric"], *[_num(r[k]) for k in columns[3:]]) for r in rows]
        _print_table(console, title, columns, cells)


def _print_detection(det: list[dict], generators: list[str], detectors: list[str], console: Console) -> None:
    # Generators as rows: an arena has many more generators than detectors.
    by = {(r["detector"], r["generator"]): r for r in det}

    def cell(d: str, g: str) -> str:
        if (d, g) not in by:
            return "-"
        seen = by[(d, g)].get("attack_seen_in_training") == "yes"
        return _pct(by[(d, g)]["eer"]) + (" *" if seen else "")

    seen_any = any(r.get("attack_seen_in_training") == "yes" for r in det)
    caption = "* the detector was trained on this generator's speech (a seen attack)" if seen_any else None
    rows = [(g, *[cell(d, g) for d in detectors]) for g in generators]
    title = "EER, generator x detector (lower = the detector wins)"
    _print_table(console, title, ["generator", *detectors], rows, row_names=True, caption=caption)
    columns = ("detector", "n_bonafide", "n_spoof", "eer", "min_dcf", "act_dcf", "cllr", "llr?")
    rows = [
        (r["detector"], r["n_bonafide"], r["n_spoof"], _pct(r["eer"]), *[_num(r[k]) for k in columns[4:7]])
        + (r["scores_are_llr"],)
        for r in det
        if r["generator"] == "pooled"
    ]
    _print_table(console, "minDCF / actDCF / Cllr (pooled)", columns, rows)


HEADLINE_GENERATOR_COLUMNS = ("wer", "cer", "sim", "dnsmos", "pesq", "mcd", "rtf", "params_m")


def _print_generators(gen: list[dict], console: Console) -> None:
    """The headline columns the run has (CIs and sub-scores stay in the CSV)."""
    present = set(gen[0]) if gen else set()
    metric_cols = [c for c in HEADLINE_GENERATOR_COLUMNS if c in present]
    rows = [
        (r["generator"], r["n_ok"], r["n_failed"], *[_num(r[c], 1 if c == "params_m" else 3) for c in metric_cols])
        for r in gen
    ]
    title = "Generators (metrics/generator_metrics.csv has the 95% CIs)"
    _print_table(console, title, ["generator", "ok", "failed", *metric_cols], rows)


def _print_localisation(run_dir: Path, console: Console) -> None:
    rows = read_csv(run_dir / "metrics" / "localisation.csv")
    if rows:
        title = "Localisation of partial fakes (metrics/localisation.csv has every resolution, bin and CI)"
        columns = ("detector", "method", "segments", "n_partial", "eer_utt", "seg_eer_160ms", "range_eer", "iou")
        cells = [(*(r[c] for c in columns[:4]), *(_pct(r[c]) for c in columns[4:7]), _num(r["iou"])) for r in rows]
        _print_table(console, title, columns, cells)


def _print_composites(run_dir: Path, console: Console) -> None:
    rows = read_csv(run_dir / "metrics" / "composite_scores.csv")
    if rows:
        title = "Composite scores (SoK): F_TTS and F_reconstruction higher = better, detector S lower = better"
        ranked = sorted(rows, key=lambda r: (r["kind"], int(r["rank"]) if r["rank"] else 0))
        cells = [(r["kind"], r["rank"], r["system"], _num(r["score"], 4)) for r in ranked]
        _print_table(console, title, ("kind", "rank", "system", "score"), cells)

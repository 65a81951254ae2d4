"""``orchestrator metrics ...`` and ``orchestrator composite ...``: the metric catalogue (``metrics list``,
``metrics describe NAME``), and metrics and composite scores from files (ASVspoof score and key files,
any metrics table), no service needed. Listing and describing read ``voxarena.metric_catalogue`` only:
no metric backend loads."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from voxarena.orchestrator.cli.output import console, fail, print_json
from voxarena.stats.composite import EPSILON, RECONSTRUCTION_WEIGHTS, TTS_WEIGHTS

metrics_app = typer.Typer(
    no_args_is_help=True, help="The metric catalogue, and metrics from files (ASVspoof score and key files)."
)
composite_app = typer.Typer(no_args_is_help=True, help="Composite scores of the SoK paper from any metrics table.")


@metrics_app.command("list")
def metrics_list(as_json: bool = typer.Option(False, "--json", help="every row as JSON")) -> None:
    """Every scorer metric: name, on by default or not, direction, inputs it needs and what it measures."""
    from voxarena.metric_catalogue import METRICS

    if as_json:
        print(json.dumps([row.to_dict() for row in METRICS.values()], indent=2))
        return
    table = [("metric", "default", "better", "needs", "measures")]
    table += [
        (r.name, "yes" if r.default else "no", r.direction, ",".join(r.needs) or "-", r.summary)
        for r in METRICS.values()
    ]
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[4])


@metrics_app.command("describe")
def metrics_describe(
    name: str = typer.Argument(..., help="a metric name (orchestrator metrics list)"),
    as_json: bool = typer.Option(False, "--json", help="the row as JSON"),
) -> None:
    """One metric's catalogue row: what it measures, its unit and direction, the inputs it needs, its
    columns, how clips pool into the corpus figure, the definition it follows and the class computing it."""
    from voxarena.metric_catalogue import INPUTS, UnknownMetric, metric_entry

    try:
        row = metric_entry(name)
    except UnknownMetric as e:
        fail(e)
        return
    if as_json:
        print_json(row.to_dict())
        return
    fields = [
        ("unit", row.unit),
        ("direction", f"{row.direction} is better"),
        (
            "default",
            "yes: a run computes it when its config names no metrics"
            if row.default
            else "no: computed when a run's config names it",
        ),
        ("needs", "; ".join(f"{n}: {INPUTS[n]}" for n in row.needs) or "the generated audio only"),
        ("columns", ", ".join(row.columns)),
        ("aggregation", row.aggregation),
        ("reference", row.reference),
        ("implementation", row.implementation),
    ]
    print(f"{row.name}: {row.summary}")
    for key, value in fields:
        print(f"  {key:<15}{value}")


@metrics_app.command("detection")
def metrics_detection(
    scores: Path = typer.Option(..., help="ASVspoof 5 score file: header filename<TAB>cm-score"),
    keys: Path = typer.Option(..., help="ASVspoof 5 key file: header filename<TAB>cm-label (bonafide/spoof)"),
    p_spoof: float = typer.Option(0.05),
    c_miss: float = typer.Option(1.0),
    c_fa: float = typer.Option(10.0),
) -> None:
    """EER (a fraction), minDCF, actDCF, Cllr, minCllr and counts, as JSON (higher score = bona fide)."""
    from voxarena.orchestrator.run.offline import InputFileError, asvspoof_detection_metrics
    from voxarena.stats.detection import CostModel

    try:
        print_json(asvspoof_detection_metrics(scores, keys, CostModel(p_spoof, c_miss, c_fa)))
    except InputFileError as e:
        fail(e)


@metrics_app.command("export-asvspoof")
def metrics_export(run_dir: Path = typer.Argument(...), out: Path = typer.Option(..., help="output directory")) -> None:
    """Write a run's detections as ASVspoof 5 files: <detector>.scores.tsv and keys.tsv."""
    from voxarena.orchestrator.run.offline import export_asvspoof

    if not (run_dir / "detections.jsonl").exists():
        fail(ValueError(f"{run_dir}: no detections.jsonl (not a run directory?)"))
    for path in export_asvspoof(run_dir, out):
        console.print(str(path))


def _generator_composite(kind: str, weights: dict[str, float], doc: str) -> None:
    """Register ``composite KIND``: the composite of the SoK paper with ``weights`` (its columns and defaults)."""
    example = ",".join(f"{name}={value:g}" for name, value in weights.items())

    def command(
        metrics_csv: Path = typer.Argument(..., help=f"CSV with a system column and {', '.join(weights)}"),
        weights_text: str | None = typer.Option(None, "--weights", help=f"e.g. {example}"),
        epsilon: float = typer.Option(EPSILON, help="floor of the normalised metrics"),
    ) -> None:
        from voxarena.orchestrator.run.offline import InputFileError, composite_generators, parse_weights

        try:
            print_json(composite_generators(metrics_csv, kind, parse_weights(weights_text, weights), epsilon))
        except InputFileError as e:
            fail(e)

    command.__doc__ = doc
    composite_app.command(kind)(command)


_generator_composite("tts", TTS_WEIGHTS, "F_TTS of every system (higher is better), as JSON.")
_generator_composite(
    "reconstruction", RECONSTRUCTION_WEIGHTS, "F_reconstruction of every system (higher is better), as JSON."
)


@composite_app.command("detectors")
def composite_detectors_cmd(
    pairs_csv: Path = typer.Argument(..., help="CSV: detector, generator, eer, cllr, min_dcf"),
    params: Path = typer.Option(..., help="CSV: detector, params_m"),
    alpha: float = typer.Option(0.8, help="weight of empirical performance against model size"),
    challenge: Path | None = typer.Option(None, help="CSV: generator, r (challenge scores; equal by default)"),
) -> None:
    """Detector overall score S_i (lower is better), as JSON."""
    from voxarena.orchestrator.run.offline import InputFileError, composite_detectors

    try:
        print_json(composite_detectors(pairs_csv, params, alpha, challenge))
    except InputFileError as e:
        fail(e)

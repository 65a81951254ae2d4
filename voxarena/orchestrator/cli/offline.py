"""``orchestrator metrics ...`` and ``orchestrator composite ...``: metrics and composite scores
from files (ASVspoof score and key files, any metrics table), no service needed."""

from __future__ import annotations

from pathlib import Path

import typer

from voxarena.orchestrator.cli.output import console, fail, print_json

metrics_app = typer.Typer(no_args_is_help=True, help="Metrics from files (ASVspoof score and key files).")
composite_app = typer.Typer(no_args_is_help=True, help="Composite scores of the SoK paper from any metrics table.")


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


def _composite_generators(kind: str, table: Path, weights: str | None, epsilon: float) -> None:
    from voxarena.orchestrator.run.offline import InputFileError, composite_generators, parse_weights
    from voxarena.stats.composite import RECONSTRUCTION_WEIGHTS, TTS_WEIGHTS

    try:
        w = parse_weights(weights, TTS_WEIGHTS if kind == "tts" else RECONSTRUCTION_WEIGHTS)
        print_json(composite_generators(table, kind, w, epsilon))
    except InputFileError as e:
        fail(e)


@composite_app.command("tts")
def composite_tts(
    metrics_csv: Path = typer.Argument(..., help="CSV with a system column and dnsmos, sim, psnr, wer, rtf, params_m"),
    weights: str | None = typer.Option(
        None, help="e.g. dnsmos=0.25,sim=0.25,psnr=0.15,wer=0.2,rtf=0.075,params_m=0.075"
    ),
    epsilon: float = typer.Option(0.1, help="floor of the normalised metrics"),
) -> None:
    """F_TTS of every system (higher is better), as JSON."""
    _composite_generators("tts", metrics_csv, weights, epsilon)


@composite_app.command("reconstruction")
def composite_reconstruction(
    metrics_csv: Path = typer.Argument(
        ..., help="CSV with a system column and dnsmos, pesq, psnr, ssim, rtf, params_m"
    ),
    weights: str | None = typer.Option(
        None, help="e.g. dnsmos=0.25,pesq=0.225,psnr=0.15,ssim=0.225,rtf=0.075,params_m=0.075"
    ),
    epsilon: float = typer.Option(0.1, help="floor of the normalised metrics"),
) -> None:
    """F_reconstruction of every system (higher is better), as JSON."""
    _composite_generators("reconstruction", metrics_csv, weights, epsilon)


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

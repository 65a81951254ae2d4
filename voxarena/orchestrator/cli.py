"""``orchestrator``: the VoxArena command line."""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer
from rich.console import Console

from .clients import ServiceStartError
from .config import ConfigError, load_config
from .manifest import DatasetError
from .pipeline import Arena, RunError
from .summary import print_summary

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="VoxArena: every voice generator against every fake-voice detector, one to one.",
)
console = Console()
err = Console(stderr=True, soft_wrap=True)  # error lines stay whole (greppable)


@app.callback()
def _root() -> None:
    """VoxArena orchestrator."""


@app.command()
def run(
    config: Path = typer.Argument(..., help="run configuration (YAML)"),
    out: Path | None = typer.Option(None, "--out", help="run directory (default runs/<name>); rerun to resume"),
    seed: int | None = typer.Option(None, help="override protocol.seed"),
    max_items: int | None = typer.Option(None, help="override dataset.max_items"),
    data_root: str | None = typer.Option(None, help="override dataset.root"),
    retry_failed: bool = typer.Option(False, help="on resume, redo items recorded as failed"),
    progress: bool = typer.Option(True, help="show progress bars"),
    stack: str = typer.Option(
        "local",
        envvar="VOXARENA_STACK",
        help="services without an address: 'local' starts them as processes, 'compose' "
        "uses the compose service of the same name (dns:///NAME:50051, round robin)",
    ),
) -> None:
    """Plan from a frozen manifest, run every generator and detector, score, and write the run directory."""
    try:
        cfg = load_config(config, {"protocol.seed": seed, "dataset.max_items": max_items, "dataset.root": data_root})
        run_dir = out or Path("runs") / cfg.name
        t0 = time.perf_counter()
        arena = Arena(
            cfg,
            run_dir,
            config_file=config.resolve(),
            console=err,
            retry_failed=retry_failed,
            progress=progress,
            stack=stack,
        )
        record = arena.run()
    except (ConfigError, DatasetError, RunError, ServiceStartError) as e:
        err.print(f"[red]error:[/red] {e}", highlight=False)
        raise typer.Exit(2) from None
    print_summary(run_dir, console)
    gens = arena.store.generations.rows.values()
    failed = [r for r in gens if r["status"] != "ok"]
    failed += [r for r in arena.store.detections.rows.values() if r["status"] != "ok"]
    for r in failed[:10]:
        err.print(f"[yellow]failed[/yellow] {r['reason']}", highlight=False)
    if len(failed) > 10:
        err.print(f"... and {len(failed) - 10} more failures (see {run_dir}/generations.jsonl, detections.jsonl)")
    console.print(
        f"run directory: {run_dir}  wall time: {time.perf_counter() - t0:.1f} s  "
        f"manifest: {record['manifest']['items']} items ({record['manifest']['sha256'][:12]})"
    )


datasets_app = typer.Typer(no_args_is_help=True, help="Public corpora: list them, fetch one (checksum verified).")
metrics_app = typer.Typer(no_args_is_help=True, help="Metrics from files (ASVspoof score and key files).")
composite_app = typer.Typer(no_args_is_help=True, help="Composite scores of the SoK paper from any metrics table.")
app.add_typer(datasets_app, name="datasets")
app.add_typer(metrics_app, name="metrics")
app.add_typer(composite_app, name="composite")


def _fail(e: Exception) -> None:
    err.print(f"[red]error:[/red] {e}", highlight=False)
    raise typer.Exit(2)


def _print_json(data: dict) -> None:
    print(json.dumps(data, indent=2, sort_keys=True))


@metrics_app.command("detection")
def metrics_detection(
    scores: Path = typer.Option(..., help="ASVspoof 5 score file: header filename<TAB>cm-score"),
    keys: Path = typer.Option(..., help="ASVspoof 5 key file: header filename<TAB>cm-label (bonafide/spoof)"),
    p_spoof: float = typer.Option(0.05),
    c_miss: float = typer.Option(1.0),
    c_fa: float = typer.Option(10.0),
) -> None:
    """EER (a fraction), minDCF, actDCF, Cllr, minCllr and counts, as JSON (higher score = bona fide)."""
    from voxarena.stats.detection import CostModel

    from .offline import InputFileError, asvspoof_detection_metrics

    try:
        _print_json(asvspoof_detection_metrics(scores, keys, CostModel(p_spoof, c_miss, c_fa)))
    except InputFileError as e:
        _fail(e)


@metrics_app.command("export-asvspoof")
def metrics_export(run_dir: Path = typer.Argument(...), out: Path = typer.Option(..., help="output directory")) -> None:
    """Write a run's detections as ASVspoof 5 files: <detector>.scores.tsv and keys.tsv."""
    from .offline import export_asvspoof

    if not (run_dir / "detections.jsonl").exists():
        _fail(ValueError(f"{run_dir}: no detections.jsonl (not a run directory?)"))
    for path in export_asvspoof(run_dir, out):
        console.print(str(path))


def _composite_generators(kind: str, table: Path, weights: str | None, epsilon: float) -> None:
    from voxarena.stats.composite import RECONSTRUCTION_WEIGHTS, TTS_WEIGHTS

    from .offline import InputFileError, composite_generators, parse_weights

    try:
        w = parse_weights(weights, TTS_WEIGHTS if kind == "tts" else RECONSTRUCTION_WEIGHTS)
        _print_json(composite_generators(table, kind, w, epsilon))
    except InputFileError as e:
        _fail(e)


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
    from .offline import InputFileError, composite_detectors

    try:
        _print_json(composite_detectors(pairs_csv, params, alpha, challenge))
    except InputFileError as e:
        _fail(e)


@app.command()
def status(
    run_dir: Path = typer.Argument(..., help="run directory"),
    json_out: bool = typer.Option(False, "--json", help="print the coverage as JSON"),
) -> None:
    """Coverage of a run: done, failed and pending per stage and service, with failure reasons.

    Exit code 0 when every planned call is done and the metrics are written, 1 otherwise."""
    from rich.table import Table

    from .status import NotARunDirectory, run_status

    try:
        st = run_status(run_dir)
    except NotARunDirectory as e:
        err.print(f"[red]error:[/red] {e}", highlight=False)
        raise typer.Exit(2) from None
    if json_out:
        _print_json(st)
    else:
        table = Table(title=f"{st['name']}: {run_dir}  (manifest {st['manifest_sha256'][:12]})")
        for col in ("stage", "service", "expected", "done", "failed", "pending"):
            table.add_column(col, justify="left" if col in ("stage", "service") else "right")
        for r in st["coverage"]:
            table.add_row(
                r["stage"],
                r["service"],
                str(r["expected"]),
                str(r["done"]),
                f"[red]{r['failed']}[/red]" if r["failed"] else "0",
                f"[yellow]{r['pending']}[/yellow]" if r["pending"] else "0",
            )
        console.print(table)
        for r in st["coverage"]:
            for reason, n in r["failure_reasons"].items():
                console.print(f"  {r['stage']} {r['service']}: {n} x {reason}", highlight=False)
        console.print(
            "complete"
            if st["complete"]
            else "INCOMPLETE: rerun `orchestrator run` with the same config and --out to resume"
            + ("" if st["metrics_written"] else " (no metrics written yet)")
        )
    if not st["complete"]:
        raise typer.Exit(1)


@app.command()
def compare(
    baseline: Path = typer.Argument(..., help="baseline run (e.g. the pinned nightly baseline)"),
    current: Path = typer.Argument(..., help="current run"),
    thresholds: Path | None = typer.Option(None, help="YAML: detection/generation metric -> allowed worsening"),
    markdown_out: Path | None = typer.Option(None, "--markdown", help="also write the Markdown summary here"),
) -> None:
    """Regression gate: exit 1 when a metric worsens past its threshold and the bootstrap CIs say it is real."""
    from .compare import IncomparableRuns
    from .regression import ThresholdError, compare_runs, load_thresholds, markdown

    try:
        result = compare_runs(baseline, current, load_thresholds(thresholds))
    except (IncomparableRuns, ThresholdError, FileNotFoundError) as e:
        err.print(f"[red]error:[/red] cannot compare: {e}", highlight=False)
        raise typer.Exit(2) from None
    text = markdown(result)
    print(text, end="")
    if markdown_out:
        markdown_out.write_text(text)
    if result["regressions"]:
        raise typer.Exit(1)


@app.command("compare-check")
def compare_check(
    run_a: Path = typer.Argument(..., help="baseline run"), run_b: Path = typer.Argument(..., help="run to compare")
) -> None:
    """Same protocol? Manifest, seeds, tasks, scorer fingerprint, service versions and weights; exit 1 listing \
what differs."""
    from .compare import protocol_differences

    try:
        differences = protocol_differences(run_a, run_b)
    except FileNotFoundError as e:
        _fail(e)
    if differences:
        err.print(f"[red]not comparable:[/red] {run_a} vs {run_b}", highlight=False)
        for d in differences:
            err.print(f"  - {d}", highlight=False)
        raise typer.Exit(1)
    console.print(
        f"comparable: same manifest, seeds, tasks, scorer fingerprint and service versions ({run_a}, {run_b})"
    )


@app.command("compare-timing")
def compare_timing_cmd(
    run_a: Path = typer.Argument(..., help="baseline run"),
    run_b: Path = typer.Argument(..., help="run to compare"),
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Wall times per service and timing scope (matching scopes only), first request apart from the median of \
the rest."""
    from rich.table import Table

    from .compare import compare_timing

    try:
        rows = compare_timing(run_a, run_b)
    except FileNotFoundError as e:
        _fail(e)
    if json_out:
        _print_json({"run_a": str(run_a), "run_b": str(run_b), "rows": rows})
        return
    table = Table(title=f"timing: {run_b} vs {run_a} (seconds)")
    for col in ("service", "n", "first A", "first B", "median rest A", "median rest B", "B/A"):
        table.add_column(col, justify="left" if col == "service" else "right")
    notes = []
    for r in rows:
        if not r["comparable"]:
            notes.append(f"{r['service']}: scope {r['scope']!r} {r['note']}: not compared")
            continue
        fmt = lambda v: "-" if v is None else f"{v:.3f}"  # noqa: E731
        table.add_row(
            r["service"],
            f"{r['n_a']}/{r['n_b']}",
            fmt(r["first_a"]),
            fmt(r["first_b"]),
            fmt(r.get("median_rest_a")),
            fmt(r.get("median_rest_b")),
            "-" if r.get("ratio_b_over_a") is None else f"{r['ratio_b_over_a']:.2f}",
        )
    console.print(table)
    for n in notes:
        console.print(n, highlight=False)


@app.command()
def report(
    run_dir: Path = typer.Argument(..., help="run directory"),
    allow_incomplete: bool = typer.Option(False, help="report an unfinished run (marked as such) instead of refusing"),
) -> None:
    """Write RUN_DIR/report.html (one static file) and RUN_DIR/report.json."""
    from .report import ReportError, write_report
    from .status import NotARunDirectory

    try:
        json_path, html_path = write_report(run_dir, allow_incomplete)
    except (ReportError, NotARunDirectory) as e:
        err.print(f"[red]error:[/red] {e}", highlight=False)
        raise typer.Exit(1) from None
    console.print(f"wrote {html_path} and {json_path}")


@app.command()
def conformance(
    address: str = typer.Argument(..., help="host:port of a running generator or detector"),
    timeout: float = typer.Option(120.0, help="seconds per call"),
    json_out: Path | None = typer.Option(None, "--json", help="also write the report as JSON"),
    tls_ca: Path | None = typer.Option(None, help="speak TLS, trusting this CA (PEM)"),
    tls_cert: Path | None = typer.Option(None, help="client certificate for mutual TLS (PEM)"),
    tls_key: Path | None = typer.Option(None, help="key of --tls-cert (PEM)"),
    tls_server_name: str | None = typer.Option(None, help="name the server certificate carries, if not the host"),
    token_env: str | None = typer.Option(None, help="environment variable holding the bearer token to send"),
    probe_audio: Path | None = typer.Option(
        None, help="mono recording (>= 5 s) to cut the probe clips from, for services that refuse the synthetic ones"
    ),
) -> None:
    """Check a running service against the contract; exit code 1 when any check fails."""
    from rich.table import Table

    from voxarena.codec import AudioFormatError
    from voxarena.transport import ClientSecurity, TransportConfigError

    from ..conformance import probes_from_file, run_conformance

    try:
        security = ClientSecurity.from_settings(
            str(tls_ca) if tls_ca else None,
            str(tls_cert) if tls_cert else None,
            str(tls_key) if tls_key else None,
            token_env,
            tls_server_name,
        )
        probes = probes_from_file(str(probe_audio)) if probe_audio else None
    except (TransportConfigError, AudioFormatError) as e:
        _fail(e)
    except RuntimeError as e:  # soundfile's LibsndfileError: unreadable or missing file
        _fail(ValueError(f"--probe-audio {probe_audio}: {e}"))
    checks = run_conformance(address, timeout, security, probes)
    table = Table(title=f"conformance of {address}")
    for col in ("check", "result", "detail"):
        table.add_column(col)
    colour = {"PASS": "green", "FAIL": "red", "SKIP": "yellow"}
    for c in checks:
        table.add_row(c.name, f"[{colour[c.status]}]{c.status}[/{colour[c.status]}]", c.detail)
    console.print(table)
    failed = [c for c in checks if c.status == "FAIL"]
    passed = sum(c.status == "PASS" for c in checks)
    console.print(f"conformance: {passed} PASS, {len(failed)} FAIL, {len(checks) - passed - len(failed)} SKIP")
    if json_out:
        summary = {status: sum(c.status == status for c in checks) for status in ("PASS", "FAIL", "SKIP")}
        report = {
            "address": address,
            "summary": summary,
            "checks": [
                {"name": c.name, "status": c.status, "sent": c.sent, "got": c.got, "detail": c.detail} for c in checks
            ],
        }
        json_out.write_text(json.dumps(report, indent=2) + "\n")
    if failed:
        raise typer.Exit(1)


@datasets_app.command("list")
def datasets_list() -> None:
    """The corpora `datasets fetch` knows: name, size, licence, URL."""
    from .datasets import CORPORA

    for c in CORPORA.values():
        size = f"{c.size / 1e6:.0f} MB" if c.size else "size n/a"
        console.print(f"{c.name:30} {size:>10}  {c.licence}  {c.url}", highlight=False)


@datasets_app.command("fetch")
def datasets_fetch(
    name: str = typer.Argument(..., help="corpus name (see `orchestrator datasets list`)"),
    dest: Path = typer.Option(Path("data"), help="directory to unpack into (LibriSpeech lands in DEST/LibriSpeech)"),
    url: str | None = typer.Option(
        None, help="another URL for the same archive (a mirror); the checksum still applies"
    ),
) -> None:
    """Download a public corpus, verify its sha256, unpack it (resumable; a verified archive is reused)."""
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    from .datasets import FetchError, fetch

    with Progress(
        "[progress.description]{task.description}", BarColumn(), DownloadColumn(), TransferSpeedColumn(), console=err
    ) as progress:
        task = progress.add_task(name, total=None)
        try:
            fetch(name, dest, url, lambda done, total: progress.update(task, completed=done, total=total))
        except FetchError as e:
            err.print(f"[red]error:[/red] {e}", highlight=False)
            raise typer.Exit(1) from None
    console.print(f"{name}: verified and unpacked in {dest}")


def main() -> None:
    app()


if __name__ == "__main__":
    main()

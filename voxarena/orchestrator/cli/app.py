"""``orchestrator``: the VoxArena command line.

``run`` and ``conformance`` are here; the commands on run directories are in ``cli.runs``, the
``datasets`` group in ``cli.datasets``, and the ``metrics`` and ``composite`` groups (files in, no
service) in ``cli.offline``. All of them are commands of the one ``app`` below.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import typer

from voxarena.orchestrator import ctrl_c
from voxarena.orchestrator.cli.datasets import datasets_app
from voxarena.orchestrator.cli.offline import composite_app, metrics_app
from voxarena.orchestrator.cli.output import LogFormat, ProgressEvery, check_log_format, console, err, fail
from voxarena.orchestrator.cli.runs import (
    compare,
    compare_check,
    compare_timing_cmd,
    export_labels_cmd,
    leaderboard,
    merge,
    report,
    status,
)
from voxarena.orchestrator.cli.triage import explain
from voxarena.orchestrator.fleet.clients import ServiceStartError
from voxarena.orchestrator.metrics.scorer_client import MetricsInterrupted
from voxarena.orchestrator.run import run_metrics
from voxarena.orchestrator.run.config import ConfigError, load_config
from voxarena.orchestrator.run.manifest import DatasetError
from voxarena.orchestrator.run.pipeline import Arena, RunError
from voxarena.orchestrator.run.shard import Shard, ShardError
from voxarena.orchestrator.run.status import run_status
from voxarena.orchestrator.store.outcome import EXIT_RETRY
from voxarena.orchestrator.store.records import Row
from voxarena.orchestrator.store.run_store import RunDirError
from voxarena.orchestrator.store.summary import print_summary

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="VoxArena: every voice generator against every fake-voice detector, one to one.",
)


# Off a terminal (a log file, CI, a Kubernetes Job) runs print progress lines instead of bars (run/progress_lines.py).
MetricsPort = typer.Option(
    None,
    envvar="VOXARENA_METRICS_PORT",
    help="serve Prometheus metrics (run progress, failures) on http://0.0.0.0:PORT/metrics while it works",
)


def serve_metrics(port: int | None) -> None:
    if port is None:
        return
    try:
        bound = run_metrics.serve(port)
    except OSError as e:
        err.print(f"[red]error:[/red] cannot serve metrics on port {port}: {e}", highlight=False)
        raise typer.Exit(2) from None
    err.print(f"Prometheus metrics on port {bound} (/metrics)", highlight=False)


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
    retry_failed: bool = typer.Option(
        False, help="on resume, also redo items that failed for good (transient failures are always retried)"
    ),
    progress: bool = typer.Option(True, help="show progress bars (off a terminal: progress lines)"),
    progress_every: float = ProgressEvery,
    log_format: str = LogFormat,
    metrics_port: int | None = MetricsPort,
    stack: str = typer.Option(
        "local",
        envvar="VOXARENA_STACK",
        help="services without an address: 'local' starts them as processes, 'compose' "
        "uses the compose service of the same name (dns:///NAME:50051, round robin)",
    ),
    shard: str | None = typer.Option(
        None,
        help="K/N: run only shard K (0-based, as $JOB_COMPLETION_INDEX) of N, the items with "
        "sha256(id) mod N = K; no metrics: `orchestrator merge` makes one run of the N shards",
    ),
) -> None:
    """Plan from a frozen manifest, run every generator and detector, score, and write the run directory.

    Exit code 0 when complete; 2 when the run cannot be done (config, dataset, services, run directory);
    3 when it ends incomplete and a rerun retries (transient failures, or the scorer failed while computing the
    metrics); 4 with permanent failures only. A shard is complete without metrics."""
    ctrl_c.install()
    check_log_format(log_format)
    serve_metrics(metrics_port)
    try:
        part = Shard.parse(shard) if shard is not None else None
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
            progress_every=progress_every,
            log_format=log_format,
            stack=stack,
            shard=part,
        )
        record = arena.run()
    except MetricsInterrupted as e:  # every row is kept: a rerun computes the metrics
        err.print(f"[red]error:[/red] {e}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_RETRY) from None
    except (ConfigError, DatasetError, RunError, ServiceStartError, ShardError) as e:
        err.print(f"[red]error:[/red] {e}", highlight=False)
        raise typer.Exit(2) from None
    except OSError as e:  # a write outside the run store (manifest, metrics, coverage, logs): a full disk
        where = Path(e.filename) if e.filename else (out or Path("runs"))
        err.print(f"[red]error:[/red] {RunDirError.of('write it', where, e)}", highlight=False)
        raise typer.Exit(2) from None
    if part is None:  # a shard has no metrics to summarise
        print_summary(run_dir, console)
    failed: list[Row] = [r for r in arena.store.generations.rows.values() if not r.ok]
    failed += [r for r in arena.store.detections.rows.values() if not r.ok]
    for r in failed[:10]:
        err.print(f"[yellow]failed[/yellow] {r.reason}", highlight=False)
    if len(failed) > 10:
        err.print(f"... and {len(failed) - 10} more failures (see {run_dir}/generations.jsonl, detections.jsonl)")
    console.print(
        f"run directory: {run_dir}  wall time: {time.perf_counter() - t0:.1f} s  "
        f"manifest: {record['manifest']['items']} items ({record['manifest']['sha256'][:12]})"
        + (f", shard {part}: {record['shard']['items']} of them" if part else "")
    )
    outcome = run_status(run_dir)["outcome"]
    console.print(outcome["summary"], highlight=False, soft_wrap=True)
    if outcome["exit_code"]:
        raise typer.Exit(outcome["exit_code"])


@app.command()
def race(
    race_file: Path = typer.Argument(..., help="race file (YAML): training and evaluation configs, rounds, retrain"),
    out: Path | None = typer.Option(None, "--out", help="race directory (default runs/<name>); rerun to resume"),
    progress: bool = typer.Option(True, help="show progress bars (off a terminal: progress lines)"),
    progress_every: float = ProgressEvery,
    log_format: str = LogFormat,
    metrics_port: int | None = MetricsPort,
) -> None:
    """The arms race: round 0 trains the retrained detectors on the seen generators and evaluates every
    generator; each later round adds the most evasive generator to training, retrains, evaluates again.

    Writes OUT/race.json, race_metrics.csv, race.html (EER per detector per round on seen, added and
    never-seen generators) and one run directory per round. Exit codes as `orchestrator run`: 0 complete,
    2 when the race cannot be run, 3 when a round ended incomplete (rerun to resume)."""
    from voxarena.orchestrator.race.rounds import Race, RaceError, RaceIncomplete, load_race

    check_log_format(log_format)
    serve_metrics(metrics_port)
    try:
        loaded = load_race(race_file)
        race_dir = out or Path("runs") / loaded.cfg.name
        t0 = time.perf_counter()
        race = Race(
            loaded, race_dir, console=err, progress=progress, progress_every=progress_every, log_format=log_format
        )
        record = race.run()
    except (RaceIncomplete, MetricsInterrupted) as e:
        err.print(f"[red]error:[/red] {e}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_RETRY) from None
    except (RaceError, ConfigError, DatasetError, RunError, ServiceStartError) as e:
        err.print(f"[red]error:[/red] {e}", highlight=False)
        raise typer.Exit(2) from None
    added = [r["added"] for r in record["rounds"] if r["added"]]
    console.print(
        f"race directory: {race_dir}  rounds: {len(record['rounds'])}  added: {', '.join(added) or 'none'}  "
        f"wall time: {time.perf_counter() - t0:.1f} s\nchart: {race_dir / 'race.html'}",
        highlight=False,
    )


# `orchestrator --help` lists the commands in the order they are registered.
app.command()(status)
app.command()(explain)
app.command()(compare)
app.command("compare-check")(compare_check)
app.command("compare-timing")(compare_timing_cmd)
app.command()(report)
app.command()(merge)
app.command()(leaderboard)
app.command("export-labels")(export_labels_cmd)
app.add_typer(datasets_app, name="datasets")
app.add_typer(metrics_app, name="metrics")
app.add_typer(composite_app, name="composite")


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
    strict: bool = typer.Option(False, "--strict", help="a broken SHOULD rule (WARN) fails too: exit code 1"),
) -> None:
    """Check a running service against the contract (the MUST and SHOULD rules of proto/voxarena/v1);
    exit code 1 when a MUST rule is broken."""
    from rich.table import Table

    from voxarena.codec import AudioFormatError
    from voxarena.conformance import probes_from_file, run_conformance
    from voxarena.conformance.cli import exit_code, json_report, rule_label, summary
    from voxarena.transport import ClientSecurity, TransportConfigError

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
        fail(e)
    except RuntimeError as e:  # soundfile's LibsndfileError: unreadable or missing file
        fail(ValueError(f"--probe-audio {probe_audio}: {e}"))
    checks = run_conformance(address, timeout, security, probes)
    table = Table(title=f"conformance of {address}")
    for col in ("check", "rule", "result", "detail"):
        table.add_column(col)
    colour = {"PASS": "green", "FAIL": "red", "WARN": "magenta", "SKIP": "yellow"}
    for c in checks:
        table.add_row(c.name, rule_label(c), f"[{colour[c.status]}]{c.status}[/{colour[c.status]}]", c.detail)
    console.print(table)
    broken = {c.rule.id: c.rule for c in checks if c.rule and c.status in ("FAIL", "WARN")}
    for r in broken.values():
        console.print(f"{r.grade} [{r.id}] ({r.where}): {r.text}", markup=False)
    console.print(summary(checks))
    if json_out:
        json_out.write_text(json.dumps(json_report(address, checks), indent=2) + "\n")
    if exit_code(checks, strict):
        raise typer.Exit(1)


def main() -> None:
    app()


if __name__ == "__main__":
    main()

"""The commands that read run directories: ``status``, ``compare``, ``compare-check``,
``compare-timing``, ``report`` and ``merge`` (registered on the one app in ``cli``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from voxarena.orchestrator.cli.output import LogFormat, ProgressEvery, console, err, fail, print_json
from voxarena.orchestrator.cli.triage import PLATFORM_HELP, print_failed

BaselineRun = Annotated[Path, typer.Argument(help="baseline run")]
ComparedRun = Annotated[Path, typer.Argument(help="run to compare")]


def status(
    run_dir: Path = typer.Argument(..., help="run directory"),
    json_out: bool = typer.Option(False, "--json", help="print the coverage (with --failed: the rows) as JSON"),
    failed: bool = typer.Option(
        False,
        "--failed",
        help="list each failed row: id, kind, code, reason and the log to read (tab-separated "
        "when piped); `orchestrator explain RUN ID` then shows one",
    ),
    stage: str | None = typer.Option(
        None, help="with --failed: only generation, degradation, detection or measurement"
    ),
    service: str | None = typer.Option(None, help="with --failed: only this service (or DETECTOR@CONDITION)"),
    platform: str = typer.Option("auto", envvar="VOXARENA_PLATFORM", help="with --failed: " + PLATFORM_HELP),
) -> None:
    """Coverage of a run: done, failed and pending per stage and service, with failure reasons.

    Exit code 0 when every planned call is done, none failed and the metrics are written; 3 when a rerun
    has work to do (transient failures, pending work, metrics); 4 when only permanent failures remain."""
    from rich.table import Table

    from voxarena.orchestrator.run.status import NotARunDirectory, run_status

    try:
        st = run_status(run_dir)
    except NotARunDirectory as e:
        err.print(f"[red]error:[/red] {e}", highlight=False)
        raise typer.Exit(2) from None
    if failed:
        print_failed(run_dir, stage, service, platform, json_out)
    elif json_out:
        print_json(st)
    else:
        part = f", shard {st['shard']}" if st["shard"] else ""
        table = Table(title=f"{st['name']}: {run_dir}  (manifest {st['manifest_sha256'][:12]}{part})")
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
        console.print(st["outcome"]["summary"], highlight=False, soft_wrap=True)
    if st["outcome"]["exit_code"]:
        raise typer.Exit(st["outcome"]["exit_code"])


def compare(
    baseline: Path = typer.Argument(..., help="baseline run (e.g. the pinned nightly baseline)"),
    current: Path = typer.Argument(..., help="current run"),
    thresholds: Path | None = typer.Option(None, help="YAML: detection/generation metric -> allowed worsening"),
    markdown_out: Path | None = typer.Option(None, "--markdown", help="also write the Markdown summary here"),
) -> None:
    """Regression gate: exit 1 when a metric worsens past its threshold and the bootstrap CIs say it is real."""
    from voxarena.orchestrator.metrics.compare import IncomparableRuns
    from voxarena.orchestrator.metrics.regression import ThresholdError, compare_runs, load_thresholds, markdown

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


def compare_check(run_a: BaselineRun, run_b: ComparedRun) -> None:
    """Same protocol? Manifest, seeds, tasks, scorer fingerprint, service versions and weights; exit 1 listing \
what differs."""
    from voxarena.orchestrator.metrics.compare import protocol_differences

    try:
        differences = protocol_differences(run_a, run_b)
    except FileNotFoundError as e:
        fail(e)
    if differences:
        err.print(f"[red]not comparable:[/red] {run_a} vs {run_b}", highlight=False)
        for d in differences:
            err.print(f"  - {d}", highlight=False)
        raise typer.Exit(1)
    console.print(
        f"comparable: same manifest, seeds, tasks, scorer fingerprint and service versions ({run_a}, {run_b})"
    )


def compare_timing_cmd(
    run_a: BaselineRun,
    run_b: ComparedRun,
    json_out: bool = typer.Option(False, "--json"),
) -> None:
    """Wall times per service and timing scope (matching scopes only), first request apart from the median of \
the rest."""
    from rich.table import Table

    from voxarena.orchestrator.metrics.compare import compare_timing

    try:
        rows = compare_timing(run_a, run_b)
    except FileNotFoundError as e:
        fail(e)
    if json_out:
        print_json({"run_a": str(run_a), "run_b": str(run_b), "rows": rows})
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


def report(
    run_dir: Path = typer.Argument(..., help="run directory"),
    allow_incomplete: bool = typer.Option(False, help="report an unfinished run (marked as such) instead of refusing"),
) -> None:
    """Write RUN_DIR/report.html (one static file) and RUN_DIR/report.json."""
    from voxarena.orchestrator.report.build import ReportError, write_report
    from voxarena.orchestrator.run.status import NotARunDirectory

    try:
        json_path, html_path = write_report(run_dir, allow_incomplete)
    except (ReportError, NotARunDirectory) as e:
        err.print(f"[red]error:[/red] {e}", highlight=False)
        raise typer.Exit(1) from None
    console.print(f"wrote {html_path} and {json_path}")


def leaderboard(
    run_dirs: list[Path] = typer.Argument(..., help="run directories (e.g. runs/nightly/20*/)"),
    out: Path = typer.Option(..., "--out", help="the site's directory (index.html, cells/)"),
) -> None:
    """A static leaderboard over many runs: the newest run's matrix with ranks (a cell not fully measured is not
    ranked), each cell's history with the service changes and the changes the CIs confirm, each detector's
    half-life; runs of another protocol are listed apart with the difference."""
    from voxarena.orchestrator.report.leaderboard import LeaderboardError, build_leaderboard
    from voxarena.orchestrator.report.leaderboard_site import write_site

    try:
        board = build_leaderboard(run_dirs)
        index = write_site(board, out)
    except LeaderboardError as e:
        err.print(f"[red]error:[/red] {e}", highlight=False)
        raise typer.Exit(1) from None
    console.print(
        f"wrote {index}: {len(board.series)} runs in the series, {len(board.apart)} listed apart",
        highlight=False,
        soft_wrap=True,
    )


def merge(
    shard_dirs: list[Path] = typer.Argument(..., help="the N shard directories (orchestrator run --shard K/N)"),
    out: Path = typer.Option(..., "--out", help="the merged run directory (new, or an earlier merge to redo)"),
    stack: str = typer.Option(
        "local", envvar="VOXARENA_STACK", help="how to reach the scorer, as for `orchestrator run`"
    ),
    allow_incomplete: bool = typer.Option(
        False, help="merge shards with failed or pending rows as they are (the merged run is then incomplete)"
    ),
    progress_every: float = ProgressEvery,
    log_format: str = LogFormat,
) -> None:
    """Merge the shards of a sharded run into one run directory and compute its metrics once, over the union.

    Refuses (exit 2), naming the directory and why: a shard of another run (manifest, config, services,
    N), a missing or duplicated shard, an incomplete shard (unless --allow-incomplete), rows that are not
    the plan's exactly once. Then exit codes as `orchestrator run`: 0 complete, 3 or 4 incomplete."""
    from voxarena.orchestrator.errors import RunError
    from voxarena.orchestrator.fleet.clients import ServiceStartError
    from voxarena.orchestrator.metrics.scorer_client import MetricsInterrupted
    from voxarena.orchestrator.run.merge import MergeSteps
    from voxarena.orchestrator.run.merge import merge as merge_shards
    from voxarena.orchestrator.run.progress_lines import FORMATS, ProgressLines
    from voxarena.orchestrator.run.shard import ShardError
    from voxarena.orchestrator.run.status import run_status
    from voxarena.orchestrator.store.outcome import EXIT_RETRY
    from voxarena.orchestrator.store.summary import print_summary

    if log_format not in FORMATS:
        err.print(f"[red]error:[/red] --log-format {log_format!r}: choose one of {', '.join(FORMATS)}")
        raise typer.Exit(2)
    steps = MergeSteps()
    lines = None
    if not err.is_terminal and progress_every > 0:  # a log file, a CI job: a line every progress_every seconds
        lines = ProgressLines(err, steps.snapshot, dict, progress_every, log_format).start()
    try:
        record = merge_shards(shard_dirs, out, stack, allow_incomplete, steps)
    except MetricsInterrupted as e:  # the merged rows are kept: merging again computes the metrics
        err.print(f"[red]error:[/red] {e}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_RETRY) from None
    except (ShardError, RunError, ServiceStartError) as e:
        err.print(f"[red]error:[/red] cannot merge: {e}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    finally:
        if lines is not None:
            lines.stop()
    print_summary(out, console)
    console.print(
        f"merged {len(record['merged_from'])} shards into {out}  "
        f"manifest: {record['manifest']['items']} items ({record['manifest']['sha256'][:12]})"
    )
    outcome = run_status(out)["outcome"]
    console.print(outcome["summary"], highlight=False, soft_wrap=True)
    if outcome["exit_code"]:
        raise typer.Exit(outcome["exit_code"])


def export_labels_cmd(
    run_dir: Path = typer.Argument(..., help="run directory"),
    fmt: str = typer.Option(
        "rttm", "--format", help="rttm (labels.rttm) or partialspoof (seglab_<resolution>.npy/.txt)"
    ),
    out: Path | None = typer.Option(None, help="output directory (default: RUN/labels)"),
) -> None:
    """The exact truth of every clip the run scored (which samples are fake: bona fide items none, generated
    clips all, partial fakes their spans), as RTTM or PartialSpoof segment labels, with clips.tsv."""
    from voxarena.orchestrator.store.labels import export_labels

    try:
        written = export_labels(run_dir, fmt, out or run_dir / "labels")
    except (FileNotFoundError, ValueError) as e:
        fail(e)
    for path in written:
        console.print(str(path), highlight=False)

"""Where the command line writes: results to stdout (``console``, ``print_json``), errors and
progress bars to stderr (``err``); ``fail`` ends a command on a bad input with exit code 2."""

from __future__ import annotations

import json

import typer
from rich.console import Console

console = Console()
err = Console(stderr=True, soft_wrap=True)  # error lines stay whole (greppable)


def fail(e: Exception) -> None:
    err.print(f"[red]error:[/red] {e}", highlight=False)
    raise typer.Exit(2)


# Progress off a terminal (run, race, merge): voxarena/orchestrator/run/progress_lines.py.
ProgressEvery = typer.Option(30.0, help="off a terminal: seconds between progress lines (0: none)")
LogFormat = typer.Option("text", help="progress lines as text or json (one object per line)")


def check_log_format(log_format: str) -> None:
    from voxarena.orchestrator.run.progress_lines import FORMATS

    if log_format not in FORMATS:
        err.print(f"[red]error:[/red] --log-format {log_format!r}: choose one of {', '.join(FORMATS)}")
        raise typer.Exit(2)


def print_json(data: dict) -> None:
    print(json.dumps(data, indent=2, sort_keys=True))

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


def print_json(data: dict) -> None:
    print(json.dumps(data, indent=2, sort_keys=True))

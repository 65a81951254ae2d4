"""``orchestrator``: the VoxArena command line."""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console

from .clients import ServiceStartError
from .config import ConfigError, load_config
from .manifest import DatasetError
from .pipeline import Arena, RunError
from .summary import print_summary

app = typer.Typer(add_completion=False, no_args_is_help=True, help="VoxArena: every voice generator against every "
                  "fake-voice detector, one to one.")
console = Console()
err = Console(stderr=True)


@app.callback()
def _root() -> None:
    """VoxArena orchestrator."""


@app.command()
def run(
    config: Path = typer.Argument(..., help="run configuration (YAML)"),
    out: Optional[Path] = typer.Option(None, "--out", help="run directory (default runs/<name>); rerun to resume"),
    seed: Optional[int] = typer.Option(None, help="override protocol.seed"),
    max_items: Optional[int] = typer.Option(None, help="override dataset.max_items"),
    data_root: Optional[str] = typer.Option(None, help="override dataset.root"),
    retry_failed: bool = typer.Option(False, help="on resume, redo items recorded as failed"),
    progress: bool = typer.Option(True, help="show progress bars"),
) -> None:
    """Plan from a frozen manifest, run every generator and detector, score, and write the run directory."""
    try:
        cfg = load_config(config, {"protocol.seed": seed, "dataset.max_items": max_items, "dataset.root": data_root})
        run_dir = out or Path("runs") / cfg.name
        t0 = time.perf_counter()
        arena = Arena(cfg, run_dir, config_file=config.resolve(), console=err, retry_failed=retry_failed,
                      progress=progress)
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
    console.print(f"run directory: {run_dir}  wall time: {time.perf_counter() - t0:.1f} s  "
                  f"manifest: {record['manifest']['items']} items ({record['manifest']['sha256'][:12]})")


def main() -> None:
    app()


if __name__ == "__main__":
    main()

"""``orchestrator datasets list`` and ``orchestrator datasets fetch``: the public corpora."""

from __future__ import annotations

from pathlib import Path

import typer

from voxarena.orchestrator.cli.output import console, err

datasets_app = typer.Typer(no_args_is_help=True, help="Public corpora: list them, fetch one (checksum verified).")


@datasets_app.command("list")
def datasets_list() -> None:
    """The corpora `datasets fetch` knows: name, size, licence, URL."""
    from voxarena.orchestrator.run.datasets import CORPORA

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

    from voxarena.orchestrator.run.datasets import FetchError, fetch

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

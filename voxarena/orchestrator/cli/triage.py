"""Failure triage on a run directory: ``orchestrator status RUN --failed`` lists each failed row with the
log to read, and ``orchestrator explain RUN ID`` shows one row, what was sent for it and the lines of its
services' logs that name its request id.

Rows come from ``store.triage``, the requests from ``run.sent_requests`` (the stages' own builders), the
logs from ``fleet.service_logs`` (a file, a container through the docker SDK, or the command to run).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from voxarena.orchestrator.cli.output import console, err, fail
from voxarena.orchestrator.fleet.service_logs import (
    PLATFORMS,
    LogSource,
    LogUnavailable,
    lines_naming,
    log_source,
    resolve_platform,
)
from voxarena.orchestrator.run.manifest import ManifestSet
from voxarena.orchestrator.run.status import NotARunDirectory
from voxarena.orchestrator.store.triage import STAGES, TABLES, RunRow, RunTables, UnknownRow

PLATFORM_HELP = (
    "where the services of a --stack compose run live, which run.json cannot tell: "
    f"{', '.join(PLATFORMS)} (auto: kubernetes inside a pod, else compose)"
)
TSV_COLUMNS = ("stage", "id", "service", "kind", "code", "log", "reason")


def _record(run_dir: Path) -> dict[str, Any]:
    path = run_dir / "run.json"
    if not path.exists() or not (run_dir / "manifest.jsonl").exists():
        raise NotARunDirectory(f"{run_dir}: not a run directory (no run.json and manifest.jsonl)")
    record: dict[str, Any] = json.loads(path.read_text())
    return record


class Triage:
    """One run directory's rows and the logs of its services (each log read at most once)."""

    def __init__(self, run_dir: Path, platform: str) -> None:
        self.run_dir, self.platform = run_dir, resolve_platform(platform)
        self.record = _record(run_dir)
        self.tables = RunTables(run_dir, self.record)
        self._sources: dict[str, LogSource] = {}
        self._lines: dict[str, list[str] | LogUnavailable] = {}

    def source(self, service: str) -> LogSource:
        if service not in self._sources:
            self._sources[service] = log_source(self.run_dir, self.record, service, self.platform)
        return self._sources[service]

    def log_of(self, row: RunRow) -> str:
        """Where to read about ``row``: its first service's log (the orchestrator's own steps have none)."""
        return self.source(row.services[0]).where() if row.services else "-"

    def failed_record(self, row: RunRow) -> dict[str, str]:
        return {
            "stage": row.stage,
            "id": row.id,
            "service": row.label,
            "kind": row.kind,
            "code": row.code,
            "log": self.log_of(row),
            "reason": row.reason,
        }

    def log_lines(self, service: str, request_id: str) -> list[tuple[int, str]] | LogUnavailable:
        if service not in self._lines:
            try:
                self._lines[service] = self.source(service).lines()
            except LogUnavailable as e:
                self._lines[service] = e
        lines = self._lines[service]
        return lines if isinstance(lines, LogUnavailable) else lines_naming(lines, [request_id])


def _check_stage(stage: str | None) -> None:
    if stage is not None and stage not in STAGES:
        fail(ValueError(f"--stage {stage}: not a stage; use one of {', '.join(STAGES)}"))


def print_failed(run_dir: Path, stage: str | None, service: str | None, platform: str, json_out: bool) -> None:
    """``status --failed``: every failed row, a table on a terminal, tab-separated when piped, or JSON."""
    _check_stage(stage)
    try:
        triage = Triage(run_dir, platform)
    except (NotARunDirectory, ValueError) as e:
        fail(e)
    rows = [triage.failed_record(r) for r in triage.tables.failed(stage, service)]
    if json_out:
        print(json.dumps({"run_dir": str(run_dir), "failed": rows}, indent=2))
    elif console.is_terminal:
        _print_table(run_dir, rows)
    else:  # one row per line, for grep, cut and awk; tabs and newlines in a reason become spaces
        print("\t".join(TSV_COLUMNS))
        for r in rows:
            print("\t".join(" ".join(r[c].split()) for c in TSV_COLUMNS))
    if not rows and not json_out:
        err.print(f"no failed rows{_filters(stage, service)} in {run_dir}", highlight=False)


def _filters(stage: str | None, service: str | None) -> str:
    said = [f"stage {stage}" if stage else "", f"service {service}" if service else ""]
    return f" ({', '.join(s for s in said if s)})" if stage or service else ""


def _print_table(run_dir: Path, rows: list[dict[str, str]]) -> None:
    from rich.table import Table

    table = Table(title=f"failed rows of {run_dir}: {len(rows)}", show_lines=True)
    for col in TSV_COLUMNS:
        table.add_column(col, overflow="fold", style="red" if col == "kind" else None)
    for r in rows:
        table.add_row(*(r[c] for c in TSV_COLUMNS))
    console.print(table)
    console.print(f"orchestrator explain {run_dir} ID: the row, what was sent and its log lines", highlight=False)


def explain(
    run_dir: Path = typer.Argument(..., help="run directory"),
    row_id: str = typer.Argument(..., metavar="ID", help="a row's id (orchestrator status RUN --failed lists them)"),
    platform: str = typer.Option("auto", envvar="VOXARENA_PLATFORM", help=PLATFORM_HELP),
    json_out: bool = typer.Option(False, "--json", help="print it all as JSON"),
) -> None:
    """One row of a run: the row, what was sent for it (rebuilt by the run's own request builders from the
    manifest, the rows and the resolved config) and the lines of its services' logs that name its request id.

    Exit code 2 when ID is no row's (the closest ids are named) or RUN_DIR is not a run directory."""
    from voxarena.orchestrator.run.sent_requests import SentRequests

    try:
        triage = Triage(run_dir, platform)
        found = triage.tables.find(row_id)
        manifest = ManifestSet.from_file(run_dir / "manifest.jsonl")
    except (NotARunDirectory, UnknownRow, ValueError) as e:
        fail(e)
    requests = SentRequests(run_dir, triage.record, manifest, triage.tables)
    report = [_explained(triage, requests, r) for r in found]
    if json_out:
        print(json.dumps({"run_dir": str(run_dir), "rows": report}, indent=2, default=str))
        return
    for part in report:
        _print_explained(part)


def _explained(triage: Triage, requests: Any, row: RunRow) -> dict[str, Any]:
    """A row, what was sent for it and, per service, its log and the lines naming the request id."""
    logs = []
    for service, request_id in row.request_ids.items():
        source = triage.source(service)
        entry: dict[str, Any] = {"service": service, "request_id": request_id, "log": source.where()}
        if not request_id:
            entry["unavailable"] = "its requests name no clip: nothing to search for"
            logs.append(entry)
            continue
        entry["grep"] = source.grep(request_id)
        found = triage.log_lines(service, request_id)
        if isinstance(found, LogUnavailable):
            entry["unavailable"] = str(found)
        else:
            entry["lines"] = [{"line": n, "text": text} for n, text in found]
        logs.append(entry)
    return {
        "stage": row.stage,
        "table": TABLES[row.stage],
        "kind": row.kind,
        "row": row.row,
        "sent": [s.as_dict() for s in requests.of(row)],
        "logs": logs,
    }


def _say(text: str) -> None:
    """A line as it is (ids hold brackets and pipes), never wrapped, so it stays greppable."""
    console.print(text, highlight=False, markup=False, soft_wrap=True)


def _print_explained(part: dict[str, Any]) -> None:
    head = f"{part['stage']} row ({part['table']})" + ("" if part["kind"] == "ok" else f": {part['kind']}")
    console.rule(head)
    console.print_json(data=part["row"])
    for sent in part["sent"]:
        to = f" to {sent['service']}" if sent["service"] else ""
        _say(f"sent{to}: {sent['method'] or '-'}" + (f"  ({sent['note']})" if sent["note"] else ""))
        if sent["request"] is not None:
            console.print_json(data=sent["request"])
        for name, f in sent["inputs"].items():
            _say(f"  {name} <- {f['what']}: {f['path']} (sha256 {f['sha256'][:16]})")
    for log in part["logs"]:
        _say(f"log of {log['service']}: {log['log']}")
        if "unavailable" in log:
            _say(f"  {log['unavailable']}")
        elif not log["lines"]:
            _say(f"  no line names {log['request_id']!r}")
        for line in log.get("lines", []):
            _say(f"  {line['line']}: {line['text']}")
        if "grep" in log:
            _say(f"  search it yourself: {log['grep']}")

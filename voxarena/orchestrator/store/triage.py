"""The failed rows of a run directory, and any row by its id: what ``orchestrator status --failed`` lists
and ``orchestrator explain`` starts from.

A row is found in the table of its stage (generations, degradations, detections, measurements); its
kind is ``failures.failure_kind`` (the one enum). Each row names the services that served it, so the
command line can point at their logs; which id each service was sent for the row (``request_ids``) is
read off the stages: a generation, a detection and a measurement are sent under the row's own id, a
degradation's transform steps under ``<transform>|<row id>`` (``degrade``). Read-only: nothing here
opens the store for writing, so it is safe beside a running orchestrator.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from voxarena.orchestrator.store.failures import failure_kind
from voxarena.orchestrator.store.records import Row
from voxarena.orchestrator.store.run_store import CLEAN, condition_of, detector_label, read_jsonl

# Stage -> its table, in the order a clip goes through them.
TABLES = {
    "generation": "generations.jsonl",
    "degradation": "degradations.jsonl",
    "detection": "detections.jsonl",
    "measurement": "measurements.jsonl",
    "stream": "streams.jsonl",
}
STAGES = tuple(TABLES)
# What the ids of each stage look like, for an id that matches none.
ID_SHAPES = {
    "generation": "GENERATOR|TASK|ITEM (I2D iterations: ...|i2dK)",
    "degradation": "CONDITION|CLIP",
    "detection": "DETECTOR|CLIP or DETECTOR@CONDITION|CLIP (CLIP: an item id or a generation id)",
    "measurement": "the generation id of the clip measured",
    "stream": "DETECTOR|CLIP (the same id as the clip's clean detection)",
}


class UnknownRow(LookupError):
    """No row has the id: the message says what ids look like and names the closest ones."""


@dataclass(frozen=True)
class RunRow:
    """One row of a run's tables, with the stage it belongs to and the services that served it."""

    stage: str
    row: dict[str, Any]
    services: tuple[str, ...] = field(default=())  # whose logs tell about it; first: the one it names
    request_ids: dict[str, str] = field(default_factory=dict)  # service -> the request id it was sent

    @property
    def id(self) -> str:
        return str(self.row["id"])

    @property
    def failed(self) -> bool:
        return self.row.get("status") != "ok"

    @property
    def kind(self) -> str:
        return failure_kind(Row.from_dict(self.row)) if self.failed else "ok"

    @property
    def code(self) -> str:
        return str(self.row.get("code", ""))

    @property
    def reason(self) -> str:
        return str(self.row.get("reason", ""))

    @property
    def label(self) -> str:
        """The service as ``status`` names it: a detector under a condition is ``detector@condition``."""
        if self.stage == "detection":
            return detector_label(self.row["detector"], condition_of(self.row))
        if self.stage == "degradation":
            return str(self.row.get("condition", ""))
        return self.services[0] if self.services else ""

    def matches(self, stage: str | None, service: str | None) -> bool:
        """Kept by the filters: ``service`` is a service that served it or its ``status`` label."""
        return (stage is None or self.stage == stage) and (
            service is None or service == self.label or service in self.services
        )


class RunTables:
    """The rows of a run directory, read once, with what its run.json says of its conditions."""

    def __init__(self, run_dir: Path, record: dict[str, Any]) -> None:
        self.run_dir = run_dir
        self.tables = {stage: read_jsonl(run_dir / name) for stage, name in TABLES.items()}
        self.conditions: dict[str, list[dict[str, Any]]] = record.get("config", {}).get("conditions", {}) or {}

    def condition_services(self, condition: str) -> dict[str, str]:
        """The services a condition's steps call, each with the request id they send for a clip's
        degradation ``CONDITION|CLIP``: transforms ``<transform>|<id>``; an attack's target detector
        is sent numbered queries (``attack-N``) that name no clip."""
        out: dict[str, str] = {}
        for step in self.conditions.get(condition, []):
            if step.get("transform"):
                out[step["transform"]] = f"{step['transform']}|{{id}}"
            elif step.get("attack"):
                out.setdefault(step["attack"]["target"], "")
        return out

    def of(self, stage: str, row: dict[str, Any]) -> RunRow:
        """``row`` of ``stage`` with the services that served it and the id each was sent."""
        rid = str(row["id"])
        if stage == "generation":
            services = {row["generator"]: rid}
        elif stage in ("measurement", "stream"):
            services = {"scorer" if stage == "measurement" else row["detector"]: rid}
        elif stage == "degradation":
            services = {s: f.format(id=rid) for s, f in self.condition_services(row.get("condition", "")).items()}
        else:  # a detection: the detector, and the transforms of its condition, which made what it was sent
            condition = condition_of(row)
            key = f"{condition}|{row['clip']}"
            services = {row["detector"]: rid}
            if condition != CLEAN:
                services.update({s: f.format(id=key) for s, f in self.condition_services(condition).items()})
        return RunRow(stage, row, tuple(services), services)

    def rows(self, stage: str | None = None) -> list[RunRow]:
        return [self.of(s, r) for s in STAGES if stage in (None, s) for _, r in sorted(self.tables[s].items())]

    def failed(self, stage: str | None = None, service: str | None = None) -> list[RunRow]:
        """Every failed row (the latest row per id), in stage then id order, kept by the filters."""
        return [r for r in self.rows(stage) if r.failed and r.matches(None, service)]

    def find(self, row_id: str) -> list[RunRow]:
        """Every row with ``row_id`` (a generation and its measurement share theirs), in stage order;
        an unknown id raises ``UnknownRow`` naming the closest ids and what ids look like."""
        found = [self.of(s, t[row_id]) for s, t in self.tables.items() if row_id in t]
        if found:
            return found
        every = sorted({i for t in self.tables.values() for i in t})
        close = difflib.get_close_matches(row_id, every, n=5, cutoff=0.6)
        hint = f"; did you mean: {', '.join(close)}" if close else ""
        shapes = "; ".join(f"{s}: {shape}" for s, shape in ID_SHAPES.items())
        raise UnknownRow(f"{self.run_dir}: no row has the id {row_id!r}{hint}. Ids look like: {shapes}")

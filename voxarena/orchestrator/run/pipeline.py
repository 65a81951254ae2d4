"""One arena run: freeze the manifest, start or reach the services, generate, detect, measure, score.

``Arena`` wires the parts, each in its own module: the service fleet (``fleet``), the expected work
(``plan``), the stages that do it (``stages``: generate, degrade, detect, measure) and the
dispatcher that keeps every service busy (``dispatch``). Each call has a deadline and only
UNAVAILABLE is retried. Every response is validated; a failure becomes a row with its reason
(``failures``) and the run goes on. Records are keyed by id, so a rerun on the same directory resumes.
Fused detectors are made from the stored scores after detection (``fusion``), and every detection
matrix leaves out the calibration split's items.

A shard (``--shard K/N``, ``shard``) does the per-item work of its items only and stops there: what spans
items (fusion's fit, the metrics: ``across_items``) is done once by ``orchestrator merge`` over the union.
"""

from __future__ import annotations

import platform
import subprocess
import time
from collections import Counter
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path
from typing import Any

from rich.console import Console

from voxarena.orchestrator.fleet.fleet import RunError, ServiceFleet
from voxarena.orchestrator.metrics.fusion import (
    FusionError,
    calibration_items,
    evaluation_store,
    fuse,
    fused_infos,
    split_record,
)
from voxarena.orchestrator.metrics.run_metrics import write_metrics
from voxarena.orchestrator.metrics.scorer_client import MetricsScorer
from voxarena.orchestrator.run.config import RunConfig, config_differences, protocol_view
from voxarena.orchestrator.run.degrade import Degrade
from voxarena.orchestrator.run.dispatch import Dispatcher, RunProgress
from voxarena.orchestrator.run.importers import build_manifest
from voxarena.orchestrator.run.manifest import ManifestSet
from voxarena.orchestrator.run.partial import is_partial
from voxarena.orchestrator.run.plan import Plan
from voxarena.orchestrator.run.shard import Shard
from voxarena.orchestrator.run.stages import Detect, Generate, Measure
from voxarena.orchestrator.run.status import start_metrics, write_coverage
from voxarena.orchestrator.run.streaming import Stream, streams
from voxarena.orchestrator.store.failures import failure_kind
from voxarena.orchestrator.store.run_store import RunStore

__all__ = ["Arena", "RunError"]

RUN_FORMAT = "voxarena.run/1"


def now_utc() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, cwd=Path(__file__).resolve().parent
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain"],
            capture_output=True,
            text=True,
            timeout=5,
            cwd=Path(__file__).resolve().parent,
        ).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "") if out.returncode == 0 else "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


class Arena:
    def __init__(
        self,
        cfg: RunConfig,
        run_dir: Path,
        config_file: Path | None = None,
        console: Console | None = None,
        retry_failed: bool = False,
        progress: bool = True,
        progress_every: float = 30.0,
        log_format: str = "text",
        stack: str = "local",
        shard: Shard | None = None,
    ) -> None:
        self.fleet = ServiceFleet(cfg, run_dir / "logs", stack)  # refuses an unknown stack before any file is made
        self.cfg, self.config_file = cfg, config_file
        self.console = console or Console(stderr=True)
        self.store = RunStore(run_dir)
        self.retry_failed = retry_failed
        self.show_progress = progress
        self.progress_every, self.log_format = progress_every, log_format
        self.shard = shard
        self.calibration: frozenset[str] = frozenset()  # the calibration split's items, once the manifest is frozen

    # ---------------------------------------------------------------- manifest and run.json
    def freeze_manifest(self) -> ManifestSet:
        fresh = build_manifest(self.cfg.dataset, self.cfg.protocol.seed)
        path = self.store.manifest_path
        if path.exists():
            frozen = ManifestSet.from_file(path)
            if frozen.sha256 != fresh.sha256:
                changed = sorted({i.id for i in frozen} ^ {i.id for i in fresh}) or [
                    a.id for a, b in zip(frozen, fresh) if a != b
                ]
                raise RunError(
                    f"{self.store.dir}: the dataset or protocol differs from the frozen manifest "
                    f"(e.g. {', '.join(changed[:5])}); resume with the same inputs or use a new --out"
                )
            return frozen
        fresh.to_file(path)
        return fresh

    def _check_resume(self, previous: dict | None) -> None:
        if previous is None:
            return
        was = Shard.of_record(previous)
        if was != self.shard:
            said = f"as shard {was}" if was else "unsharded"
            again = f"--shard {was}" if was else "no --shard"
            raise RunError(
                f"{self.store.dir}: was run {said}; resume it with {again}, or use a new --out"
                + ("; a merged run is not a shard" if previous.get("merged_from") else "")
            )
        # Transport settings (address, TLS, tokens, concurrency, deadlines) may change; the protocol may not.
        changed = config_differences(
            protocol_view(previous.get("config") or {}), protocol_view(self.cfg.model_dump(mode="json"))
        )
        if changed:
            raise RunError(
                f"{self.store.dir}: was run with a different configuration ({', '.join(changed)} "
                "changed; see its run.json); resume with the same config or use a new --out"
            )

    def calibration_split(self, manifest: ManifestSet) -> frozenset[str]:
        """The items that calibrate fusion and are left out of every detection matrix (often none)."""
        try:
            return calibration_items(manifest, self.cfg.protocol.calibration_split, self.cfg.protocol.seed)
        except FusionError as e:
            raise RunError(f"{self.config_file or 'config'}: {e}") from None

    def _record(self, manifest: ManifestSet, previous: dict | None, started: str) -> dict:
        split = self.cfg.protocol.calibration_split
        return {
            "format": RUN_FORMAT,
            "name": self.cfg.name,
            "config": self.cfg.model_dump(mode="json"),
            "config_file": str(self.config_file) if self.config_file else None,
            "git_commit": _git_commit(),
            "versions": {
                "python": platform.python_version(),
                "voxarena": version("voxarena"),
                "grpcio": version("grpcio"),
                "protobuf": version("protobuf"),
            },
            "seeds": {"run_seed": self.cfg.protocol.seed, "item_seed": "run seed + source index"},
            "manifest": {"sha256": manifest.sha256, "items": len(manifest), "format": "voxarena.manifest/1"},
            **({"calibration_split": split_record(manifest, self.calibration, split)} if split else {}),
            **({"shard": self.shard.record(len(self.shard.items(manifest)))} if self.shard else {}),
            **({"merged_from": previous["merged_from"]} if previous and "merged_from" in previous else {}),
            "stack": self.fleet.stack,
            "services": self.fleet.records(),
            "started_at": (previous or {}).get("started_at", started),
            "sessions": (previous or {}).get("sessions", []) + [{"started_at": started}],
        }

    # ---------------------------------------------------------------- the run
    def run(self) -> dict:
        self.store.lock()
        try:
            return self._run()
        finally:
            self.store.close()  # another orchestrator may work on the directory now

    def _run(self) -> dict:
        previous = self.store.read_json()
        self._check_resume(previous)
        manifest = self.freeze_manifest()
        self.calibration = self.calibration_split(manifest)
        started = now_utc()
        t0 = time.perf_counter()
        self.fleet.start()  # stops whatever it started if it fails or is interrupted
        try:
            for warning in self.fleet.warnings():  # also in run.json, under the service's record
                self.console.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)
            self.fleet.check_metrics(self.cfg.scorer.metrics)
            self.fleet.check_scorer_limits()
            self.fleet.check_transform_steps()
            self.fleet.check_watermarks()
            self.fleet.check_resynthesis_steps()
            self.fleet.check_unchanged(previous)
            record = self._record(manifest, previous, started)
            self.store.write_json(record)
            streaming = [d for d in self.cfg.detector_services() if streams(self.fleet[d])]
            plan = Plan.for_run(self.cfg, manifest, self.fleet.declared_tasks(), self.shard, streaming)
            self._execute(plan)
            if self.shard is None:  # a shard's rows are merged first (``merge``)
                infos = {n: s.info for n, s in self.fleet.services.items()}
                across_items(self.store, self.cfg, plan, infos, self.fleet.scorer.client, self.calibration, record)
        finally:
            cpu = self.fleet.stop()
        wall = time.perf_counter() - t0
        record["ended_at"] = now_utc()
        record["sessions"][-1].update(
            ended_at=record["ended_at"],
            wall_seconds=round(wall, 3),
            service_cpu_seconds={k: round(v, 3) for k, v in cpu.items()},
        )
        self.store.write_json(record)
        return record

    def _failures(self) -> dict[str, int]:
        """Failed rows by kind, over the stages' tables (the progress lines')."""
        store, kinds = self.store, Counter[str]()
        for table in (store.generations, store.detections, store.measurements, store.streams):
            kinds.update(failure_kind(row) for row in table.failed_rows())
        return dict(kinds)

    def _execute(self, plan: Plan) -> None:
        """Do the plan's work through the four stages, every service busy at once."""
        cfg, store = self.cfg, self.store
        degrade = Degrade(store, cfg.conditions, cfg.protocol.seed, self.retry_failed, self.fleet)
        generate = Generate(store, self.fleet, cfg.protocol)
        partial = cfg.protocol.partial_config if any(is_partial(t) for t in cfg.protocol.tasks) else None
        detect = Detect(store, self.fleet, degrade, partial)
        # The whole manifest: a clip's speaker reference may be an item of another shard.
        measure = Measure(store, self.fleet, cfg.scorer.metrics, plan.frozen.by_id())
        with RunProgress(
            plan, self.console, self.show_progress, self.progress_every, self.log_format, self._failures, cfg.name
        ) as progress:
            stream = Stream(store, self.fleet, degrade, cfg.protocol.streaming) if cfg.protocol.streaming else None
            Dispatcher(
                plan, cfg, self.fleet, store, generate, detect, measure, self.retry_failed, progress, stream
            ).run()


def across_items(
    store: RunStore,
    cfg: RunConfig,
    plan: Plan,
    infos: dict,
    scorer_client: Any,
    calibration: frozenset[str],
    record: dict,
) -> None:
    """What spans the items of a run, once over all of its rows: the fused detectors, fitted on the
    calibration split (their fit goes into ``record`` and run.json), then the metrics through the scorer
    (``infos``: the GetInfo of every service, by name)."""
    if plan.fused:
        record["fusion"] = fuse(store, plan.fused, calibration)
        store.write_json(record)
    start_metrics(store.dir)
    write_metrics(
        evaluation_store(store, calibration),
        cfg,
        plan.frozen,
        fused_infos(infos, plan.fused),
        MetricsScorer(scorer_client),
    )
    write_coverage(store.dir)

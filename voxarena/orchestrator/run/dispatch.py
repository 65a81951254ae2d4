"""Fan the plan's work out so that every service stays busy.

Bona fide clips go to the detectors at once; every generated clip goes to every detector (under each
of its channel conditions) and to the scorer as soon as it is stored; an I2D iteration is asked for
as soon as the one before it is stored. Each service has its own thread pool (its ``concurrency``);
detection and measurement go in batches. Work already recorded is not redone (resume).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from voxarena.orchestrator import ctrl_c
from voxarena.orchestrator.fleet.fleet import ServiceFleet
from voxarena.orchestrator.run import run_metrics
from voxarena.orchestrator.run.config import RunConfig
from voxarena.orchestrator.run.plan import Plan
from voxarena.orchestrator.run.progress_lines import ProgressLines
from voxarena.orchestrator.run.stages import Detect, Generate, Measure
from voxarena.orchestrator.run.streaming import Stream
from voxarena.orchestrator.store.clips import Clip
from voxarena.orchestrator.store.failures import Failure, failure_kind, settled
from voxarena.orchestrator.store.records import GenerationRecord, Row
from voxarena.orchestrator.store.run_store import RunStore, detection_id, stream_id
from voxarena.v1 import detector_pb2


class RunProgress:
    """Three bars, generate / detect / measure, whose totals are the plan's expected counts; off a terminal,
    a line every ``every`` seconds instead (``progress_lines``, failures by kind from ``failures``); the same
    numbers on the orchestrator's Prometheus metrics while it works (``run_metrics``)."""

    def __init__(
        self,
        plan: Plan,
        console: Console,
        enabled: bool,
        every: float = 30.0,
        fmt: str = "text",
        failures: Callable[[], dict[str, int]] | None = None,
        run_name: str = "",
    ) -> None:
        self.plan = plan
        lines = enabled and not console.is_terminal and every > 0
        self.bars = Progress(
            TextColumn("{task.description:<10}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            disable=not enabled or lines,
            transient=False,
        )
        self.generate = self.bars.add_task("generate", total=plan.n_generations())
        self.detect = self.bars.add_task("detect", total=plan.n_detections())
        self.measure = self.bars.add_task("measure", total=plan.n_measurements())
        self.stream = self.bars.add_task("stream", total=plan.n_streams()) if plan.streamed else None
        self.lines = ProgressLines(console, self.snapshot, failures or dict, every, fmt) if lines else None
        self._watch = run_metrics.watching(run_name, self.snapshot, failures or dict)

    def snapshot(self) -> dict[str, tuple[int, int]]:
        """Stage -> (done, expected)."""
        return {t.description: (int(t.completed), int(t.total or 0)) for t in list(self.bars.tasks)}

    def __enter__(self) -> RunProgress:
        self._watch.__enter__()
        self.bars.__enter__()
        if self.lines is not None:
            self.lines.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.lines is not None:
            self.lines.stop()
        self.bars.__exit__(*exc)
        self._watch.__exit__(*exc)

    def advance(self, bar: TaskID, n: int = 1) -> None:
        self.bars.advance(bar, n)

    def lost(self, iteration: int, measured: bool) -> None:
        """A generation failed: its detections and, if it was to be measured, its measurement will not come."""
        self._shrink(self.detect, self.plan.detections_per_clip(iteration))
        if self.stream is not None and iteration == 1:
            self._shrink(self.stream, len(self.plan.streamed))
        if measured:
            self._shrink(self.measure, 1)

    def _shrink(self, bar: TaskID, n: int) -> None:
        total = self.bars.tasks[bar].total
        if total is None:  # every bar is made with the plan's count
            raise RuntimeError(f"progress bar {self.bars.tasks[bar].description!r} has no total")
        self.bars.update(bar, total=total - n)


class Batcher:
    """Collects clips for one kind of work and submits them to ``pool`` in batches of ``size``."""

    def __init__(
        self,
        pool: ThreadPoolExecutor,
        work: Callable[[list[Clip]], Sequence[Row]],
        size: int,
        on_done: Callable[[int], None],
    ) -> None:
        self.pool, self.work, self.size, self.on_done = pool, work, size, on_done
        self.pending: list[Clip] = []
        self.futures: list[Future] = []

    def add(self, clip: Clip) -> None:
        self.pending.append(clip)
        self._submit(force=False)

    def flush(self) -> None:
        """Submit what is left, a short batch included."""
        self._submit(force=True)

    def _submit(self, force: bool) -> None:
        while self.pending and (force or len(self.pending) >= self.size):
            batch, self.pending = self.pending[: self.size], self.pending[self.size :]
            fut = self.pool.submit(self.work, batch)
            fut.add_done_callback(self._finished)
            self.futures.append(fut)

    def _finished(self, fut: Future) -> None:
        if not fut.cancelled() and fut.exception() is None:  # a failed batch raises where it is awaited (_run)
            self.on_done(len(fut.result()))


class Dispatcher:
    def __init__(
        self,
        plan: Plan,
        cfg: RunConfig,
        fleet: ServiceFleet,
        store: RunStore,
        generate: Generate,
        detect: Detect,
        measure: Measure,
        retry_failed: bool,
        progress: RunProgress,
        stream: Stream | None = None,
    ) -> None:
        """``stream``: the streaming stage, in a run with protocol.streaming."""
        self.plan, self.store, self.generate, self.retry_failed = plan, store, generate, retry_failed
        self.progress = progress
        self.items = plan.manifest.by_id()
        self.gen_pools = {
            n: ThreadPoolExecutor(fleet[n].cfg.concurrency, thread_name_prefix=n) for n in fleet.names("generator")
        }
        self.det_pools = {n: ThreadPoolExecutor(fleet[n].cfg.concurrency, thread_name_prefix=n) for n in plan.detectors}
        self.scorer_pool = ThreadPoolExecutor(cfg.scorer.concurrency, thread_name_prefix="scorer")
        self.detections = {
            (d, c): Batcher(
                self.det_pools[d],
                functools.partial(detect, d, condition=c),
                self._batch_size(fleet, d, cfg.execution.detector_batch_size),
                functools.partial(progress.advance, progress.detect),
            )
            for d in plan.detectors
            for c in plan.conditions
        }
        self.measurements = Batcher(
            self.scorer_pool, measure, cfg.scorer.batch_size, functools.partial(progress.advance, progress.measure)
        )
        # One stream per call, on the detector's own pool: a stream holds one of the service's slots.
        self.streams = {
            d: Batcher(self.det_pools[d], functools.partial(stream, d), 1, functools.partial(progress.advance, bar))
            for d in plan.streamed
            if stream is not None and (bar := progress.stream) is not None
        }

    @staticmethod
    def _batch_size(fleet: ServiceFleet, detector: str, configured: int) -> int:
        """The config's batch size, never above what the detector says it accepts."""
        limit = fleet[detector].role_info(detector_pb2.DetectorInfo).max_batch_size
        return min(configured, limit) if limit > 0 else configured

    def run(self) -> None:
        pools = [*self.gen_pools.values(), *self.det_pools.values(), self.scorer_pool]
        try:
            self._run()
        except BaseException:
            for pool in pools:  # a crash or Ctrl-C: start nothing more
                pool.shutdown(wait=False, cancel_futures=True)
            raise
        for pool in pools:
            pool.shutdown(wait=True)

    def _run(self) -> None:
        for item in self.plan.manifest:
            self._consume(Clip.of_item(item))
        outstanding: set[Future] = set()
        for job in self.plan.jobs:
            row = self.store.generations.get(job.id())
            if settled(row, self.retry_failed):
                outstanding.update(self._generated(row))
            else:
                outstanding.add(self.gen_pools[job.generator].submit(self.generate, job))
        while outstanding:
            finished, outstanding = wait(outstanding, return_when=FIRST_COMPLETED)
            ctrl_c.check()
            for fut in finished:
                outstanding.update(self._generated(fut.result()))
        batchers = [*self.detections.values(), *self.streams.values(), self.measurements]
        for batcher in batchers:
            batcher.flush()
        for batcher in batchers:
            for fut in list(batcher.futures):
                fut.result()

    def _consume(self, clip: Clip) -> None:
        """Send a stored clip to every detector under each of its conditions, and a generated one to the
        scorer, unless already recorded."""
        for d in self.plan.detectors:
            for condition in self.plan.conditions_for(clip.iteration):
                if settled(self.store.detections.get(detection_id(d, condition, clip.id)), self.retry_failed):
                    self.progress.advance(self.progress.detect)
                else:
                    self.detections[(d, condition)].add(clip)
        for d, batcher in self.streams.items():
            if clip.iteration != 1:
                continue
            if settled(self.store.streams.get(stream_id(d, clip.id)), self.retry_failed):
                self.progress.advance(self.progress.stream)  # type: ignore[arg-type]
            else:
                batcher.add(clip)
        if clip.gen_row is not None and self.plan.measured(clip.task):
            if settled(self.store.measurements.get(clip.id), self.retry_failed):
                self.progress.advance(self.progress.measure)
            else:
                self.measurements.add(clip)

    def _generated(self, row: GenerationRecord) -> list[Future]:
        """Hand a finished (or already recorded) generation on; returns the I2D follow-up it started, if any."""
        self.progress.advance(self.progress.generate)
        k = row.i2d_iteration
        if row.ok:
            self._consume(Clip.of_generation(row, self.items[row.item], self.store.dir))
        else:
            self.progress.lost(k, self.plan.measured(row.task))
        job = self.plan.job(row.generator, row.task, row.item)
        if k >= self.plan.depth(job.task):
            return []
        recorded = self.store.generations.get(job.id(k + 1))
        # A chain cut by an earlier failure that is now retried and passed goes on from there.
        upstream = Failure.UPSTREAM_FAILED.value
        stale = row.ok and recorded is not None and failure_kind(recorded) == upstream
        if settled(recorded, self.retry_failed) and not stale:
            return self._generated(recorded)
        if row.ok:
            return [self.gen_pools[job.generator].submit(self.generate, job, k + 1, row)]
        # Nothing to iterate on: the rest of the chain is failed rows naming the cause.
        return self._generated(self.generate.upstream_failed(job, k + 1, row))

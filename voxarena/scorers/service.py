"""The scorer gRPC service's servicer: clips measured on a shared pool of clip workers, corpus figures,
and the statistics RPCs (``trial_sets``, ``composites``), built on the shared service runtime. The
request bounds are in ``bounds``, the process and its command line in ``server``.
"""

from __future__ import annotations

import functools
import logging
import math
import os
import threading
import time
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version
from typing import Any

import grpc
import numpy as np

from voxarena.codec import AudioClip, AudioFormatError, decode_audio
from voxarena.metric_catalogue import METRICS, UnknownMetric
from voxarena.sdk.errors import InvalidArgument, NotReady
from voxarena.sdk.server import Stopwatch
from voxarena.stats.bootstrap import cluster_intervals
from voxarena.v1 import common_pb2, scorer_pb2, scorer_pb2_grpc

from .alignment import align, aligner_name
from .bounds import (
    DEFAULT_CONFIDENCE,
    MAX_CLIP_SECONDS,
    MAX_CLIPS_PER_REQUEST,
    WhileWanted,
    check_bootstrap_work,
    limits,
    requested_bootstrap,
    still_wanted,
)
from .composites import composite_results, trajectory_aggregates
from .registry import ClipInputs, Metric, MetricInputError, get_metric, metric_class
from .trial_sets import detection_metrics

log = logging.getLogger("voxarena.scorer")
SCORER_VERSION = "1.0.0"


def _metric(name: str) -> Metric:
    try:
        return get_metric(name)
    except UnknownMetric as e:
        raise InvalidArgument(str(e)) from None


def metric_specs() -> list[scorer_pb2.MetricSpec]:
    """GetInfo's specs: each metric's catalogue row, with its implementation's own description."""
    return [
        scorer_pb2.MetricSpec(
            name=name,
            higher_is_better=row.higher_is_better,
            aggregation=row.aggregation,
            description=metric_class(name).description,
            needs=row.needs,
            columns=row.columns,
        )
        for name, row in sorted(METRICS.items())
    ]


def fingerprint(metric_names: Iterable[str]) -> dict[str, str]:
    fp = {
        "voxarena.scorer": SCORER_VERSION,
        "numpy": version("numpy"),
        "soxr": version("soxr"),
        "detection": "ASVspoof 5 definitions (det curve, EER, minDCF, actDCF at -log(beta), Cllr, PAV minCllr)",
    }
    for name in sorted(metric_names):
        fp.update(get_metric(name).fingerprint())
    return fp


def usable_cores(cpu_max: str = "/sys/fs/cgroup/cpu.max") -> int:
    """CPUs this process may run on, within its cgroup's CPU quota (a container's --cpus) if it has one."""
    cores = len(os.sched_getaffinity(0))
    try:
        with open(cpu_max) as f:
            quota, period = f.read().split()
        if quota != "max":
            cores = min(cores, max(1, math.ceil(int(quota) / int(period))))
    except (OSError, ValueError):
        pass
    return cores


class ScorerServicer(scorer_pb2_grpc.ScorerServiceServicer):
    """Clips are measured by one pool of ``clip_workers`` threads (default: the usable cores) shared by
    every MeasureClips call, in arrival order, each clip's metrics on its one thread (OpenBLAS on one
    thread: __main__). However the client batches, all cores stay busy to the last clip: two calls of 8
    and 2 clips no longer leave a core idle while the 8 finish one by one, and more calls in flight
    queue for the cores instead of holding more clips in memory at once."""

    def __init__(self, fingerprint_metrics: tuple[str, ...] = tuple(METRICS), clip_workers: int | None = None) -> None:
        self.ready = False
        self._fp_metrics = fingerprint_metrics
        self._fingerprint: dict[str, str] = {}
        self._clips = ThreadPoolExecutor(clip_workers or usable_cores(), thread_name_prefix="clip")
        self._warmed: set[str] = set()
        self._clips_counted: Any = None  # Prometheus counters, when the server serves metrics (count_metrics)
        self._metric_seconds: Any = None
        self._warm_lock = threading.Lock()

    def _warm(self, names: Iterable[str]) -> None:
        """Each metric's models load once, on the clip workers ahead of the clips: side by side rather
        than one after another inside the first clips, each holding up the clips that wait on it."""

        def warm(name: str) -> None:
            try:
                get_metric(name).warm()
            except Exception as e:  # the clips that need it report their own error
                log.warning("warming %s failed: %s", name, e)

        with self._warm_lock:
            for name in sorted(set(names) - self._warmed):
                self._warmed.add(name)
                self._clips.submit(warm, name)

    def load(self) -> None:
        self._fingerprint = fingerprint(self._fp_metrics)
        self.ready = True

    def GetInfo(self, request: common_pb2.GetInfoRequest, context: grpc.ServicerContext) -> scorer_pb2.ScorerInfo:
        if not self.ready:
            raise NotReady("scorer is still loading")
        info = common_pb2.ModelInfo(
            name="voxarena-scorer",
            version=SCORER_VERSION,
            licence="Apache-2.0",
            deterministic=True,
            timing_scope="measure: all requested metrics of a batch",
        )
        return scorer_pb2.ScorerInfo(model=info, metrics=metric_specs(), fingerprint=self._fingerprint, limits=limits())

    @staticmethod
    def _decoded(item: scorer_pb2.ClipRequest, field: str) -> AudioClip:
        """The clip's audio, or MetricInputError: a bad clip fails alone (its row says why), not its batch.
        A clip over MAX_CLIP_SECONDS is refused from its byte count, before decoding."""
        try:
            return decode_audio(getattr(item, field), field, max_seconds=MAX_CLIP_SECONDS)
        except AudioFormatError as e:
            raise MetricInputError(str(e)) from None

    @classmethod
    def _inputs(cls, item: scorer_pb2.ClipRequest) -> tuple[ClipInputs, dict[str, str]]:
        """The clip's inputs, and input name -> why it is unusable for the references that cannot be
        decoded (only the metrics that need one lose it). Raises MetricInputError when ``audio`` itself is."""
        if not item.HasField("audio"):
            raise MetricInputError("no audio")
        clip = ClipInputs(
            request_id=item.request_id,
            audio=cls._decoded(item, "audio"),
            text=item.text,
            reference_aligned=item.reference_aligned,
            generation_wall_seconds=item.generation_timing.wall_seconds if item.HasField("generation_timing") else None,
        )
        unusable: dict[str, str] = {}
        for field in ("speaker_reference", "source_reference"):
            if item.HasField(field):
                try:
                    setattr(clip, field, cls._decoded(item, field))
                except MetricInputError as e:
                    unusable[field] = str(e)
        return clip, unusable

    def MeasureClips(
        self, request: scorer_pb2.MeasureClipsRequest, context: grpc.ServicerContext
    ) -> scorer_pb2.MeasureClipsResponse:
        if not self.ready:
            raise NotReady("scorer is still loading")
        if len(request.items) > MAX_CLIPS_PER_REQUEST:
            raise InvalidArgument(f"{len(request.items)} clips exceeds the maximum {MAX_CLIPS_PER_REQUEST} per request")
        for item in request.items:  # mistakes in the request itself fail it whole, before any work
            if not item.request_id:
                raise InvalidArgument("a clip has an empty request_id")
            for n in item.metrics:
                _metric(n)
        self._warm(n for item in request.items for n in item.metrics)

        def wanted(item: scorer_pb2.ClipRequest) -> scorer_pb2.ClipMeasurement:
            still_wanted(context)  # a cancelled call's queued clips end here, at once
            return self._measure(item)

        with Stopwatch("measure") as sw:
            out = [f.result() for f in [self._clips.submit(wanted, item) for item in request.items]]
        return scorer_pb2.MeasureClipsResponse(items=out, timing=sw.to_proto())

    def count_metrics(self, registry: Any) -> None:
        """Count every clip measurement per metric in ``registry`` (Prometheus, ``voxarena.sdk.metrics``):
        ``voxarena_scorer_clips_total{metric,outcome}`` (ok / refused) and
        ``voxarena_scorer_metric_seconds{metric}``, the wall time of one clip's metric."""
        from prometheus_client import Counter, Histogram

        from voxarena.sdk.metrics import BUCKETS

        self._clips_counted = Counter(
            "voxarena_scorer_clips", "Clip measurements by metric and outcome", ["metric", "outcome"], registry=registry
        )
        self._metric_seconds = Histogram(
            "voxarena_scorer_metric_seconds",
            "Wall time of one clip's metric",
            ["metric"],
            buckets=BUCKETS,
            registry=registry,
        )

    def _observe(self, metric: str, outcome: str, t0: float) -> None:
        if self._clips_counted is not None:
            self._clips_counted.labels(metric, outcome).inc()
            self._metric_seconds.labels(metric).observe(time.perf_counter() - t0)

    def _measure(self, item: scorer_pb2.ClipRequest) -> scorer_pb2.ClipMeasurement:
        """One clip's row; an unusable clip (no audio, NaN, absurd rate, too long) is a row whose errors
        give every requested metric the reason, so the other clips of the batch keep their measurements;
        an unusable reference fails only the metrics that need it."""
        m = scorer_pb2.ClipMeasurement(request_id=item.request_id)
        metrics = [_metric(n) for n in item.metrics]
        try:
            clip, unusable = self._inputs(item)
        except MetricInputError as e:
            for metric in metrics:
                m.errors[metric.name] = f"unusable clip: {e}"
            return m
        for metric in metrics:
            bad = [f"unusable {need}: {unusable[need]}" for need in metric.needs if need in unusable]
            if bad:
                m.errors[metric.name] = bad[0]
                continue
            t0 = time.perf_counter()
            try:
                values, notes = metric.measure(clip)
            except MetricInputError as e:
                m.errors[metric.name] = str(e)
                self._observe(metric.name, "refused", t0)
                continue
            self._observe(metric.name, "ok", t0)
            m.values.update(values)
            m.notes.update(notes)
        return m

    def Aggregate(
        self, request: scorer_pb2.AggregateRequest, context: grpc.ServicerContext
    ) -> scorer_pb2.AggregateResponse:
        metrics = [_metric(n) for n in request.metrics]
        boot = requested_bootstrap(request)
        groups = []
        for group in request.groups:
            g = scorer_pb2.GroupMetrics(name=group.name)
            for metric in metrics:
                clips = [
                    c
                    for c in group.clips
                    if metric.name not in c.errors and any(k.startswith(metric.name + ".") for k in c.values)
                ]
                rows = [dict(c.values) for c in clips]
                try:
                    values = (
                        metric.aggregate_columns(rows) if rows else {col: math.nan for col in metric.output_columns()}
                    )
                except KeyError as e:  # the caller's stored measurements lack a value the metric needs
                    raise InvalidArgument(f"group {group.name}: a {metric.name} clip lacks value {e}") from None
                g.values.update(values)
                g.counts[metric.name] = len(rows)
                if boot and rows:
                    check_bootstrap_work(boot, len(rows), f"group {group.name}, metric {metric.name}")
                    low, high = cluster_intervals(
                        [c.cluster or c.request_id for c in clips],
                        WhileWanted(functools.partial(_aggregate_resample, metric, rows), context),
                        boot.resamples,
                        boot.seed,
                        boot.confidence or DEFAULT_CONFIDENCE,
                    )
                    g.ci_low.update(low)
                    g.ci_high.update(high)
            groups.append(g)
        return scorer_pb2.AggregateResponse(groups=groups)

    def DetectionMetrics(
        self, request: scorer_pb2.DetectionMetricsRequest, context: grpc.ServicerContext
    ) -> scorer_pb2.DetectionMetricsResponse:
        return detection_metrics(request, context)

    def Composite(
        self, request: scorer_pb2.CompositeRequest, context: grpc.ServicerContext
    ) -> scorer_pb2.CompositeResponse:
        if not self.ready:
            raise NotReady("scorer is still loading")
        return scorer_pb2.CompositeResponse(results=composite_results(request), fingerprint=self._fingerprint)

    def I2DAggregates(
        self, request: scorer_pb2.I2DAggregatesRequest, context: grpc.ServicerContext
    ) -> scorer_pb2.I2DAggregatesResponse:
        if not self.ready:
            raise NotReady("scorer is still loading")
        return scorer_pb2.I2DAggregatesResponse(
            trajectories=trajectory_aggregates(request), fingerprint=self._fingerprint
        )

    def Align(self, request: scorer_pb2.AlignRequest, context: grpc.ServicerContext) -> scorer_pb2.AlignResponse:
        if not request.request_id:
            raise InvalidArgument("request_id is empty")
        try:
            clip = decode_audio(request.audio)
        except AudioFormatError as e:
            raise InvalidArgument(f"audio: {e}") from None
        words = align(clip, request.text)
        return scorer_pb2.AlignResponse(
            request_id=request.request_id,
            words=[scorer_pb2.AlignedWord(word=w, start_seconds=a, end_seconds=b) for w, a, b in words],
            aligner=aligner_name(),
        )


def _aggregate_resample(metric: Metric, rows: list[dict[str, float]], idx: np.ndarray) -> dict[str, float]:
    """``metric``'s corpus figures over one bootstrap resample (``idx``) of the clips' ``rows``."""
    return metric.aggregate_columns([rows[i] for i in idx])

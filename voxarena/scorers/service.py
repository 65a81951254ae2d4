"""The scorer gRPC service (``python -m voxarena.scorers --port N``), built on the shared service runtime."""

from __future__ import annotations

import argparse
import functools
import logging
import math
import os
import sys
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from importlib.metadata import version

import grpc
import numpy as np

from voxarena.codec import AudioClip, AudioFormatError, decode_audio
from voxarena.lifecycle import die_with_parent
from voxarena.metric_catalogue import METRICS, UnknownMetric
from voxarena.sdk.errors import Cancelled, InvalidArgument, NotReady
from voxarena.sdk.server import Stopwatch, add_service_arguments, create_server, run_until_signalled, server_security
from voxarena.stats import composite, detection, i2d
from voxarena.stats.bootstrap import cluster_intervals
from voxarena.v1 import common_pb2, scorer_pb2, scorer_pb2_grpc

from .quality import SHORT_CLIPS, SHORT_CLIPS_ENV
from .registry import ClipInputs, Metric, MetricInputError, get_metric, metric_class

log = logging.getLogger("voxarena.scorer")
SCORER_VERSION = "1.0.0"

# Request bounds (ScorerLimits in GetInfo): each bounds a call's time and memory; a request outside
# them is INVALID_ARGUMENT before any work. 100000 resamples of a 10000-trial set take minutes, not days.
MAX_BOOTSTRAP_RESAMPLES = 100_000
MAX_CLIP_SECONDS = 600.0
MAX_CLIPS_PER_REQUEST = 256
MAX_TRIALS_PER_SET = 10_000_000
MAX_BOOTSTRAP_DRAWS = 200_000_000  # resamples x items of one set or group: time grows with both
DEFAULT_CONFIDENCE = 0.95


def limits() -> scorer_pb2.ScorerLimits:
    return scorer_pb2.ScorerLimits(
        max_bootstrap_resamples=MAX_BOOTSTRAP_RESAMPLES,
        max_clip_seconds=MAX_CLIP_SECONDS,
        max_clips_per_request=MAX_CLIPS_PER_REQUEST,
        max_trials_per_set=MAX_TRIALS_PER_SET,
        max_bootstrap_draws=MAX_BOOTSTRAP_DRAWS,
    )


def check_bootstrap_work(boot: scorer_pb2.Bootstrap, items: int, what: str) -> None:
    """INVALID_ARGUMENT when ``boot`` over ``items`` scores or clips is more work than MAX_BOOTSTRAP_DRAWS."""
    if boot.resamples * items > MAX_BOOTSTRAP_DRAWS:
        raise InvalidArgument(
            f"{what}: bootstrap of {boot.resamples} resamples x {items} items exceeds the maximum "
            f"{MAX_BOOTSTRAP_DRAWS} draws; ask for at most {MAX_BOOTSTRAP_DRAWS // items} resamples"
        )


def requested_bootstrap(
    request: scorer_pb2.AggregateRequest | scorer_pb2.DetectionMetricsRequest,
) -> scorer_pb2.Bootstrap | None:
    """The request's bootstrap (None: no intervals), or INVALID_ARGUMENT when it is out of bounds."""
    if not request.HasField("bootstrap") or request.bootstrap.resamples == 0:
        return None
    boot = request.bootstrap
    if boot.resamples > MAX_BOOTSTRAP_RESAMPLES:
        raise InvalidArgument(f"bootstrap resamples {boot.resamples} exceeds the maximum {MAX_BOOTSTRAP_RESAMPLES}")
    if boot.confidence != 0 and not 0 < boot.confidence < 1:  # NaN fails both comparisons: refused
        raise InvalidArgument(f"bootstrap confidence {boot.confidence} is outside (0, 1)")
    return boot


def _metric(name: str) -> Metric:
    try:
        return get_metric(name)
    except UnknownMetric as e:
        raise InvalidArgument(str(e)) from None


def still_wanted(context: grpc.ServicerContext | None) -> None:
    """Raises Cancelled once the client has cancelled the call or its deadline has passed: checked
    between steps (clips, resamples), so the scorer stops computing answers nobody will read."""
    if context is not None and not context.is_active():
        raise Cancelled("the call was cancelled or its deadline passed; work stopped")


class WhileWanted:
    """A bootstrap statistic that first checks the call is still wanted (cluster_intervals lets any
    exception but ValueError through, so Cancelled ends the resampling)."""

    def __init__(self, statistic: Callable[[np.ndarray], dict[str, float]], context: grpc.ServicerContext | None):
        self.statistic, self.context = statistic, context

    def __call__(self, idx: np.ndarray) -> dict[str, float]:
        still_wanted(self.context)
        return self.statistic(idx)


def detection_intervals(
    s: scorer_pb2.TrialSet,
    bona: np.ndarray,
    spoof: np.ndarray,
    costs: detection.CostModel,
    boot: scorer_pb2.Bootstrap,
    context: grpc.ServicerContext | None = None,
) -> tuple[dict[str, float], dict[str, float]]:
    """Speaker-cluster bootstrap of a trial set: a drawn speaker brings its bona fide and spoof trials."""
    clusters = list(s.bonafide_clusters or [f"b{i}" for i in range(bona.size)]) + list(
        s.spoof_clusters or [f"s{i}" for i in range(spoof.size)]
    )
    scores = np.concatenate([bona, spoof])
    is_bona = np.arange(scores.size) < bona.size

    def statistic(idx: np.ndarray) -> dict[str, float]:
        values = detection.detection_metrics(scores[idx][is_bona[idx]], scores[idx][~is_bona[idx]], costs)
        return detection.bootstrap_figures(values)

    return cluster_intervals(
        clusters, WhileWanted(statistic, context), boot.resamples, boot.seed, boot.confidence or DEFAULT_CONFIDENCE
    )


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
            try:
                values, notes = metric.measure(clip)
            except MetricInputError as e:
                m.errors[metric.name] = str(e)
                continue
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
        costs = detection.ASVSPOOF5_COSTS
        if request.HasField("costs"):
            c = request.costs
            if not (0 < c.p_spoof < 1 and 0 < c.c_miss < math.inf and 0 < c.c_fa < math.inf):
                raise InvalidArgument(f"invalid costs: p_spoof={c.p_spoof} c_miss={c.c_miss} c_fa={c.c_fa}")
            costs = detection.CostModel(c.p_spoof, c.c_miss, c.c_fa)
        boot = requested_bootstrap(request)
        out = []
        for s in request.sets:
            n = len(s.bonafide_scores) + len(s.spoof_scores)
            if n > MAX_TRIALS_PER_SET:
                raise InvalidArgument(f"trial set {s.name}: {n} scores exceeds the maximum {MAX_TRIALS_PER_SET}")
            bona, spoof = np.array(s.bonafide_scores), np.array(s.spoof_scores)
            for what, clusters, count in (
                ("bonafide", s.bonafide_clusters, bona.size),
                ("spoof", s.spoof_clusters, spoof.size),
            ):
                if clusters and len(clusters) != count:
                    raise InvalidArgument(f"trial set {s.name}: {len(clusters)} {what} clusters for {count} scores")
            try:
                values = detection.detection_metrics(bona, spoof, costs)
            except ValueError as e:
                raise InvalidArgument(f"trial set {s.name}: {e}") from None
            m = scorer_pb2.DetectionMetrics(
                name=s.name,
                n_bonafide=int(values["n_bonafide"]),
                n_spoof=int(values["n_spoof"]),
                eer=values["eer"],
                eer_threshold=values["eer_threshold"],
                min_dcf=values["min_dcf"],
                act_dcf=values["act_dcf"],
                cllr=values["cllr"],
                min_cllr=values["min_cllr"],
            )
            if boot:
                check_bootstrap_work(boot, n, f"trial set {s.name}")
                low, high = detection_intervals(s, bona, spoof, costs, boot, context)
                m.ci_low.update(low)
                m.ci_high.update(high)
            out.append(m)
        return scorer_pb2.DetectionMetricsResponse(sets=out)

    def Composite(
        self, request: scorer_pb2.CompositeRequest, context: grpc.ServicerContext
    ) -> scorer_pb2.CompositeResponse:
        if not self.ready:
            raise NotReady("scorer is still loading")
        results = [_generator_composite(c) for c in request.generators]
        results += [_detector_composite(c) for c in request.detectors]
        return scorer_pb2.CompositeResponse(results=results, fingerprint=self._fingerprint)

    def I2DAggregates(
        self, request: scorer_pb2.I2DAggregatesRequest, context: grpc.ServicerContext
    ) -> scorer_pb2.I2DAggregatesResponse:
        if not self.ready:
            raise NotReady("scorer is still loading")
        decay = request.ewa_decay if request.HasField("ewa_decay") else i2d.EWA_DECAY
        if not 0 < decay <= 1:
            raise InvalidArgument(f"ewa_decay {decay} is outside (0, 1]")
        out = []
        for t in request.trajectories:
            values = [i2d.oriented(v, t.higher_is_better) for v in t.values]
            out.append(
                scorer_pb2.TrajectoryAggregates(
                    name=t.name, iterations=len(values), **i2d.aggregate_trajectory(values, decay)
                )
            )
        return scorer_pb2.I2DAggregatesResponse(trajectories=out, fingerprint=self._fingerprint)


def _aggregate_resample(metric: Metric, rows: list[dict[str, float]], idx: np.ndarray) -> dict[str, float]:
    """``metric``'s corpus figures over one bootstrap resample (``idx``) of the clips' ``rows``."""
    return metric.aggregate_columns([rows[i] for i in idx])


def _unique(what: str, names: list[str], composite_name: str) -> None:
    seen = set()
    for n in names:
        if n in seen:
            raise InvalidArgument(f"composite {composite_name}: {what} {n!r} appears twice")
        seen.add(n)


def _scored(name: str, higher_is_better: bool, compute: Callable[[], dict[str, float]]) -> scorer_pb2.CompositeResult:
    """The composite's scores and ranks, or the reason it has none (a missing metric is a fact of the
    run, reported in its row, not a bad request)."""
    result = scorer_pb2.CompositeResult(name=name, higher_is_better=higher_is_better)
    try:
        scores = compute()
    except composite.CompositeError as e:
        result.error = str(e)
        return result
    ranks = composite.ranks(scores, higher_is_better)
    result.scores.extend(scorer_pb2.SystemScore(system=s, score=scores[s], rank=ranks[s]) for s in sorted(scores))
    return result


def _generator_composite(c: scorer_pb2.GeneratorComposite) -> scorer_pb2.CompositeResult:
    eps = c.epsilon if c.HasField("epsilon") else composite.EPSILON
    if not 0 <= eps < 1:
        raise InvalidArgument(f"composite {c.name}: epsilon {eps} is outside [0, 1)")
    _unique("system", [s.system for s in c.systems], c.name)
    _unique("weighted metric", [w.metric for w in c.weights], c.name)
    for w in c.weights:
        if not 0 < w.weight < math.inf:
            raise InvalidArgument(f"composite {c.name}: weight {w.weight} of {w.metric} is not a positive number")
    table = {s.system: dict(s.values) for s in c.systems}
    weights = {w.metric: w.weight for w in c.weights}
    return _scored(c.name, True, lambda: composite.generator_scores(table, weights, eps))


def _detector_composite(c: scorer_pb2.DetectorComposite) -> scorer_pb2.CompositeResult:
    alpha = c.alpha if c.HasField("alpha") else composite.DETECTOR_ALPHA
    if not 0 <= alpha <= 1:
        raise InvalidArgument(f"composite {c.name}: alpha {alpha} is outside [0, 1]")
    _unique("detector x generator pair", [f"{p.detector} x {p.generator}" for p in c.pairs], c.name)
    for what, table in (("params_m", c.params_m), ("challenge", c.challenge)):
        for key, value in table.items():
            if not 0 < value < math.inf:
                raise InvalidArgument(f"composite {c.name}: {what} {value} of {key} is not a positive number")
    pairs = [
        {"detector": p.detector, "generator": p.generator, "eer": p.eer, "cllr": p.cllr, "min_dcf": p.min_dcf}
        for p in c.pairs
    ]
    return _scored(c.name, False, lambda: composite.detector_scores(pairs, dict(c.params_m), alpha, dict(c.challenge)))


def main(argv: list[str] | None = None) -> None:
    die_with_parent()
    parser = argparse.ArgumentParser(description="VoxArena scorer service")
    add_service_arguments(parser)
    parser.add_argument(
        "--clip-workers",
        type=int,
        default=int(os.environ.get("VOXARENA_CLIP_WORKERS", "0")),
        help="clips measured at once, over all calls (or $VOXARENA_CLIP_WORKERS; default 0: the usable cores)",
    )
    parser.add_argument(
        "--dnsmos-short-clips",
        default=os.environ.get(SHORT_CLIPS_ENV, "windows"),
        help=f"DNSMOS of clips under 9.01 s: 'windows' (dnsmos_local.py's, the default) or 'one-window' (faster, "
        f"not the reference's numbers; the fingerprint says so: voxarena/scorers/quality.py) (or ${SHORT_CLIPS_ENV})",
    )
    args = parser.parse_args(argv)
    if args.clip_workers < 0:
        parser.error(f"--clip-workers must be 0 (the usable cores) or more, not {args.clip_workers}")
    if args.dnsmos_short_clips not in SHORT_CLIPS:
        parser.error(f"--dnsmos-short-clips {args.dnsmos_short_clips!r}: choose one of {', '.join(SHORT_CLIPS)}")
    os.environ[SHORT_CLIPS_ENV] = args.dnsmos_short_clips  # the metric and its fingerprint read it
    logging.basicConfig(
        level=args.log_level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    servicer = ScorerServicer(clip_workers=args.clip_workers)
    name = scorer_pb2.DESCRIPTOR.services_by_name["ScorerService"].full_name
    running = create_server(
        [(name, lambda s: scorer_pb2_grpc.add_ScorerServiceServicer_to_server(servicer, s))],
        f"{args.host}:{args.port}",
        max_message_mb=args.max_message_mb,
        workers=args.workers,
        max_queue=args.max_queue,
        security=server_security(args),
    )
    run_until_signalled(running, servicer.load, "scorer")

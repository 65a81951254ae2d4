"""Conformance checks of a scorer (ScorerService): GetInfo, known EERs, bad inputs, per-clip errors.

- ``GetInfo fields``, ``declares metrics``, ``fingerprint``.
- ``EER of known trials``: perfectly separated trials have EER 0, fully reversed ones EER 1.
- error paths, each followed by a health check: a bootstrap over the declared maximum of resamples or
  at confidence 1.5, a request whose string field is not UTF-8, an unknown metric -> INVALID_ARGUMENT;
  an oversize message refused (RESOURCE_EXHAUSTED: SHOULD); ``bad clip of a batch fails alone``; ``still SERVING
  after every bad input``.
"""

from __future__ import annotations

import functools

import grpc
import numpy as np

from voxarena.codec import AudioClip, encode_audio
from voxarena.v1 import common_pb2, scorer_pb2, scorer_pb2_grpc

from .session import INVALID_UTF8_FIELD, OVERSIZE_BYTES, Session


def check_scorer(s: Session) -> None:
    stub = scorer_pb2_grpc.ScorerServiceStub(s.channel)
    info = s.get_info(stub)
    if info is None:
        return
    s.model_info(info.model, True, needs_rate=False)  # the scorer takes any rate
    s.add(
        "declares metrics",
        len(info.metrics) > 0,
        "GetInfo",
        ", ".join(m.name for m in info.metrics) or "none",
        "at least one metric",
    )
    s.add("fingerprint", len(info.fingerprint) > 0, "GetInfo", f"{len(info.fingerprint)} entries", "a fingerprint")
    # Perfectly separated trials have EER 0; fully reversed ones EER 1 (any definition agrees).
    sets = [
        scorer_pb2.TrialSet(name="separated", bonafide_scores=[1, 2, 3, 4], spoof_scores=[-4, -3, -2, -1]),
        scorer_pb2.TrialSet(name="reversed", bonafide_scores=[-4, -3, -2, -1], spoof_scores=[1, 2, 3, 4]),
    ]
    sent = "DetectionMetrics of a separated and a reversed trial set"
    resp = s.call_ok(
        "DetectionMetrics",
        lambda: stub.DetectionMetrics(scorer_pb2.DetectionMetricsRequest(sets=sets), timeout=s.timeout),
        sent,
    )
    if resp is not None:
        eers = {m.name: m.eer for m in resp.sets}
        s.add(
            "EER of known trials",
            eers == {"separated": 0.0, "reversed": 1.0},
            sent,
            f"{eers}",
            "{'separated': 0.0, 'reversed': 1.0}",
        )
    audio = encode_audio(s.probes[0])
    ScorerBadInputs(s, stub, info).run()
    s.expect_error(
        "unknown metric rejected",
        lambda: stub.MeasureClips(
            scorer_pb2.MeasureClipsRequest(
                items=[scorer_pb2.ClipRequest(request_id="conformance-1", metrics=["no-such-metric"], audio=audio)]
            ),
            timeout=s.timeout,
        ),
        "MeasureClips metrics=['no-such-metric']",
        (grpc.StatusCode.INVALID_ARGUMENT,),
    )
    s.expect_error(
        "Align of an empty transcript rejected",
        lambda: stub.Align(scorer_pb2.AlignRequest(request_id="conformance-align", audio=audio), timeout=s.timeout),
        "Align with text ''",
        (grpc.StatusCode.INVALID_ARGUMENT,),
    )
    big = common_pb2.Audio(sample_rate=16000, channels=1, encoding=common_pb2.PCM_S16LE, data=b"\0" * OVERSIZE_BYTES)
    s.expect_oversize(
        lambda: stub.MeasureClips(
            scorer_pb2.MeasureClipsRequest(
                items=[scorer_pb2.ClipRequest(request_id="conformance-big", metrics=["rtf"], audio=big)]
            ),
            timeout=s.timeout,
        ),
        f"MeasureClips with {OVERSIZE_BYTES // 2**20} MiB of audio",
    )
    s.still_serving()


class ScorerBadInputs:
    """Out-of-range scorer arguments are INVALID_ARGUMENT before any work (a bootstrap the scorer
    declares too large must not compute until the deadline), and one unusable clip of a MeasureClips
    batch fails alone, in its row."""

    def __init__(self, s: Session, stub: scorer_pb2_grpc.ScorerServiceStub, info: scorer_pb2.ScorerInfo) -> None:
        self.s, self.stub, self.info = s, stub, info

    def run(self) -> None:
        s, invalid = self.s, (grpc.StatusCode.INVALID_ARGUMENT,)
        trials = scorer_pb2.TrialSet(name="t", bonafide_scores=[1, 2, 3], spoof_scores=[-1, -2, 0])
        declared = self.info.limits.max_bootstrap_resamples if self.info.HasField("limits") else 0
        resamples = declared + 1 if declared else 2**32 - 1
        quick = min(s.timeout, 30.0)
        for name, boot in (
            (f"bootstrap resamples {resamples} refused", scorer_pb2.Bootstrap(resamples=resamples, seed=1)),
            ("bootstrap confidence 1.5 refused", scorer_pb2.Bootstrap(resamples=10, seed=1, confidence=1.5)),
        ):
            request = scorer_pb2.DetectionMetricsRequest(sets=[trials], bootstrap=boot)
            s.expect_error(
                name,
                functools.partial(self.stub.DetectionMetrics, request, timeout=quick),
                f"DetectionMetrics with bootstrap resamples={boot.resamples} confidence={boot.confidence} "
                f"(declared maximum: {declared or 'none'}), {quick:g} s deadline",
                invalid,
            )
        s.undecodable(
            "/voxarena.v1.ScorerService/DetectionMetrics",
            scorer_pb2.DetectionMetricsRequest(sets=[trials]).SerializeToString(),
            b"\x0a\x04" + INVALID_UTF8_FIELD,  # a TrialSet whose name is not UTF-8
        )
        self.bad_clip_fails_alone()

    def bad_clip_fails_alone(self) -> None:
        name = "bad clip of a batch fails alone"
        metric = next((m.name for m in self.info.metrics if set(m.needs) <= {"timing"}), None)
        if metric is None:
            self.s.skip(name, "no declared metric needs only the clip (and its timing)")
            return
        timing = common_pb2.Timing(wall_seconds=1.0)
        nan = encode_audio(AudioClip(np.full(1600, np.nan, np.float32), 16000))
        items = [
            scorer_pb2.ClipRequest(request_id=rid, metrics=[metric], audio=audio, generation_timing=timing)
            for rid, audio in (("good", encode_audio(self.s.probes[0])), ("nan", nan))
        ]
        sent = f"MeasureClips metrics=[{metric!r}] of 'good' (a probe) and 'nan' (NaN samples)"
        resp = self.s.call_ok(
            name,
            lambda: self.stub.MeasureClips(scorer_pb2.MeasureClipsRequest(items=items), timeout=self.s.timeout),
            sent,
            record=False,
        )
        if resp is None:
            return
        rows = {m.request_id: m for m in resp.items}
        ok = [m.request_id for m in resp.items] == ["good", "nan"] and metric in rows["nan"].errors
        ok = ok and not rows["nan"].values
        got = "; ".join(f"{m.request_id!r}: {len(m.values)} values, errors {dict(m.errors)}" for m in resp.items)
        self.s.add(name, ok, sent, got, f"both rows in order, 'nan' with no values and an error for {metric!r}")

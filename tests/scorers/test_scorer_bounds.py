"""The scorer's request bounds (issue 13 items 2 and 3): out-of-range arguments are INVALID_ARGUMENT
before any work, never INTERNAL or a computation that runs until killed; the bounds are declared in
GetInfo; one unusable clip of a MeasureClips batch fails alone, its row carrying the reason."""

from __future__ import annotations

import time

import grpc
import numpy as np
import pytest

from voxarena.codec import AudioClip, encode_audio
from voxarena.scorers.bounds import MAX_BOOTSTRAP_RESAMPLES, MAX_CLIP_SECONDS, MAX_CLIPS_PER_REQUEST
from voxarena.scorers.service import ScorerServicer
from voxarena.sdk.testing import serve_servicers
from voxarena.v1 import common_pb2, scorer_pb2, scorer_pb2_grpc


@pytest.fixture(scope="module")
def stub():
    servicer = ScorerServicer(("rtf",))
    name = scorer_pb2.DESCRIPTOR.services_by_name["ScorerService"].full_name
    register = (name, lambda s: scorer_pb2_grpc.add_ScorerServiceServicer_to_server(servicer, s))
    with serve_servicers([register], load=servicer.load) as served:
        yield served.stub(scorer_pb2_grpc.ScorerServiceStub)


def _refused(call, request) -> str:
    t0 = time.perf_counter()
    with pytest.raises(grpc.RpcError) as e:
        call(request, timeout=10)
    assert time.perf_counter() - t0 < 5, "refused only after doing the work"
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT, e.value.details()
    return e.value.details()


TRIALS = scorer_pb2.TrialSet(name="t", bonafide_scores=[1, 2, 3], spoof_scores=[-1, -2, 0])
ONE_GROUP = scorer_pb2.MeasurementGroup(
    name="g",
    clips=[scorer_pb2.ClipMeasurement(request_id="a", values={"rtf.wall_seconds": 1, "rtf.audio_seconds": 2})],
)


def _detection(**bootstrap) -> scorer_pb2.DetectionMetricsRequest:
    return scorer_pb2.DetectionMetricsRequest(sets=[TRIALS], bootstrap=scorer_pb2.Bootstrap(**bootstrap))


def _aggregate(**bootstrap) -> scorer_pb2.AggregateRequest:
    return scorer_pb2.AggregateRequest(metrics=["rtf"], groups=[ONE_GROUP], bootstrap=scorer_pb2.Bootstrap(**bootstrap))


@pytest.mark.parametrize(
    ("bootstrap", "reason"),
    [
        ({"resamples": 2**32 - 1}, "bootstrap resamples 4294967295 exceeds the maximum 100000"),
        ({"resamples": MAX_BOOTSTRAP_RESAMPLES + 1}, "exceeds the maximum"),
        ({"resamples": 10, "confidence": 1.5}, "bootstrap confidence 1.5 is outside (0, 1)"),
        ({"resamples": 10, "confidence": 1.0}, "is outside (0, 1)"),
        ({"resamples": 10, "confidence": -0.5}, "is outside (0, 1)"),
        ({"resamples": 10, "confidence": float("nan")}, "bootstrap confidence nan"),
    ],
)
def test_bootstrap_out_of_range_is_refused_before_work(stub, bootstrap, reason):
    assert reason in _refused(stub.DetectionMetrics, _detection(**bootstrap))
    assert reason in _refused(stub.Aggregate, _aggregate(**bootstrap))


def test_bootstrap_within_bounds_still_answers(stub):
    resp = stub.DetectionMetrics(_detection(resamples=20, seed=1, confidence=0.9), timeout=10)
    assert "eer" in resp.sets[0].ci_low
    resp = stub.Aggregate(_aggregate(resamples=20, seed=1), timeout=10)
    assert resp.groups[0].values["rtf"] == pytest.approx(0.5)


def test_limits_declared_in_getinfo(stub):
    limits = stub.GetInfo(common_pb2.GetInfoRequest(), timeout=10).limits
    assert limits.max_bootstrap_resamples == MAX_BOOTSTRAP_RESAMPLES == 100_000
    assert limits.max_clip_seconds == MAX_CLIP_SECONDS == 600.0
    assert limits.max_clips_per_request == MAX_CLIPS_PER_REQUEST
    assert limits.max_trials_per_set > 0


@pytest.mark.parametrize(
    ("request_", "reason"),
    [
        (
            scorer_pb2.DetectionMetricsRequest(
                sets=[scorer_pb2.TrialSet(name="t", bonafide_scores=[1, 2], spoof_scores=[0], bonafide_clusters=["a"])]
            ),
            "trial set t: 1 bonafide clusters for 2 scores",
        ),
        (
            scorer_pb2.DetectionMetricsRequest(
                sets=[TRIALS], costs=scorer_pb2.CostModel(p_spoof=0.5, c_miss=float("inf"), c_fa=1)
            ),
            "invalid costs",
        ),
        (scorer_pb2.DetectionMetricsRequest(sets=[scorer_pb2.TrialSet(name="e")]), "need bona fide and spoof scores"),
    ],
)
def test_detection_arguments(stub, request_, reason):
    assert reason in _refused(stub.DetectionMetrics, request_)


def test_aggregate_of_measurements_missing_a_value(stub):
    group = scorer_pb2.MeasurementGroup(
        name="g", clips=[scorer_pb2.ClipMeasurement(request_id="a", values={"rtf.wall_seconds": 1})]
    )
    details = _refused(stub.Aggregate, scorer_pb2.AggregateRequest(metrics=["rtf"], groups=[group]))
    assert "group g: a rtf clip lacks value 'rtf.audio_seconds'" in details


def test_composite_arguments(stub):
    systems = [
        scorer_pb2.SystemMetrics(system="a", values={"wer": 0.1}),
        scorer_pb2.SystemMetrics(system="b", values={"wer": 0.2}),
    ]
    for weight in (float("nan"), -1.0, 0.0, float("inf")):
        comp = scorer_pb2.GeneratorComposite(
            name="g", systems=systems, weights=[scorer_pb2.MetricWeight(metric="wer", weight=weight)]
        )
        assert "is not a positive number" in _refused(stub.Composite, scorer_pb2.CompositeRequest(generators=[comp]))
    pairs = [scorer_pb2.DetectorPair(detector="d", generator="g", eer=0.1)]
    for params in ({"d": -1.0}, {"d": 0.0}, {"d": float("nan")}):
        comp = scorer_pb2.DetectorComposite(name="s", pairs=pairs, params_m=params)
        assert "params_m" in _refused(stub.Composite, scorer_pb2.CompositeRequest(detectors=[comp]))


def _clip(rid: str, audio: common_pb2.Audio, wall: float = 1.0) -> scorer_pb2.ClipRequest:
    return scorer_pb2.ClipRequest(
        request_id=rid, metrics=["rtf"], audio=audio, generation_timing=common_pb2.Timing(wall_seconds=wall)
    )


def _f32(x, rate=16000) -> common_pb2.Audio:
    return common_pb2.Audio(
        data=np.asarray(x, "<f4").tobytes(), sample_rate=rate, channels=1, encoding=common_pb2.PCM_F32LE
    )


GOOD = encode_audio(AudioClip((0.1 * np.sin(np.arange(16000) / 7)).astype(np.float32), 16000))


def test_one_bad_clip_fails_alone(stub):
    bad = {
        "nan": (_f32(np.full(1600, np.nan)), "NaN or infinite samples"),
        "huge": (_f32(np.full(1600, 1e30)), "sample magnitude"),
        "1hz": (_f32(np.zeros(8), 1), "sample_rate 1 Hz is outside"),
        "long": (_f32(np.zeros(int(16000 * (MAX_CLIP_SECONDS + 1)))), "at most 600 s"),
        "noaudio": (None, "no audio"),
    }
    items = [_clip("ok-1", GOOD)]
    for rid, (audio, _) in bad.items():
        items.append(scorer_pb2.ClipRequest(request_id=rid, metrics=["rtf"]) if audio is None else _clip(rid, audio))
    items += [_clip("ok-2", GOOD), _clip("nan-timing", GOOD, wall=float("nan"))]
    resp = stub.MeasureClips(scorer_pb2.MeasureClipsRequest(items=items), timeout=60)
    rows = {m.request_id: m for m in resp.items}
    assert [m.request_id for m in resp.items] == [i.request_id for i in items]
    for rid in ("ok-1", "ok-2"):
        assert rows[rid].values["rtf.audio_seconds"] == pytest.approx(1.0) and not rows[rid].errors
    for rid, (_, reason) in bad.items():
        assert not rows[rid].values and reason in rows[rid].errors["rtf"], rows[rid]
    assert "not a duration" in rows["nan-timing"].errors["rtf"]


def test_request_level_mistakes_still_fail_the_request(stub):
    too_many = scorer_pb2.MeasureClipsRequest(items=[_clip(f"c{i}", GOOD) for i in range(MAX_CLIPS_PER_REQUEST + 1)])
    assert "exceeds the maximum" in _refused(stub.MeasureClips, too_many)
    unknown = scorer_pb2.MeasureClipsRequest(
        items=[scorer_pb2.ClipRequest(request_id="x", metrics=["nope"], audio=GOOD)]
    )
    assert "unknown metric" in _refused(stub.MeasureClips, unknown)


def test_bootstrap_work_is_bounded_by_resamples_times_items(stub, monkeypatch):
    from voxarena.scorers import bounds

    monkeypatch.setattr(bounds, "MAX_BOOTSTRAP_DRAWS", 60)  # 6 trials: at most 10 resamples
    assert stub.DetectionMetrics(_detection(resamples=10, seed=1), timeout=10).sets[0].ci_low
    details = _refused(stub.DetectionMetrics, _detection(resamples=11, seed=1))
    assert "trial set t: bootstrap of 11 resamples x 6 items exceeds the maximum 60 draws" in details
    assert "at most 10 resamples" in details
    monkeypatch.setattr(bounds, "MAX_BOOTSTRAP_DRAWS", 5)  # one clip: at most 5 resamples
    assert "group g, metric rtf: bootstrap of 6 resamples" in _refused(stub.Aggregate, _aggregate(resamples=6))
    assert stub.GetInfo(common_pb2.GetInfoRequest(), timeout=10).limits.max_bootstrap_draws == 5


def test_an_unusable_reference_fails_only_the_metrics_that_need_it(stub):
    item = _clip("ref", GOOD)
    item.metrics.append("psnr")
    item.reference_aligned = True
    item.source_reference.CopyFrom(_f32(np.full(1600, np.nan)))
    (row,) = stub.MeasureClips(scorer_pb2.MeasureClipsRequest(items=[item]), timeout=60).items
    assert row.values["rtf.audio_seconds"] == pytest.approx(1.0) and "rtf" not in row.errors
    assert row.errors["psnr"].startswith("unusable source_reference: source_reference: contains NaN")


def test_a_cancelled_bootstrap_stops_computing(stub, monkeypatch):
    from voxarena.stats import detection

    calls = []
    real = detection.detection_metrics

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(detection, "detection_metrics", counting)
    rng = np.random.default_rng(0)
    trials = scorer_pb2.TrialSet(
        name="big", bonafide_scores=rng.normal(1, 1, 1000), spoof_scores=rng.normal(-1, 1, 1000)
    )
    request = scorer_pb2.DetectionMetricsRequest(sets=[trials], bootstrap=scorer_pb2.Bootstrap(resamples=100_000))
    with pytest.raises(grpc.RpcError) as e:
        stub.DetectionMetrics(request, timeout=0.5)
    assert e.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    time.sleep(0.5)
    stopped_at = len(calls)
    time.sleep(1.0)
    assert 0 < stopped_at < 100_000 and len(calls) == stopped_at, "the bootstrap went on after the deadline"

"""Segment scores in the contract (detector.proto: segment_hop_seconds, want_segments, SegmentScores): the
count rule, and the SDK serving them only when asked, checked, beside the same utterance score."""

from __future__ import annotations

import math

import numpy as np
import pytest

from voxarena.codec import AudioClip, encode_audio
from voxarena.sdk.servicers import DetectorServicer
from voxarena.sdk.testing import serve_in_process
from voxarena.segments import segment_count, valid_hop
from voxarena.services.testing.dummy_detector import DummyDetector
from voxarena.v1 import common_pb2, detector_pb2


@pytest.mark.parametrize(
    "samples,rate,hop,expected",
    [
        (16000, 16000, 0.02, 50),  # exactly 50 hops: not 51, despite 0.02 * 16000 in floating point
        (16001, 16000, 0.02, 51),  # one sample more opens a segment
        (15999, 16000, 0.02, 50),
        (22050 * 3, 22050, 0.16, 19),  # 3 s / 0.16 s = 18.75
        (1, 8000, 0.64, 1),
        (0, 16000, 0.02, 0),
        (48000 * 7, 48000, 0.1, 70),
    ],
)
def test_segment_count_is_the_ceiling_of_duration_over_hop(samples, rate, hop, expected):
    assert segment_count(samples, rate, hop) == expected
    # Independently, in integers where the hop is a whole number of samples or of milliseconds:
    hop_ms = round(hop * 1000)
    assert expected == -(-samples * 1000 // (hop_ms * rate))


def test_valid_hops():
    assert valid_hop(0) and valid_hop(0.001) and valid_hop(10)
    assert not valid_hop(0.0005) and not valid_hop(10.5) and not valid_hop(-0.02)
    with pytest.raises(ValueError, match="must be positive"):
        segment_count(100, 16000, 0)


def _request(rid: str, seconds: float, want: bool, rate: int = 16000) -> detector_pb2.ScoreRequest:
    t = np.arange(int(seconds * rate)) / rate
    clip = AudioClip((0.3 * np.sin(2 * np.pi * 220 * t) + 0.01 * np.cos(2 * np.pi * 5000 * t)).astype(np.float32), rate)
    return detector_pb2.ScoreRequest(request_id=rid, audio=encode_audio(clip), want_segments=want)


def test_segments_come_only_when_asked_and_leave_the_score_alone():
    with serve_in_process(DummyDetector()) as served:
        stub = served.stub()
        assert stub.GetInfo(common_pb2.GetInfoRequest()).segment_hop_seconds == pytest.approx(0.02)
        plain = stub.Score(_request("a", 1.01, False))
        asked = stub.Score(_request("a", 1.01, True))
        assert not plain.HasField("segments") and asked.HasField("segments")
        assert asked.score == plain.score
        assert asked.segments.hop_seconds == pytest.approx(0.02) and len(asked.segments.scores) == 51
        assert all(math.isfinite(x) for x in asked.segments.scores)
        batch = stub.ScoreBatch(
            detector_pb2.ScoreBatchRequest(items=[_request("b", 0.5, True, 22050), _request("c", 0.5, False)])
        )
        first, second = batch.items
        assert len(first.result.segments.scores) == 25 and not second.result.HasField("segments")


def test_a_detector_with_an_invalid_hop_does_not_start():
    class Bad(DummyDetector):
        segment_hop_seconds = 20.0

    with pytest.raises(ValueError, match="segment_hop_seconds 20"):
        DetectorServicer(Bad())


def test_attribution_comes_only_when_asked_checked_and_declared():
    """Source tracing (DetectorInfo.attribution, want_attribution): the SDK serves a declared level's
    probabilities, refuses to start with a bad declaration and answers INTERNAL for a bad answer."""
    import grpc

    from voxarena.services.testing.dummy_tracer import LABELS, DummyTracer

    with serve_in_process(DummyTracer()) as served:
        stub = served.stub()
        info = stub.GetInfo(common_pb2.GetInfoRequest())
        assert [(a.level, list(a.labels)) for a in info.attribution] == [("family", list(LABELS))]
        request = _request("a", 1.0, False)
        plain = stub.Score(request)
        request.want_attribution = True
        asked = stub.Score(request)
        assert not plain.attribution and asked.score == plain.score
        (family,) = asked.attribution
        assert family.level == "family" and set(family.probabilities) == set(LABELS)
        assert sum(family.probabilities.values()) == pytest.approx(1.0, abs=1e-9)

    class Twice(DummyTracer):
        attribution = (("family", LABELS), ("family", LABELS))

    with pytest.raises(ValueError, match="declared twice"):
        DetectorServicer(Twice())

    class Unnormalised(DummyTracer):
        def attribute_batch(self, clips, options):
            return [{"family": {label: 0.5 for label in LABELS}} for _ in clips]

    with serve_in_process(Unnormalised()) as served:
        request = _request("b", 1.0, False)
        request.want_attribution = True
        with pytest.raises(grpc.RpcError) as e:
            served.stub().Score(request)
        assert e.value.code() == grpc.StatusCode.INTERNAL and "sum to 1.5" in e.value.details()

"""Streamed-detection statistics on hand-made streams whose answers are worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from voxarena.stats.streaming import (
    StreamedClip,
    detected_within,
    detection_delays,
    eer_after,
    false_alarms_after,
    latency_percentiles,
    median_delay,
)


def clip(scores, final, duration, bonafide, onset=0.0):
    return StreamedClip(tuple(scores), final, duration, bonafide, onset)


# Two bona fide and two fakes, running scores every 0.5 s. By 0.5 s the detector cannot tell them apart
# (a fake scores above a bona fide); by 1 s it can.
BONA = [clip([(0.5, 1.0), (1.0, 2.0), (1.5, 2.0)], 2.0, 1.8, True), clip([(0.5, -1.0), (1.0, 1.5)], 1.5, 1.2, True)]
FAKE = [
    clip([(0.5, 0.0), (1.0, -2.0), (1.5, -3.0)], -3.0, 2.0, False),
    clip([(0.5, 2.0), (1.0, -1.0)], -1.0, 1.1, False),
]


def test_score_after_t_is_the_latest_running_score_or_the_final_once_the_clip_ended():
    c = BONA[0]
    assert c.score_after(0.4) is None
    assert c.score_after(0.5) == 1.0 and c.score_after(0.99) == 1.0 and c.score_after(1.0) == 2.0
    assert c.score_after(1.8) == 2.0 and c.score_after(4.0) == 2.0  # the clip ended at 1.8 s: its final


def test_eer_after_t_against_hand_counts():
    # 0.5 s: bona fide {1, -1}, fakes {0, 2}: every threshold leaves one error of each class -> EER 0.5
    assert eer_after(BONA + FAKE, 0.5) == (0.5, 4)
    # 1 s: bona fide {2, 1.5}, fakes {-2, -1}: separated -> 0
    assert eer_after(BONA + FAKE, 1.0) == (0.0, 4)
    with pytest.raises(ValueError, match="after 0.1 s"):
        eer_after(BONA + FAKE, 0.1)


def test_time_to_detect_counts_from_the_onset_and_never_flagged_is_infinite():
    delays = detection_delays(BONA + FAKE, threshold=-0.5)
    assert delays.tolist() == [1.0, 1.0]  # the first scores below -0.5 come at 1 s for both
    assert detected_within(delays, 0.5) == 0.0 and detected_within(delays, 1.0) == 1.0
    late = clip([(0.5, -5.0), (1.0, -5.0), (1.5, -5.0)], -5.0, 2.0, False, onset=0.8)
    assert late.time_to_detect(-0.5) == pytest.approx(0.2)  # the score at 1 s is the first after the onset
    never = clip([(0.5, 3.0)], 3.0, 0.9, False)
    assert never.time_to_detect(0.0) == math.inf
    assert median_delay(np.array([0.5, math.inf, 1.5, 1.0])) == 1.0
    assert math.isnan(median_delay(np.array([math.inf])))


def test_false_alarms_count_any_bona_fide_decision_below_the_threshold_so_far():
    assert false_alarms_after(BONA + FAKE, 0.0, 0.5) == 0.5  # the second bona fide scored -1 at 0.5 s
    assert false_alarms_after(BONA + FAKE, 0.0, 4.0) == 0.5  # and stays flagged
    assert false_alarms_after(BONA + FAKE, -2.0, 4.0) == 0.0


def test_latency_percentiles_are_numpy_quantiles():
    x = [0.01, 0.02, 0.03, 0.04, 0.5]
    got = latency_percentiles(x)
    assert got == {"p50": 0.03, "p95": pytest.approx(np.quantile(x, 0.95)), "p99": pytest.approx(np.quantile(x, 0.99))}
    assert all(math.isnan(v) for v in latency_percentiles([]).values())

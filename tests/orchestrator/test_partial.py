"""Partial fakes (voxarena/orchestrator/run/partial.py): seeded span choice, substitutes, and the splice
of a reconstruction or of new words at aligned word boundaries, with exact fake intervals."""

from __future__ import annotations

import numpy as np
import pytest

from voxarena.codec import AudioClip
from voxarena.orchestrator.run.partial import (
    PartialConfig,
    PartialError,
    choose_spans,
    generator_task,
    make_partial,
    substitutes,
)

RATE = 16000
WORDS = [(f"w{i}", 0.2 + 0.4 * i, 0.5 + 0.4 * i) for i in range(10)]  # 10 words, 0.1 s pauses


def speech(seconds: float, freq: float = 150.0) -> AudioClip:
    t = np.arange(int(seconds * RATE)) / RATE
    return AudioClip((0.3 * np.sin(2 * np.pi * freq * t)).astype(np.float32), RATE)


@pytest.mark.parametrize("spans,low,high", [(1, 1, 3), (2, 1, 3), (3, 2, 2), (3, 1, 1)])
def test_spans_are_disjoint_in_order_seeded_and_of_the_asked_lengths(spans, low, high):
    cfg = PartialConfig(spans=spans, min_words=low, max_words=high)
    seen = set()
    for seed in range(40):
        chosen = choose_spans(10, seed, "PARTIAL_VOCODED", cfg)
        assert chosen == choose_spans(10, seed, "PARTIAL_VOCODED", cfg)
        assert len(chosen) == spans and all(low <= b - a + 1 <= high for a, b in chosen)
        assert all(0 <= a <= b < 10 for a, b in chosen)
        assert all(prev[1] + 1 < nxt[0] for prev, nxt in zip(chosen, chosen[1:]))  # a word apart at least
        seen.add(tuple(chosen))
    assert len(seen) > 5  # the seed moves them


def test_too_few_words_and_bad_configs_are_refused():
    with pytest.raises(PartialError, match="2 aligned words"):
        choose_spans(2, 0, "PARTIAL_VOCODED", PartialConfig(spans=2, min_words=1, max_words=1))
    with pytest.raises(ValueError, match="min_words 4 exceeds max_words 2"):
        PartialConfig(min_words=4, max_words=2)


def test_substitutes_replace_every_word_with_another():
    for seed in range(20):
        new = substitutes(seed, ["never", "seven"])
        assert len(new) == 2 and not {"never", "seven"} & set(new) and len(set(new)) == 2
    assert substitutes(3, ["a"]) == substitutes(3, ["a"])


def test_which_generator_task_makes_a_partial_fake():
    assert generator_task("PARTIAL_VOCODED", {"RECONSTRUCT"}) == "RECONSTRUCT"
    assert generator_task("PARTIAL_WORDS", {"TTS", "CLONE"}) == "CLONE"
    assert generator_task("PARTIAL_WORDS", {"TTS"}) == "TTS"
    assert generator_task("PARTIAL_VOCODED", {"TTS"}) is None
    assert generator_task("TTS", {"TTS"}) == "TTS" and generator_task("CLONE", {"TTS"}) is None


def test_vocoded_spans_are_spliced_at_the_word_boundaries():
    original, vocoded = speech(4.2), speech(4.2, 400.0)
    spans = [(1, 2), (6, 6)]
    out, records = make_partial("PARTIAL_VOCODED", original, WORDS, spans, vocoded, 10)
    assert out.samples.size == original.samples.size  # copy-synthesis keeps the length
    assert [(r["start"], r["end"]) for r in records] == [(9600, 20800), (41600, 46400)]  # 0.6-1.3 s, 2.6-2.9 s
    assert [r["replaced"] for r in records] == ["w1 w2", "w6"]
    assert records[0]["start_seconds"] == 0.6 and records[1]["end_seconds"] == 2.9
    fake = np.zeros(out.samples.size, bool)
    for r in records:
        fake[r["start"] : r["end"]] = True
    assert np.array_equal(out.samples[~fake], original.samples[~fake])  # outside: the original, untouched
    inner = slice(records[1]["start"] + 160, records[1]["end"] - 160)
    assert np.corrcoef(out.samples[inner], vocoded.samples[inner])[0, 1] > 0.99  # inside: the vocoder's


def test_new_words_change_the_length_and_move_nothing_before():
    original = speech(4.2)
    said = AudioClip(np.concatenate([np.zeros(8000), speech(0.8, 300.0).samples, np.zeros(8000)]), RATE)
    out, [record] = make_partial("PARTIAL_WORDS", original, WORDS, [(3, 4)], said, 10)
    a, b = int(round(WORDS[3][1] * RATE)), int(round(WORDS[4][2] * RATE))  # 1.4 s to 2.1 s
    assert record["start"] == a and 0.8 * RATE <= record["end"] - a <= 0.8 * RATE + 2 * 320 + 2 * 160
    assert record["replaced"] == "w3 w4"
    assert out.samples.size == original.samples.size - (b - a) + (record["end"] - a)
    assert np.array_equal(out.samples[:a], original.samples[:a])


def test_a_reconstruction_of_another_length_is_refused():
    with pytest.raises(PartialError, match="reconstruction is 3.000 s for a 4.200 s source"):
        make_partial("PARTIAL_VOCODED", speech(4.2), WORDS, [(1, 1)], speech(3.0), 10)


def test_int16_clips_are_spliced_at_full_scale_one():
    """A corpus file and a PCM16 answer come as int16 (full scale 32768): the splice works on floats."""
    original, vocoded = speech(4.2), speech(4.2, 400.0)
    as_int16 = [AudioClip((c.samples * 32767).astype(np.int16), RATE) for c in (original, vocoded)]
    out, records = make_partial("PARTIAL_VOCODED", *as_int16[:1], WORDS, [(1, 2)], as_int16[1], 10)
    reference, _ = make_partial("PARTIAL_VOCODED", original, WORDS, [(1, 2)], vocoded, 10)
    assert np.max(np.abs(out.samples)) < 0.3 * np.sqrt(2) + 1e-3 and np.allclose(
        out.samples, reference.samples, atol=1e-3
    )


def test_a_detectors_segment_count_that_does_not_match_the_clip_is_an_invalid_response():
    from voxarena.orchestrator.run.segments import checked_native, window_bounds
    from voxarena.orchestrator.run.validation import ResponseInvalid
    from voxarena.v1 import detector_pb2

    clip = speech(1.01)  # 16160 samples: 51 segments of 20 ms
    ok = detector_pb2.ScoreResponse(score=1.0, segments=detector_pb2.SegmentScores(hop_seconds=0.02, scores=[0.5] * 51))
    assert checked_native("c", ok, clip, 0.02)["scores"] == [0.5] * 51
    for bad, why in [
        (detector_pb2.SegmentScores(hop_seconds=0.02, scores=[0.5] * 50), "50 segment scores"),
        (detector_pb2.SegmentScores(hop_seconds=0.04, scores=[0.5] * 26), "at 0.04 s"),
        (detector_pb2.SegmentScores(hop_seconds=0.02, scores=[0.5] * 50 + [float("nan")]), "not finite"),
    ]:
        with pytest.raises(ResponseInvalid, match=why):
            checked_native("c", detector_pb2.ScoreResponse(score=1.0, segments=bad), clip, 0.02)
    with pytest.raises(ResponseInvalid, match="none came"):
        checked_native("c", detector_pb2.ScoreResponse(score=1.0), clip, 0.02)
    # Sliding windows: one per hop, each the window's length, inside the clip (the whole clip when shorter).
    bounds = window_bounds(16160, RATE, 0.2, 1.0)
    assert len(bounds) == 6 and all(b - a == 16000 and 0 <= a and b <= 16160 for a, b in bounds)
    assert window_bounds(8000, RATE, 0.2, 1.0) == [(0, 8000)] * 3

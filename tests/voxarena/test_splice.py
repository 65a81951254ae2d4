"""Splicing for partial fakes (voxarena.dsp.splice): outside the fake interval the original, untouched;
inside it the replacement with equal-power joints; loudness matched on active speech; silence trimmed."""

from __future__ import annotations

import numpy as np
import pytest

from voxarena.dsp.splice import active_rms, match_loudness, splice, trim_silence

RATE = 16000


def tone(seconds: float, freq: float, amp: float) -> np.ndarray:
    t = np.arange(int(seconds * RATE)) / RATE
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


@pytest.mark.parametrize("length", [8000, 3000, 20000])  # same length (vocoded), shorter and longer words
def test_outside_the_fake_interval_the_original_is_untouched(length):
    original = tone(2.0, 200, 0.3)
    replacement = tone(length / RATE, 500, 0.2)
    out, (a, b) = splice(original, 12000, 20000, replacement, 160)
    assert (a, b) == (12000, 12000 + length)
    assert out.size == original.size - 8000 + length
    assert np.array_equal(out[:a], original[:12000])
    assert np.array_equal(out[b:], original[20000:])
    # Inside, away from the joints, the replacement itself.
    assert np.allclose(out[a + 160 : b - 160], replacement[160:-160], atol=1e-7)


def test_the_joints_are_equal_power_crossfades():
    original, replacement = np.ones(4000, np.float32) * 0.5, np.ones(2000, np.float32) * 0.5
    out, (a, b) = splice(original, 1000, 3000, replacement, 200)
    # Equal power: sin^2 + cos^2 = 1, so two equal constant signals cross with a bounded bump (at most sqrt 2).
    joint = out[a : a + 200]
    assert np.all(joint >= 0.5 - 1e-6) and np.all(joint <= 0.5 * np.sqrt(2) + 1e-6)
    assert out[a] == pytest.approx(0.5 * (np.cos(np.pi / 800) + np.sin(np.pi / 800)), abs=1e-6)


def test_spans_that_do_not_fit_are_refused():
    x = np.zeros(1000, np.float32)
    with pytest.raises(ValueError, match="not inside the clip"):
        splice(x, 900, 1100, np.zeros(200, np.float32), 10)
    with pytest.raises(ValueError, match="not inside the clip"):
        splice(x, 500, 500, np.zeros(200, np.float32), 10)
    with pytest.raises(ValueError, match="too short"):
        splice(x, 100, 300, np.zeros(15, np.float32), 10)


def test_loudness_is_matched_on_active_speech_not_on_pauses():
    speech_with_pauses = np.concatenate([tone(0.5, 200, 0.4), np.zeros(16000, np.float32), tone(0.5, 300, 0.4)])
    quiet_word = tone(0.4, 500, 0.05)
    louder = match_loudness(quiet_word, speech_with_pauses, RATE)
    assert active_rms(louder, RATE) == pytest.approx(0.4 / np.sqrt(2), rel=0.02)
    assert active_rms(speech_with_pauses, RATE) == pytest.approx(0.4 / np.sqrt(2), rel=0.02)
    loud = match_loudness(tone(0.4, 500, 0.9), tone(0.4, 200, 0.9) * 3, RATE)  # the target clips: peak-limited
    assert np.max(np.abs(loud)) <= 0.99 + 1e-6
    with pytest.raises(ValueError, match="silent"):
        match_loudness(np.zeros(100, np.float32), speech_with_pauses, RATE)


def test_trim_silence_keeps_the_word_and_10_ms_around_it():
    word = tone(0.3, 300, 0.3)
    padded = np.concatenate([np.zeros(8000, np.float32), word, np.zeros(4000, np.float32)])
    trimmed = trim_silence(padded, RATE)
    assert word.size <= trimmed.size <= word.size + 2 * 160 + 2 * 320  # 10 ms each side, frame granularity
    assert np.sum(trimmed**2) == pytest.approx(np.sum(word**2), rel=1e-6)

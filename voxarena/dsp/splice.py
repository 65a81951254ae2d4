"""Splicing fake speech into genuine speech (partial fakes), as plain signal processing.

``splice(original, start, end, replacement, crossfade)`` replaces samples [start, end) of ``original`` by
``replacement`` (any length: copy-synthesis keeps the span's length, new words do not), with a raised-cosine
(equal-power) crossfade of ``crossfade`` samples at each joint, placed inside the replacement: its first
``crossfade`` samples fade in over the original's [start, start + crossfade), its last fade out under the
original's [end - crossfade, end). So every sample the generated audio touches is in the fake interval
[start, start + len(replacement)) of the result, and every sample outside it is the original's, untouched.

``match_loudness`` scales the replacement to the active RMS of the speech it replaces (frames within 40 dB
of the loudest, so pauses do not count), limited to a peak of 0.99; ``trim_silence`` cuts a generated
word's leading and trailing silence (frames 40 dB under its loudest) down to 10 ms.
"""

from __future__ import annotations

import numpy as np

FRAME_SECONDS = 0.02
ACTIVE_DB = 40.0  # a frame this far under the loudest frame is a pause
PEAK = 0.99


def _frame_rms(x: np.ndarray, rate: int) -> tuple[np.ndarray, int]:
    width = max(1, int(round(FRAME_SECONDS * rate)))
    n = max(1, -(-x.size // width))
    padded = np.zeros(n * width)
    padded[: x.size] = x
    return np.sqrt(np.mean(padded.reshape(n, width) ** 2, axis=1)), width


def active_rms(x: np.ndarray, rate: int) -> float:
    """RMS over the frames within ACTIVE_DB of the loudest (0 for digital silence)."""
    rms, _ = _frame_rms(np.asarray(x, dtype=np.float64), rate)
    loudest = float(rms.max()) if rms.size else 0.0
    if loudest <= 0:
        return 0.0
    active = rms[rms >= loudest * 10 ** (-ACTIVE_DB / 20)]
    return float(np.sqrt(np.mean(active**2)))


def trim_silence(x: np.ndarray, rate: int, keep_seconds: float = 0.01) -> np.ndarray:
    """``x`` without the silence before its first and after its last active frame (``keep_seconds`` kept)."""
    rms, width = _frame_rms(np.asarray(x, dtype=np.float64), rate)
    if rms.max() <= 0:
        raise ValueError("the generated audio is silent")
    active = np.flatnonzero(rms >= rms.max() * 10 ** (-ACTIVE_DB / 20))
    keep = int(round(keep_seconds * rate))
    first = max(0, active[0] * width - keep)
    last = min(x.size, (active[-1] + 1) * width + keep)
    return x[first:last]


def match_loudness(replacement: np.ndarray, replaced: np.ndarray, rate: int) -> np.ndarray:
    """``replacement`` scaled to the active RMS of ``replaced``, its peak limited to 0.99."""
    have, want = active_rms(replacement, rate), active_rms(replaced, rate)
    if have <= 0:
        raise ValueError("the generated audio is silent")
    gain = want / have if want > 0 else 1.0
    peak = float(np.max(np.abs(replacement))) * gain
    if peak > PEAK:
        gain *= PEAK / peak
    return (np.asarray(replacement, dtype=np.float64) * gain).astype(np.float32)


def splice(
    original: np.ndarray, start: int, end: int, replacement: np.ndarray, crossfade: int
) -> tuple[np.ndarray, tuple[int, int]]:
    """(the spliced clip, its fake interval [start, start + len(replacement)) in samples)."""
    n, length = original.size, replacement.size
    if not 0 <= start < end <= n:
        raise ValueError(f"span [{start}, {end}) is not inside the clip of {n} samples")
    if crossfade < 0 or length < 2 * crossfade or end - start < crossfade:
        raise ValueError(
            f"a replacement of {length} samples for a span of {end - start} is too short for "
            f"{crossfade}-sample crossfades at both ends"
        )
    x = np.asarray(original, dtype=np.float64)
    r = np.asarray(replacement, dtype=np.float64).copy()
    if crossfade:
        phase = (np.arange(crossfade) + 0.5) / crossfade * (np.pi / 2)
        fade_in, fade_out = np.sin(phase), np.cos(phase)
        r[:crossfade] = x[start : start + crossfade] * fade_out + r[:crossfade] * fade_in
        r[length - crossfade :] = r[length - crossfade :] * fade_out + x[end - crossfade : end] * fade_in
    out = np.concatenate([x[:start], r, x[end:]])
    return np.clip(out, -1.0, 1.0).astype(np.float32), (start, start + length)

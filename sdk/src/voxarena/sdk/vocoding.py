"""Shared pieces of the signal-processing generators: source audio in at the model's rate (a
declared soxr-HQ resampling when it comes at another), float output checked and clipped."""

from __future__ import annotations

import numpy as np

from voxarena.codec import RESAMPLER, AudioClip, resample

from .errors import InvalidArgument


def source_signal(clip: AudioClip, rate: int, min_seconds: float = 0.1) -> np.ndarray:
    """float64 mono at ``rate`` (resampled with soxr HQ when needed: declared in GetInfo)."""
    if clip.duration < min_seconds:
        raise InvalidArgument(f"audio is {clip.duration:.3f} s; at least {min_seconds} s is needed")
    x = resample(clip.samples, clip.sample_rate, rate).astype(np.float64)
    if not np.any(x):
        raise InvalidArgument("audio is all zeros")
    return x


def output_clip(y: np.ndarray, rate: int) -> AudioClip:
    """float32 in [-1, 1]; a non-finite sample is the engine's fault."""
    y = np.asarray(y, dtype=np.float64)
    if not np.all(np.isfinite(y)):
        raise RuntimeError("the vocoder produced non-finite samples")
    return AudioClip(np.clip(y, -1.0, 1.0).astype(np.float32), rate)


INPUT_RESAMPLER = RESAMPLER

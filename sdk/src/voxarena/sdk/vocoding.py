"""Shared pieces of the signal-processing generators: source audio in at the model's rate (a
declared soxr-HQ resampling when it comes at another), float output checked and clipped; and
``SignalVocoder``, the facts the copy-synthesis vocoders of signal processing share."""

from __future__ import annotations

import numpy as np

from voxarena.codec import RESAMPLER, AudioClip, resample

from .errors import InvalidArgument
from .model import GeneratorModel, SynthesisRequest


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


class SignalVocoder(GeneratorModel):
    """A copy-synthesis vocoder of signal processing (no trained parameters): RECONSTRUCT of a 16 kHz
    source, deterministic, sources up to 120 s (longer: INVALID_ARGUMENT, split them; never a hang).
    ``load`` sets ``engine`` (library and version), which ``metadata`` states with the input resampler."""

    family = "VOCODER_DSP"
    tasks = ("RECONSTRUCT",)
    native_sample_rate = 16000
    deterministic = True
    max_source_seconds = 120.0
    engine = ""

    def metadata(self) -> dict[str, str]:
        return {"engine": self.engine, "input_resampler": INPUT_RESAMPLER}

    def source(self, request: SynthesisRequest) -> np.ndarray:
        """The request's source clip as float64 at ``native_sample_rate`` (``source_signal``)."""
        return source_signal(request.source_clip(), self.native_sample_rate)

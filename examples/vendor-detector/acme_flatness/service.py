"""Acme Flatness as a VoxArena detector: the SDK's ``DetectorModel`` around the scorer in ``cues``.

The class attributes are what GetInfo reports; ``score_batch`` resamples each clip to the scorer's
rate and scores it. The SDK does the rest: gRPC, health and reflection, request checks (empty or
non-finite audio, clips over ``max_seconds``, batches over ``max_batch_size``, unknown options),
per-item errors in ScoreBatch, timing, error codes.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from voxarena.codec import resample
from voxarena.sdk import AudioClip, DetectorModel

from . import cues


class AcmeFlatness(DetectorModel):
    name = "acme-flatness"
    version = "0.1.0"
    licence = "Apache-2.0"
    family = "HANDCRAFTED_FRONT_END"  # a voxarena.v1.DetectorFamily name
    native_sample_rate = cues.RATE  # clips arrive at any rate: score_batch resamples
    deterministic = True
    calibrated = False  # a one-class density with hand-set values: the scores are not log-likelihood ratios
    timing_scope = "score: resample to 16 kHz, framewise FFT, three cues, a Gaussian log density"
    max_batch_size = 16
    max_seconds = 120.0

    def load(self) -> None:
        cues.score(np.zeros(cues.RATE, np.float32))  # nothing to load: the weights are constants

    def parameter_count(self) -> int:
        return 2 * len(cues.NATURAL)  # a mean and a scale per cue

    def weights_sha256(self) -> str:
        """The identity of the model's values, which the arena records with every score."""
        values = [cues.NATURAL, cues.FRAME, cues.ACTIVE_DB]
        return hashlib.sha256(json.dumps(values, sort_keys=True).encode()).hexdigest()

    def score_batch(self, clips: list[AudioClip]) -> list[float]:
        # Already validated by the SDK: mono, finite, non-empty, at most max_seconds each.
        return [cues.score(resample(clip.samples, clip.sample_rate, cues.RATE)) for clip in clips]

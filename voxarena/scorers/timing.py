"""Real-time factor from the generator's own timing (scope as the generator declares it)."""

from __future__ import annotations

import math

from .registry import ClipInputs, Measurement, Metric, MetricInputError, ratio_of_sums


class RealTimeFactor(Metric):
    name = "rtf"
    description = "Real-time factor: seconds of the generator's native call per second of audio produced."

    def measure(self, clip: ClipInputs) -> Measurement:
        if clip.generation_wall_seconds is None:
            raise MetricInputError("no generation timing")
        if not 0 <= clip.generation_wall_seconds < math.inf:
            raise MetricInputError(f"generation wall_seconds {clip.generation_wall_seconds} is not a duration")
        return {"rtf.wall_seconds": clip.generation_wall_seconds, "rtf.audio_seconds": clip.audio.duration}, {}

    def aggregate(self, rows: list[dict[str, float]]) -> float:
        return ratio_of_sums(rows, "rtf.wall_seconds", "rtf.audio_seconds")

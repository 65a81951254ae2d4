"""Streamed detection: what a detector knows after t seconds of a call, how soon it knows a fake, what it
costs in latency (definitions; the run's table is ``orchestrator.metrics.streaming``).

A stream is its running scores, each with the audio seconds it covers, and its final score at the stream's
length. Its **score after t seconds** is the running score covering the most audio no later than t; the
final score when the whole clip is shorter than t (the call ended: the decision is the final one); none
before its first running score (no decision yet: the stream is left out at that t).

- **EER after t**: the EER of the streams' scores after t, bona fide against spoof (``stats.detection.eer``),
  over the streams that have a score by then.
- **Time to detect** a fake, against a threshold (the detector's EER threshold on whole clips: the one it
  would use offline): the audio seconds from the fake's first fake sample (0 for a wholly fake clip; the
  first spliced span of a partial fake) to the first running or final score below the threshold, counted
  from that onset; a fake never flagged has none (infinite). Reported as the fraction detected within
  each horizon and the median over the fakes detected.
- **False alarms over time**: the fraction of bona fide streams whose score after t is below the threshold.
- **Latency**: from a chunk's sending to the running score it brings, at the client; percentiles over every
  running score of real-time-paced streams.
- **Real-time factor**: the service's own timings summed over a stream, over its audio seconds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from voxarena.stats.detection import eer

HORIZONS = (0.5, 1.0, 2.0, 4.0)  # seconds of audio: the EER-vs-time curve's points
LATENCY_QUANTILES = (0.5, 0.95, 0.99)


@dataclass(frozen=True)
class StreamedClip:
    """One stream: (audio_seconds, score) of each running score in time order, the final score, the stream's
    length, whether the clip is bona fide, and where its fake part starts (seconds; 0 for a whole fake)."""

    running: tuple[tuple[float, float], ...]
    final: float
    duration: float
    bonafide: bool
    onset: float = 0.0

    def score_after(self, t: float) -> float | None:
        if self.duration <= t:
            return self.final
        best = None
        for seconds, score in self.running:
            if seconds <= t + 1e-9:
                best = score
            else:
                break
        return best

    def decisions(self) -> list[tuple[float, float]]:
        """Every (audio seconds, score) the caller sees: the running ones, then the final at the end."""
        return [*self.running, (self.duration, self.final)]

    def time_to_detect(self, threshold: float) -> float:
        """Seconds from the fake's onset to its first score below ``threshold`` at or after the onset; inf
        when never."""
        for seconds, score in self.decisions():
            if seconds + 1e-9 >= self.onset and score < threshold:
                return seconds - self.onset
        return math.inf


def eer_after(streams: Sequence[StreamedClip], t: float) -> tuple[float, int]:
    """(EER of the scores after ``t``, streams counted); ValueError when a class has none by then."""
    bona = [s.score_after(t) for s in streams if s.bonafide]
    spoof = [s.score_after(t) for s in streams if not s.bonafide]
    b = np.array([x for x in bona if x is not None], dtype=np.float64)
    f = np.array([x for x in spoof if x is not None], dtype=np.float64)
    if b.size == 0 or f.size == 0:
        raise ValueError(f"no bona fide or no spoof stream has a score after {t:g} s")
    return eer(b, f)[0], int(b.size + f.size)


def false_alarms_after(streams: Sequence[StreamedClip], threshold: float, t: float) -> float:
    """Fraction of the bona fide streams flagged (a score after ``t`` below ``threshold``) by ``t``: any of
    their decisions up to t, as a live caller would have been interrupted."""
    bona = [s for s in streams if s.bonafide]
    if not bona:
        return math.nan
    flagged = sum(any(score < threshold for seconds, score in s.decisions() if seconds <= t + 1e-9) for s in bona)
    return flagged / len(bona)


def detection_delays(streams: Sequence[StreamedClip], threshold: float) -> np.ndarray:
    """Time to detect of every fake stream (inf for those never flagged)."""
    return np.array([s.time_to_detect(threshold) for s in streams if not s.bonafide], dtype=np.float64)


def detected_within(delays: np.ndarray, t: float) -> float:
    return float(np.mean(delays <= t + 1e-9)) if delays.size else math.nan


def median_delay(delays: np.ndarray) -> float:
    """Median time to detect over the fakes detected at all (nan when none was)."""
    found = delays[np.isfinite(delays)]
    return float(np.median(found)) if found.size else math.nan


def latency_percentiles(latencies: Sequence[float]) -> dict[str, float]:
    x = np.asarray(latencies, dtype=np.float64)
    return {f"p{round(q * 100)}": (float(np.quantile(x, q)) if x.size else math.nan) for q in LATENCY_QUANTILES}

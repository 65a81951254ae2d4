"""The arithmetic of streamed detection (``DetectorService.ScoreStream``), shared by the SDK that serves it,
the conformance checks that test it and the orchestrator that calls it, so the three agree sample for
sample.

A stream's running scores come each time the audio seen passes a further multiple of the declared hop
(once ``min_seconds`` has come); a windowed detector's running score covers the last ``window_seconds``
of the audio seen. Sample counts are integers; a hop or window in samples is ``seconds x rate`` (a
multiple of the hop may fall between two samples: the crossing is decided in real numbers).
"""

from __future__ import annotations

import math

MODES = ("WINDOWED", "NATIVE")  # StreamingMode without its STREAMING_ prefix; "" = no streaming
MIN_HOP_SECONDS, MAX_HOP_SECONDS = 0.01, 60.0


def declaration_problems(
    mode: str, window: float, hop: float, max_chunk: float, min_seconds: float, max_seconds: float
) -> list[str]:
    """What breaks [detector.stream-declared] in a service's StreamingInfo (empty: fine). ``mode`` is
    "WINDOWED", "NATIVE" or "" (not streaming: nothing to check)."""
    if not mode:
        return []
    if mode not in MODES:
        return [f"mode {mode!r} is not one of {', '.join(MODES)}"]
    problems = []
    top = max_seconds if max_seconds > 0 else math.inf
    if not MIN_HOP_SECONDS <= hop <= MAX_HOP_SECONDS:
        problems.append(f"hop_seconds {hop:g} is outside [{MIN_HOP_SECONDS:g}, {MAX_HOP_SECONDS:g}]")
    if not hop <= max_chunk <= top:
        problems.append(f"max_chunk_seconds {max_chunk:g} is outside [hop_seconds {hop:g}, max_seconds {top:g}]")
    if mode == "WINDOWED" and not min_seconds <= window <= top:
        problems.append(f"window_seconds {window:g} is outside [min_seconds {min_seconds:g}, max_seconds {top:g}]")
    return problems


def score_due(before: int, after: int, rate: int, hop: float, min_seconds: float) -> bool:
    """Whether a chunk that took the stream from ``before`` to ``after`` samples brings a running score:
    it passes a further multiple of ``hop`` seconds, and at least ``min_seconds`` has come."""
    if after * 1.0 < min_seconds * rate:
        return False
    hop_samples = hop * rate
    return math.floor(after / hop_samples) > math.floor(before / hop_samples)


def window_samples(window_seconds: float, rate: int) -> int:
    """The samples a windowed running score covers (the last ones seen; all of them while fewer came)."""
    return max(1, round(window_seconds * rate))


def chunk_limit(max_chunk_seconds: float, rate: int) -> int:
    """The most samples one chunk may hold."""
    return math.floor(max_chunk_seconds * rate + 1e-9)

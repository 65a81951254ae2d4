"""Segment scores (partial fakes): how many a clip has at a hop, and the time each covers.

The contract (detector.proto, ``detector.segments``): a clip of ``samples`` samples at ``rate`` Hz has
``ceil(samples / (hop x rate))`` segments at a hop of ``hop`` seconds, the i-th covering the clip's time
[i x hop, (i + 1) x hop) (the last one cut at the clip's end). Services, the SDK, conformance and the
orchestrator all count with ``segment_count``.
"""

from __future__ import annotations

import math

MIN_HOP_SECONDS = 0.001
MAX_HOP_SECONDS = 10.0


def segment_count(samples: int, rate: int, hop_seconds: float) -> int:
    """The number of segments of a clip of ``samples`` at ``rate`` Hz, at ``hop_seconds`` (ceil, with a
    1e-9 allowance so that a clip of exactly k hops has k, not k + 1, despite floating point)."""
    if hop_seconds <= 0 or rate <= 0:
        raise ValueError(f"hop {hop_seconds} s at {rate} Hz: both must be positive")
    return max(0, math.ceil(samples / (hop_seconds * rate) - 1e-9))


def valid_hop(hop_seconds: float) -> bool:
    """DetectorInfo.segment_hop_seconds: 0 (no segments) or within [0.001, 10] seconds."""
    return hop_seconds == 0 or MIN_HOP_SECONDS <= hop_seconds <= MAX_HOP_SECONDS

"""Watermark survival: does a watermark detector still find the mark, at a false-alarm rate fixed on clean
speech?

A watermark detector's score is higher for "no mark" (the detector convention: higher = bona fide). At a
target false-alarm rate ``far`` (1 % in the arena) the threshold is the ``floor(far x n)``-th smallest of
the n bona fide (unmarked) scores (0-indexed), and a clip is **flagged** as marked when its score is
strictly below it: then at most ``floor(far x n)`` bona fide clips are flagged, ties included, i.e. the
false-alarm rate is at most ``far`` (with n < 1 / far, no bona fide clip may be flagged: the threshold is the
lowest bona fide score). ``flagged`` is the share of a set of clips flagged: the detection rate on a
watermarked generator's clips, the false-alarm rate on anything unmarked. ``eer`` is ``stats.detection.eer``
with the bona fide clips as targets.
"""

from __future__ import annotations

import math

import numpy as np

from voxarena.stats.detection import eer

FAR = 0.01


def threshold_at_far(bonafide: np.ndarray, far: float = FAR) -> float:
    """The threshold below which at most ``far`` of the bona fide scores lie."""
    b = np.sort(np.asarray(bonafide, dtype=float))
    if b.size == 0:
        raise ValueError("no bona fide scores")
    k = math.floor(far * b.size + 1e-9)
    return float(b[k]) if k < b.size else math.inf


def survival(bonafide: np.ndarray, clips: np.ndarray, far: float = FAR) -> dict[str, float]:
    """``threshold``, ``false_alarm`` (bona fide share flagged), ``flagged`` (``clips`` share flagged), ``eer``."""
    b, c = np.asarray(bonafide, dtype=float), np.asarray(clips, dtype=float)
    t = threshold_at_far(b, far)
    return {
        "threshold": t,
        "false_alarm": float(np.mean(b < t)),
        "flagged": float(np.mean(c < t)) if c.size else math.nan,
        "eer": eer(b, c)[0] if c.size else math.nan,
    }

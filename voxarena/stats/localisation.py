"""Localisation metrics for partial fakes: where in a clip is it fake, and does the detector know?

The arena knows every fake sample of its own partial fakes, so the truth here is exact, in samples. A
detector's segment scores (``hop`` seconds each, higher = more bona fide; native, or derived from sliding
windows) are compared with it three ways:

- **Segment EER at a resolution** (PartialSpoof; Zhang et al., IEEE/ACM TASLP 2023): the clip is cut into
  segments of ``resolution`` seconds (``voxarena.segments.segment_count`` of them, the last one short); a
  segment is fake if any of its samples is. A detector's score for a segment is the lowest (most fake) of
  its own segment scores that overlap it, so that one fake hop inside makes the segment look fake, as the
  label does. EER over every segment of every clip pooled (``stats.detection.eer``).
- **Range-based EER** (Zhang, Wang, Cooper, Evans, Yamagishi, "Range-based equal error rate for spoof
  localization", Interspeech 2023): no resolution; the timeline is cut where either the detector's score or
  the truth changes, and each piece counts for its duration. Miss = bona fide time scored below the
  threshold / all bona fide time; false alarm = fake time scored at or above it / all fake time; the EER is
  the DET point where they are closest (their mean), as ``eer`` does with trials.
- **Detected fake time at a threshold** (the detector's utterance EER threshold, in the arena): time scored
  below it is "detected fake"; precision, recall and IoU of that time against the true fake time, pooled
  over clips (bona fide clips included: time wrongly flagged on them lowers precision).

Utterance EER binned by the fake fraction of each partial fake (< 10 %, 10-30 %, > 30 % of its samples)
uses the utterance scores (``fraction_bin``). Boundaries in samples: segment i of a hop h at rate r covers
samples [round(i h r), round((i + 1) h r)), cut at the clip's end.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import numpy as np

from voxarena.segments import segment_count
from voxarena.stats.detection import eer

_T = TypeVar("_T")
RESOLUTIONS = (0.02, 0.04, 0.08, 0.16, 0.32, 0.64)  # seconds: the PartialSpoof label resolutions
FRACTION_BINS = ((0.0, 0.10, "<10%"), (0.10, 0.30, "10-30%"), (0.30, 1.0, ">30%"))


@dataclass(frozen=True)
class LocalisedClip:
    """One scored clip: its length, its true fake intervals ([start, end) in samples, sorted, disjoint;
    none for a bona fide clip) and a detector's segment scores at ``hop`` seconds."""

    samples: int
    rate: int
    fake: tuple[tuple[int, int], ...]
    hop: float
    scores: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "_memo", {})  # what is computed of the clip, once (a bootstrap draws it again)
        n = segment_count(self.samples, self.rate, self.hop)
        if len(self.scores) != n:
            raise ValueError(f"{len(self.scores)} segment scores for {self.samples} samples at {self.hop:g} s: {n}")
        previous = 0
        for start, end in self.fake:
            if not (previous <= start < end <= self.samples):
                raise ValueError(f"fake interval [{start}, {end}) is not sorted, disjoint and inside the clip")
            previous = end

    def memo(self, key: tuple[Any, ...], compute: Callable[[], _T]) -> _T:
        """``compute()``, once per ``key`` for this clip."""
        memo: dict[tuple[Any, ...], Any] = self._memo  # type: ignore[attr-defined]
        if key not in memo:
            memo[key] = compute()
        return memo[key]  # type: ignore[no-any-return]

    @property
    def fake_fraction(self) -> float:
        return sum(end - start for start, end in self.fake) / self.samples if self.samples else 0.0


def boundaries(samples: int, rate: int, hop: float) -> np.ndarray:
    """Sample boundaries of the segments at ``hop``: n + 1 of them, the last one the clip's end."""
    n = segment_count(samples, rate, hop)
    edges = np.round(np.arange(n + 1) * hop * rate).astype(np.int64)
    return np.minimum(edges, samples)


def segment_labels(samples: int, rate: int, fake: Sequence[tuple[int, int]], resolution: float) -> np.ndarray:
    """True for each segment at ``resolution`` of a clip of ``samples`` that holds a sample of ``fake``."""
    edges = boundaries(samples, rate, resolution)
    labels = np.zeros(len(edges) - 1, dtype=bool)
    for start, end in fake:  # segment j overlaps [start, end) iff edges[j] < end and edges[j + 1] > start
        first = int(np.searchsorted(edges, start, side="right")) - 1
        last = int(np.searchsorted(edges, end, side="left")) - 1
        labels[max(first, 0) : last + 1] = True
    return labels


def scores_at(clip: LocalisedClip, resolution: float) -> np.ndarray:
    """The detector's score of each segment at ``resolution``: the lowest of its own segments overlapping it."""
    target = boundaries(clip.samples, clip.rate, resolution)
    own = boundaries(clip.samples, clip.rate, clip.hop)
    out = np.empty(len(target) - 1)
    for j, (a, b) in enumerate(zip(target[:-1], target[1:])):
        first = int(np.searchsorted(own, a, side="right")) - 1
        last = max(int(np.searchsorted(own, b, side="left")) - 1, first)
        out[j] = np.min(clip.scores[first : last + 1])
    return out


def segment_eer(clips: Sequence[LocalisedClip], resolution: float) -> tuple[float, float]:
    """(EER, threshold) over every segment at ``resolution`` of every clip (fake segments are the spoofs)."""
    labels = np.concatenate(
        [c.memo(("labels", resolution), partial(segment_labels, c.samples, c.rate, c.fake, resolution)) for c in clips]
    )
    scores = np.concatenate([c.memo(("scores", resolution), partial(scores_at, c, resolution)) for c in clips])
    if labels.all() or not labels.any():
        raise ValueError("segment EER needs both bona fide and fake segments")
    return eer(scores[~labels], scores[labels])


def pieces(clip: LocalisedClip) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(score, is fake, seconds) of each stretch of the clip where neither the score nor the truth changes."""
    own = boundaries(clip.samples, clip.rate, clip.hop)
    cuts = np.unique(np.concatenate([own, np.asarray(clip.fake, dtype=np.int64).reshape(-1)]))
    starts, lengths = cuts[:-1], np.diff(cuts)
    keep = lengths > 0
    starts, lengths = starts[keep], lengths[keep]
    segment = np.searchsorted(own, starts, side="right") - 1
    fake = np.zeros(starts.size, dtype=bool)
    for start, end in clip.fake:
        fake |= (starts >= start) & (starts < end)
    return clip.scores[segment].astype(np.float64), fake, lengths / clip.rate


def _pooled_pieces(clips: Sequence[LocalisedClip]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    parts = [c.memo(("pieces",), partial(pieces, c)) for c in clips]
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(3))  # type: ignore[return-value]


def range_eer(clips: Sequence[LocalisedClip]) -> tuple[float, float]:
    """(range-based EER, threshold): the duration-weighted DET point where miss and false alarm meet."""
    scores, fake, seconds = _pooled_pieces(clips)
    bona_time, fake_time = seconds[~fake].sum(), seconds[fake].sum()
    if bona_time <= 0 or fake_time <= 0:
        raise ValueError("range-based EER needs both bona fide and fake time")
    order = np.argsort(scores, kind="mergesort")
    s, f, w = scores[order], fake[order], seconds[order]
    # Threshold at each piece's score in turn: that piece and those before it are rejected (called fake).
    miss = np.concatenate([[0.0], np.cumsum(np.where(f, 0.0, w)) / bona_time])
    false_alarm = np.concatenate([[1.0], 1.0 - np.cumsum(np.where(f, w, 0.0)) / fake_time])
    thresholds = np.concatenate([[s[0] - 0.001], s])
    # Only whole groups of equal scores can be rejected: a segment cut by a fake boundary is two pieces with
    # one score, and no threshold separates them.
    k = np.flatnonzero(np.concatenate([[True], s[1:] != s[:-1], [True]]))
    i = int(k[np.argmin(np.abs(miss[k] - false_alarm[k]))])
    return float((miss[i] + false_alarm[i]) / 2), float(thresholds[i])


def detected_time(clips: Sequence[LocalisedClip], threshold: float) -> dict[str, float]:
    """Precision, recall and IoU of the time scored below ``threshold`` against the true fake time (NaN where
    the denominator is empty), and the seconds of each kind."""
    scores, fake, seconds = _pooled_pieces(clips)
    flagged = scores < threshold
    hit = float(seconds[flagged & fake].sum())
    false_alarm = float(seconds[flagged & ~fake].sum())
    missed = float(seconds[~flagged & fake].sum())

    def ratio(num: float, den: float) -> float:
        return num / den if den > 0 else float("nan")

    return {
        "precision": ratio(hit, hit + false_alarm),
        "recall": ratio(hit, hit + missed),
        "iou": ratio(hit, hit + false_alarm + missed),
        "fake_seconds": hit + missed,
        "flagged_seconds": hit + false_alarm,
    }


def fraction_bin(fraction: float) -> str:
    """The fake-fraction bin of a partial fake ("<10%", "10-30%", ">30%")."""
    for low, high, name in FRACTION_BINS:
        if low <= fraction < high or (high == 1.0 and fraction == 1.0):
            return name
    raise ValueError(f"fake fraction {fraction} is outside [0, 1]")

"""Localisation metrics against computations written apart from voxarena.stats.localisation: everything
expanded to one value per sample (truth, the detector's score there), segments read off those arrays, and
the range-based EER from scikit-learn's ROC with each sample weighted by its duration."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_curve

from voxarena.stats.localisation import (
    RESOLUTIONS,
    LocalisedClip,
    detected_time,
    fraction_bin,
    range_eer,
    scores_at,
    segment_eer,
    segment_labels,
)


def random_clips(seed: int, n: int = 12, rate: int = 1000, hop: float = 0.02) -> list[LocalisedClip]:
    """Bona fide and partial fakes of 0.5-3 s with up to 3 fake spans; scores lower inside fake spans, with
    noise (all distinct: no ties between samples of different scores)."""
    rng = np.random.default_rng(seed)
    clips = []
    for k in range(n):
        samples = int(rng.integers(500, 3000))
        cuts = np.sort(rng.choice(np.arange(1, samples), size=2 * int(rng.integers(0, 4)), replace=False))
        fake = tuple((int(a), int(b)) for a, b in zip(cuts[::2], cuts[1::2])) if k % 3 else ()
        truth = per_sample_truth(samples, fake)
        count = -(-samples // int(round(hop * rate)))
        scores = rng.normal(1.0, 1.0, count)
        for i in range(count):
            if truth[int(round(i * hop * rate)) : int(round((i + 1) * hop * rate))].any():
                scores[i] -= 2.0
        clips.append(LocalisedClip(samples, rate, fake, hop, scores))
    return clips


def per_sample_truth(samples: int, fake) -> np.ndarray:
    truth = np.zeros(samples, dtype=bool)
    for a, b in fake:
        truth[a:b] = True
    return truth


def per_sample_scores(clip: LocalisedClip) -> np.ndarray:
    width = int(round(clip.hop * clip.rate))
    return np.repeat(clip.scores, width)[: clip.samples]


def brute_segments(clip: LocalisedClip, resolution: float) -> tuple[np.ndarray, np.ndarray]:
    truth, score = per_sample_truth(clip.samples, clip.fake), per_sample_scores(clip)
    width = int(round(resolution * clip.rate))
    starts = range(0, clip.samples, width)
    return np.array([truth[s : s + width].any() for s in starts]), np.array(
        [score[s : s + width].min() for s in starts]
    )


def brute_eer(bonafide: np.ndarray, spoof: np.ndarray) -> float:
    best = None
    for t in np.concatenate([[-np.inf], np.sort(np.concatenate([bonafide, spoof]))]):
        miss, fa = np.mean(bonafide <= t), np.mean(spoof > t)
        if best is None or abs(miss - fa) < best[0]:
            best = (abs(miss - fa), (miss + fa) / 2)
    return best[1]


@pytest.mark.parametrize("resolution", RESOLUTIONS)
def test_segment_labels_and_scores_are_those_of_the_samples(resolution):
    for clip in random_clips(1):
        labels, scores = brute_segments(clip, resolution)
        assert np.array_equal(segment_labels(clip.samples, clip.rate, clip.fake, resolution), labels)
        assert np.array_equal(scores_at(clip, resolution), scores)


@pytest.mark.parametrize("resolution", [0.02, 0.16, 0.64])
def test_segment_eer_equals_a_brute_force_eer(resolution):
    clips = random_clips(2, n=30)
    pairs = [brute_segments(c, resolution) for c in clips]
    labels = np.concatenate([p[0] for p in pairs])
    scores = np.concatenate([p[1] for p in pairs])
    expected = brute_eer(scores[~labels], scores[labels])
    assert segment_eer(clips, resolution)[0] == pytest.approx(expected, abs=1e-12)


def test_range_eer_equals_the_duration_weighted_roc_of_scikit_learn():
    clips = random_clips(3, n=30)
    truth = np.concatenate([per_sample_truth(c.samples, c.fake) for c in clips])
    score = np.concatenate([per_sample_scores(c) for c in clips])
    weight = np.concatenate([np.full(c.samples, 1 / c.rate) for c in clips])
    fpr, tpr, _ = roc_curve(~truth, score, sample_weight=weight, drop_intermediate=False)
    i = np.argmin(np.abs((1 - tpr) - fpr))
    assert range_eer(clips)[0] == pytest.approx(((1 - tpr[i]) + fpr[i]) / 2, abs=1e-9)


def test_range_eer_cannot_split_a_segment_the_truth_cuts():
    """Half of one 20 ms segment is fake: its two halves share a score, so no threshold tells them apart."""
    clip = LocalisedClip(20, 1000, ((10, 20),), 0.02, np.array([0.0]))
    assert range_eer([clip])[0] == 0.5


def test_range_eer_does_not_depend_on_a_resolution_but_segment_eer_does():
    """20 fake ms inside a 1 s clip, scored right: a 640 ms segment is 'fake' for all its 640 ms."""
    rate, hop = 1000, 0.02
    clip = LocalisedClip(1000, rate, ((500, 520),), hop, np.where(np.arange(50) == 25, -1.0, 1.0))
    bona = LocalisedClip(1000, rate, (), hop, np.ones(50) + np.linspace(0, 0.1, 50))
    assert range_eer([clip, bona])[0] == 0.0  # every fake sample scored below every bona fide one
    assert segment_eer([clip, bona], 0.02)[0] == 0.0
    assert segment_eer([clip, bona], 0.64)[0] == 0.0  # min-pooling keeps the fake hop's score


def test_detected_time_against_the_samples():
    clips = random_clips(4, n=20)
    threshold = 0.3
    truth = np.concatenate([per_sample_truth(c.samples, c.fake) for c in clips])
    flagged = np.concatenate([per_sample_scores(c) for c in clips]) < threshold
    seconds = np.concatenate([np.full(c.samples, 1 / c.rate) for c in clips])
    hit, fa, miss = (seconds[m].sum() for m in (flagged & truth, flagged & ~truth, ~flagged & truth))
    got = detected_time(clips, threshold)
    assert got["precision"] == pytest.approx(hit / (hit + fa))
    assert got["recall"] == pytest.approx(hit / (hit + miss))
    assert got["iou"] == pytest.approx(hit / (hit + fa + miss))


def test_bad_clips_and_empty_classes_are_refused():
    with pytest.raises(ValueError, match="segment scores"):
        LocalisedClip(1000, 1000, (), 0.02, np.zeros(49))
    with pytest.raises(ValueError, match="inside the clip"):
        LocalisedClip(1000, 1000, ((900, 1100),), 0.02, np.zeros(50))
    with pytest.raises(ValueError, match="sorted, disjoint"):
        LocalisedClip(1000, 1000, ((100, 300), (200, 400)), 0.02, np.zeros(50))
    bona = LocalisedClip(1000, 1000, (), 0.02, np.zeros(50))
    with pytest.raises(ValueError, match="both"):
        range_eer([bona])
    with pytest.raises(ValueError, match="both"):
        segment_eer([bona], 0.02)
    assert np.isnan(detected_time([bona], -1.0)["precision"])


def test_fraction_bins():
    assert [fraction_bin(x) for x in (0.0, 0.0999, 0.1, 0.2999, 0.3, 1.0)] == [
        "<10%", "<10%", "10-30%", "10-30%", ">30%", ">30%"
    ]  # fmt: skip
    with pytest.raises(ValueError):
        fraction_bin(1.5)

"""The speaker-cluster bootstrap: seeded, brackets the estimate, collapses with one cluster."""

import numpy as np
import pytest

from voxarena.stats.bootstrap import cluster_intervals


def test_interval_brackets_the_mean_and_is_seeded():
    rng = np.random.default_rng(0)
    values = rng.normal(5, 1, 60)
    clusters = [f"spk{i % 6}" for i in range(60)]
    stat = lambda idx: {"mean": float(values[idx].mean())}  # noqa: E731
    lo, hi = cluster_intervals(clusters, stat, 500, seed=3, confidence=0.95)
    assert lo["mean"] < values.mean() < hi["mean"]
    assert cluster_intervals(clusters, stat, 500, seed=3, confidence=0.95) == (lo, hi)


def test_clusters_widen_the_interval_when_speakers_differ():
    # 6 speakers with very different means: resampling speakers (not utterances) must show it.
    values = np.repeat(np.arange(6, dtype=float) * 10, 10)
    stat = lambda idx: {"mean": float(values[idx].mean())}  # noqa: E731
    by_speaker = cluster_intervals([f"s{i // 10}" for i in range(60)], stat, 400, 1, 0.95)
    by_utterance = cluster_intervals([f"u{i}" for i in range(60)], stat, 400, 1, 0.95)
    assert (by_speaker[1]["mean"] - by_speaker[0]["mean"]) > 1.5 * (by_utterance[1]["mean"] - by_utterance[0]["mean"])


def test_one_cluster_collapses():
    values = np.arange(10.0)
    lo, hi = cluster_intervals(["a"] * 10, lambda idx: {"m": float(values[idx].mean())}, 50, 0, 0.9)
    assert lo["m"] == pytest.approx(4.5) and hi["m"] == pytest.approx(4.5)


def _reference_intervals(clusters, statistic, resamples, seed, confidence):
    """A second implementation of the documented procedure: clusters in sorted order, each resample
    draws len(clusters) of them with replacement from numpy's default_rng(seed), a resample whose
    statistic raises ValueError is dropped, non-finite or None values are dropped, and the interval
    is the (alpha, 1 - alpha) percentile pair with alpha = (1 - confidence) / 2."""
    names = sorted(set(clusters))
    where = {n: [i for i, c in enumerate(clusters) if c == n] for n in names}
    rng = np.random.default_rng(seed)
    draws = {}
    for _ in range(resamples):
        picked = rng.integers(0, len(names), size=len(names))
        idx = np.array([i for k in picked for i in where[names[k]]])
        try:
            values = statistic(idx)
        except ValueError:
            continue
        for key, v in values.items():
            if v is not None and np.isfinite(v):
                draws.setdefault(key, []).append(v)
    a = (1 - confidence) / 2
    return ({k: np.quantile(v, a) for k, v in draws.items()}, {k: np.quantile(v, 1 - a) for k, v in draws.items()})


@pytest.mark.parametrize("confidence", [0.9, 0.5])
def test_matches_a_second_implementation(confidence):
    rng = np.random.default_rng(5)
    clusters = [f"c{k}" for k in (3, 0, 4, 1, 1, 2, 4, 4, 0, 3, 3, 3, 2, 4, 4)]  # uneven, interleaved
    values = rng.normal(0, 1, len(clusters)) + np.array([int(c[1]) for c in clusters])

    def stat(idx):
        if "c2" not in {clusters[i] for i in idx}:
            raise ValueError("needs c2")  # e.g. a trial set without spoofs: skipped
        m = float(values[idx].mean())
        return {"mean": m, "sometimes": m if len(idx) % 2 else float("nan"), "never": None}

    got = cluster_intervals(clusters, stat, 300, seed=9, confidence=confidence)
    want = _reference_intervals(clusters, stat, 300, 9, confidence)
    assert set(got[0]) == set(got[1]) == {"mean", "sometimes"}
    for side in (0, 1):
        for k in ("mean", "sometimes"):
            assert got[side][k] == pytest.approx(want[side][k], rel=1e-12)
    assert got[0]["mean"] < got[1]["mean"]


def test_other_errors_are_not_swallowed():
    with pytest.raises(TypeError):
        cluster_intervals(["a", "b"], lambda idx: {"m": None + 1}, 5, 0, 0.95)

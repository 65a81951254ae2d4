"""The speaker-cluster bootstrap: seeded, brackets the estimate, collapses with one cluster."""
import numpy as np
import pytest

from scorers.bootstrap import cluster_intervals


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

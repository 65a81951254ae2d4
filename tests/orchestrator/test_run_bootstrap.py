"""The confidence intervals of a run's detection metrics: a speaker-cluster bootstrap seeded with the
run's seed, checked through ``Arena.run`` on data built so the expected intervals follow by hand.

The corpus (a synthetic ``kind: table`` manifest) carries its own spoofs (``key: spoof``), so no
generated clip enters the trial set ``manifest:A01`` (corpus: the table file's name) and its
scores do not depend on the run seed: only the bootstrap can. The test double ``dummy-detector``
scores about log(noise_fraction / 2).

Speakers: ``good`` (10 bona fide clips scoring above every spoof), ``bad`` (10 bona fide clips below
every spoof), and four spoof speakers (2 clips each, in between). Pooled, half the bona fide
trials sit below the spoofs: EER 0.5. Resampling the 6 speakers with replacement, a draw without
``bad`` but with ``good`` and a spoof speaker has EER 0, probability (5/6)^6 - (4/6)^6 - (1/6)^6
= 0.247; symmetrically EER 1 with probability 0.247; draws without bona fide or without spoof
(0.089) are skipped. So both 2.5% tails sit on the extremes: the 95% interval is exactly [0, 1].
Resampling the 28 clips instead, all 20 bona fide draws would have to come from one speaker's 10
clips for an extreme: the interval stays strictly inside (0, 1).
"""

from __future__ import annotations

import math

import pytest

CLEAN_ROW = ("dummy-detector", "manifest:A01", "clean")
CI_COLUMNS = [f"{m}_ci_{b}" for m in ("eer", "min_dcf", "act_dcf", "cllr", "min_cllr") for b in ("low", "high")]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, synthetic_dataset_factory) -> dict:
    rows = [{"id": f"good-{j}", "speaker": "good", "noise_fraction": 0.5 + 0.04 * j} for j in range(10)]
    rows += [{"id": f"bad-{j}", "speaker": "bad", "noise_fraction": 0.0005 + 0.0001 * j} for j in range(10)]
    rows += [
        {
            "id": f"spoof{k}-{j}",
            "speaker": f"victim{k}",
            "noise_fraction": 0.01 + 0.01 * k + 0.002 * j,
            "key": "spoof",
            "attack": "A01",
        }
        for k in range(4)
        for j in range(2)
    ]
    root = tmp_path_factory.mktemp("corpus") / "synthetic"
    path = synthetic_dataset_factory(root, rows)
    return {"kind": "table", "root": str(path)}


@pytest.fixture(scope="module")
def runs(tmp_path_factory, corpus, make_config, run_arena, read_csv) -> dict[str, dict]:
    """The corpus trial set's row, from runs with seeds 1, 1 (another directory) and 2."""
    out = {}
    for name, seed in (("a", 1), ("b", 1), ("c", 2)):
        tmp = tmp_path_factory.mktemp(f"seed{name}")
        # CLONE: a task the dummy generator does not offer, so it generates nothing.
        config = make_config(
            tmp,
            corpus,
            **{
                "dataset.max_items": 100,
                "protocol.seed": seed,
                "protocol.tasks": ["CLONE"],
                "scorer.bootstrap_resamples": 1000,
            },
        )
        run_arena(config, tmp / "run")
        rows = read_csv(tmp / "run" / "metrics" / "detection_metrics.csv")
        out[name] = next(r for r in rows if (r["detector"], r["generator"], r["condition"]) == CLEAN_ROW)
    return out


def test_the_trial_set_is_the_corpus(runs):
    row = runs["a"]
    assert (row["n_bonafide"], row["n_spoof"]) == ("20", "8")
    assert float(row["eer"]) == pytest.approx(0.5)  # half the bona fide trials below every spoof


def test_intervals_cluster_by_speaker(runs):
    for row in runs.values():
        assert (float(row["eer_ci_low"]), float(row["eer_ci_high"])) == (0.0, 1.0)


def test_the_bootstrap_uses_the_run_seed(runs):
    a, b, c = runs["a"], runs["b"], runs["c"]
    assert [a[k] for k in CI_COLUMNS] == [b[k] for k in CI_COLUMNS]  # same seed, same bytes
    assert all(a[k] == c[k] for k in ("eer", "min_dcf", "act_dcf", "cllr", "min_cllr"))  # same scores ...
    moved = [k for k in CI_COLUMNS if a[k] != c[k]]
    assert moved, "another run seed gave identical intervals"  # ... other resamples
    assert all(math.isfinite(float(a[k])) for k in CI_COLUMNS)

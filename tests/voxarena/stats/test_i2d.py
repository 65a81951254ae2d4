"""I2D aggregates against values worked out by hand."""

from __future__ import annotations

import math

import pytest

from voxarena.stats.i2d import aggregate_trajectory, oriented


def test_aggregates_by_hand():
    # x = 0.9, 0.8, 0.6 over iterations 1..3
    agg = aggregate_trajectory([0.9, 0.8, 0.6], ewa_decay=0.5)
    assert agg["mean"] == pytest.approx(2.3 / 3)
    assert agg["lwa"] == pytest.approx((1 * 0.9 + 2 * 0.8 + 3 * 0.6) / 6)  # 0.7166...
    assert agg["ewa"] == pytest.approx((1 * 0.9 + 0.5 * 0.8 + 0.25 * 0.6) / 1.75)  # 0.8285...
    assert agg["auc"] == pytest.approx((0.9 + 0.8) / 2 + (0.8 + 0.6) / 2)  # 1.55


def test_flat_trajectory_and_orientation():
    agg = aggregate_trajectory([0.4] * 5)
    assert agg["mean"] == agg["lwa"] == pytest.approx(0.4) and agg["ewa"] == pytest.approx(0.4)
    assert agg["auc"] == pytest.approx(4 * 0.4)
    assert oriented(0.1, higher_is_better=False) == pytest.approx(0.9)  # 1 - CER
    assert oriented(0.7, higher_is_better=True) == 0.7


def test_lwa_favours_late_and_ewa_early_iterations():
    falling = [1.0, 0.8, 0.6, 0.4, 0.2]
    agg = aggregate_trajectory(falling)
    assert agg["lwa"] < agg["mean"] < agg["ewa"]


def test_a_missing_iteration_gives_no_aggregate():
    assert all(math.isnan(v) for v in aggregate_trajectory([0.9, math.nan, 0.7]).values())
    assert all(math.isnan(v) for v in aggregate_trajectory([]).values())


def test_default_decay_is_one_half_and_short_trajectories_by_hand():
    # The paper's EWA decay 0.5 by default: weights 1, .5, .25 over 1.75.
    assert aggregate_trajectory([0.9, 0.8, 0.6])["ewa"] == pytest.approx((0.9 + 0.4 + 0.15) / 1.75)
    # Two iterations: one trapezoid; one iteration: no width, AUC 0 (mean, LWA and EWA are the value).
    two = aggregate_trajectory([0.9, 0.5])
    assert two["auc"] == pytest.approx(0.7) and two["lwa"] == pytest.approx((0.9 + 2 * 0.5) / 3)
    one = aggregate_trajectory([0.7])
    assert one == {"mean": pytest.approx(0.7), "lwa": pytest.approx(0.7), "ewa": pytest.approx(0.7), "auc": 0.0}
    assert all(math.isnan(v) for v in aggregate_trajectory([0.5, math.inf]).values())

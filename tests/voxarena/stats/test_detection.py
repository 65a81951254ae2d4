"""Detection metrics against values computed by hand and by independent implementations."""

import math

import numpy as np
import pytest

from voxarena.stats import detection as D

BONA = np.array([0.9, 0.8, 0.3])
SPOOF = np.array([0.5, 0.2, 0.1, 0.4])


def test_hand_computed_set():
    # Sorted: .1s .2s .3b .4s .5s .8b .9b -> DET points (Pmiss, Pfa):
    # (0,1) (0,.75) (0,.5) (1/3,.5) (1/3,.25) (1/3,0) (2/3,0) (1,0); closest pair (1/3, .25) at threshold .4.
    eer, thr = D.eer(BONA, SPOOF)
    assert eer == pytest.approx((1 / 3 + 0.25) / 2)
    assert thr == pytest.approx(0.4)
    # Cdet = .95 Pmiss + .5 Pfa, smallest at (0, .5) = .25; normalised by min(.95, .5).
    assert D.min_dcf(BONA, SPOOF) == pytest.approx(0.5)
    # Bayes threshold -log(1.9) = -0.64: nothing missed, every spoof accepted -> .5 / .5.
    assert D.act_dcf(BONA, SPOOF) == pytest.approx(1.0)
    # PAV posteriors 0,0,1/3,1/3,1/3,1,1; prior odds 3/4 -> LLR log(2/3) for the pooled block.
    expected_min_cllr = 0.5 * (math.log2(2.5) / 3 + 2 * math.log2(5 / 3) / 4)
    assert D.min_cllr(BONA, SPOOF) == pytest.approx(expected_min_cllr)


def test_cllr_by_definition():
    b, s = np.array([2.0, -1.0, 0.5]), np.array([-3.0, 0.2])
    expected = 0.5 * (sum(math.log2(1 + math.exp(-x)) for x in b) / 3 + sum(math.log2(1 + math.exp(x)) for x in s) / 2)
    assert D.cllr(b, s) == pytest.approx(expected)
    # A system that always says LLR 0 costs exactly one bit.
    assert D.cllr(np.zeros(5), np.zeros(7)) == pytest.approx(1.0)


def test_cllr_finite_for_huge_scores():
    assert D.cllr(np.array([1e6]), np.array([-1e6])) == pytest.approx(0.0)
    wrong = D.cllr(np.array([-1e6]), np.array([1e6]))
    assert math.isfinite(wrong) and wrong == pytest.approx(1e6 / math.log(2))


def _brute_min_dcf(b, s, costs=D.ASVSPOOF5_COSTS):
    thresholds = np.concatenate([[-np.inf], np.sort(np.concatenate([b, s])), [np.inf]])
    best = min(
        costs.c_miss * (1 - costs.p_spoof) * np.mean(b < t) + costs.c_fa * costs.p_spoof * np.mean(s >= t)
        for t in thresholds
    )
    return best / min(costs.c_miss * (1 - costs.p_spoof), costs.c_fa * costs.p_spoof)


@pytest.mark.parametrize("seed", range(5))
def test_random_sets_against_independent_computations(seed):
    from sklearn.metrics import roc_curve

    rng = np.random.default_rng(seed)
    b, s = rng.normal(1.0, 1.0, 200), rng.normal(-1.0, 1.5, 300)
    assert D.min_dcf(b, s) == pytest.approx(_brute_min_dcf(b, s))
    fpr, tpr, _ = roc_curve(np.r_[np.ones(b.size), np.zeros(s.size)], np.r_[b, s])
    i = np.argmin(np.abs((1 - tpr) - fpr))
    assert D.eer(b, s)[0] == pytest.approx((fpr[i] + 1 - tpr[i]) / 2, abs=1 / 200)
    # minCllr <= Cllr, and for these already-monotone LLR-like scores PAV can only help.
    assert D.min_cllr(b, s) <= D.cllr(b, s) + 1e-12
    assert 0 <= D.act_dcf(b, s) and D.min_dcf(b, s) <= D.act_dcf(b, s) + 1e-12


def test_perfect_and_inverted_systems():
    b, s = np.array([3.0, 4.0]), np.array([-3.0, -4.0])
    assert D.eer(b, s)[0] == 0.0 and D.min_dcf(b, s) == 0.0 and D.act_dcf(b, s) == 0.0
    assert D.eer(s, b)[0] == 1.0


def test_custom_costs_change_min_dcf():
    costs = D.CostModel(p_spoof=0.5, c_miss=1, c_fa=1)
    assert D.min_dcf(BONA, SPOOF, costs) == pytest.approx(_brute_min_dcf(BONA, SPOOF, costs))


def test_rejects_empty_or_nonfinite():
    with pytest.raises(ValueError, match="need bona fide and spoof"):
        D.detection_metrics([], [1.0])
    with pytest.raises(ValueError, match="finite"):
        D.detection_metrics([np.nan], [1.0])


@pytest.mark.parametrize("seed", range(20))
def test_pav_matches_sklearn_isotonic_regression_with_ties(seed):
    """The scorer's PAV (tied scores pooled, then scipy) against sklearn's IsotonicRegression on raw scores."""
    from sklearn.isotonic import IsotonicRegression

    rng = np.random.default_rng(seed)
    b = np.round(rng.normal(1.0, 1.0, rng.integers(2, 150)), 1)  # rounding makes ties, across classes too
    s = np.round(rng.normal(-1.0, 1.5, rng.integers(2, 150)), 1)
    scores, labels = np.r_[b, s], np.r_[np.ones(b.size), np.zeros(s.size)]
    posterior = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True).fit_transform(scores, labels)
    with np.errstate(divide="ignore"):
        expected = np.log(posterior) - np.log1p(-posterior) - np.log(b.size / s.size)
    got_b, got_s = D.pav_llrs(b, s)
    np.testing.assert_allclose(np.r_[got_b, got_s], expected, rtol=1e-9, atol=1e-12)


# A set where the ASVspoof 5 false-alarm cost matters (Cfa = 10 against Cfa = 1). Sorted scores:
# -3s -2s -1b 0s 1s 2b 3b ... 10b (10 bona fide, 4 spoof). DET points (Pmiss, Pfa) that matter:
# (0, .5) below -1, (.1, .5) past it, (.1, 0) past the last spoof.
COST_BONA = np.array([-1.0, *range(2, 11)])
COST_SPOOF = np.array([-3.0, -2.0, 0.0, 1.0])


def test_asvspoof5_cost_model_is_the_evaluation_packages():
    # ASVspoof 5 evaluation package (calculate_metrics.py, Track 1): Pspoof 0.05, Cmiss 1, Cfa 10.
    c = D.ASVSPOOF5_COSTS
    assert (c.p_spoof, c.c_miss, c.c_fa) == (0.05, 1.0, 10.0)
    assert D.CostModel() == c


def test_min_and_act_dcf_under_asvspoof5_costs_by_hand():
    # Cfa = 10: Cdet = .95 Pmiss + .5 Pfa, normalised by min(.95, .5) = .5 -> 1.9 Pmiss + Pfa:
    # (0, .5) -> .5, (.1, 0) -> .19: minDCF .19.
    assert D.min_dcf(COST_BONA, COST_SPOOF) == pytest.approx(0.19)
    # Bayes threshold -log(.95 / .5) = -0.642: bona fide -1 missed (.1), spoofs 0 and 1 accepted (.5):
    # (.95 * .1 + .5 * .5) / .5 = .69.
    assert D.act_dcf(COST_BONA, COST_SPOOF) == pytest.approx(0.69)
    m = D.detection_metrics(COST_BONA, COST_SPOOF)
    assert (m["min_dcf"], m["act_dcf"]) == (pytest.approx(0.19), pytest.approx(0.69))


def test_the_false_alarm_cost_changes_both_dcfs_by_hand():
    cheap_fa = D.CostModel(p_spoof=0.05, c_miss=1.0, c_fa=1.0)
    # Cfa = 1: Cdet = .95 Pmiss + .05 Pfa, normalised by .05 -> 19 Pmiss + Pfa: (0, .5) -> .5, (.1, 0) -> 1.9.
    assert D.min_dcf(COST_BONA, COST_SPOOF, cheap_fa) == pytest.approx(0.5)
    # Threshold -log(.95 / .05) = -2.944: nothing missed, spoofs -2, 0, 1 accepted: .05 * .75 / .05 = .75.
    assert D.act_dcf(COST_BONA, COST_SPOOF, cheap_fa) == pytest.approx(0.75)
    # Pspoof and Cmiss enter the same way: Pspoof .5, Cmiss 1, Cfa 10 -> .5 Pmiss + 5 Pfa over .5 = Pmiss + 10 Pfa:
    # (.1, 0) -> .1; threshold -log(.5 / 5) = 2.303: bona fide -1 and 2 missed (.2), no spoof accepted.
    balanced = D.CostModel(p_spoof=0.5, c_miss=1.0, c_fa=10.0)
    assert D.min_dcf(COST_BONA, COST_SPOOF, balanced) == pytest.approx(0.1)
    assert D.act_dcf(COST_BONA, COST_SPOOF, balanced) == pytest.approx(0.2)


def test_det_curve_as_the_evaluation_package():
    # compute_det_curve of the ASVspoof 5 package: one point per sorted trial after a first point at
    # (Pmiss 0, Pfa 1) whose threshold is the lowest score minus 0.001.
    frr, far, thr = D.det_curve(BONA, SPOOF)
    np.testing.assert_allclose(frr, [0, 0, 0, 1 / 3, 1 / 3, 1 / 3, 2 / 3, 1])
    np.testing.assert_allclose(far, [1, 0.75, 0.5, 0.5, 0.25, 0, 0, 0])
    np.testing.assert_allclose(thr, [0.1 - 0.001, 0.1, 0.2, 0.3, 0.4, 0.5, 0.8, 0.9])


def test_the_cost_model_cannot_be_changed_in_place():
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        D.ASVSPOOF5_COSTS.c_fa = 1.0


def test_scores_at_the_bayes_threshold_are_accepted():
    # As compute_actDCF: a bona fide trial is missed below -log(beta), a spoof accepted at or above it.
    t = -math.log(0.95 / 0.5)
    assert D.act_dcf(np.array([t]), np.array([t])) == pytest.approx(1.0)  # spoof accepted: .5 / .5
    assert D.act_dcf(np.array([t - 1e-9]), np.array([t - 1.0])) == pytest.approx(1.9)  # bona fide missed: .95 / .5


def test_rejects_an_empty_spoof_side():
    with pytest.raises(ValueError, match="got 1 bona fide and 0 spoof"):
        D.detection_metrics([1.0], [])

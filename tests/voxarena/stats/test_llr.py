"""The K-feature LLR fit against scikit-learn on the same objective, against the analytic LLR of two
Gaussians, and bounded on separable trials."""

import numpy as np
import pytest

from voxarena.stats.llr import LinearLLR, fit_linear_llr, platt_targets


def gaussian_trials(rng, n_bona, n_spoof, mu_b, mu_s, cov):
    return rng.multivariate_normal(mu_b, cov, n_bona), rng.multivariate_normal(mu_s, cov, n_spoof)


def test_agrees_with_scikit_learn_on_the_same_objective():
    # A soft target t is the same cross-entropy as the trial twice, labelled 1 with weight t and 0 with
    # weight 1 - t; the prior weighting is a sample weight 0.5 / N per class. scikit-learn's lbfgs with
    # no penalty then minimises exactly our objective, by another method.
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(4)
    cov = [[1.0, 0.3, 0.0], [0.3, 2.0, 0.5], [0.0, 0.5, 0.7]]
    bona, spoof = gaussian_trials(rng, 150, 420, [1.0, 0.5, -0.2], [-0.5, 0.0, 0.3], cov)
    bona[:, 1] = 50 + 20 * bona[:, 1]  # features on unrelated scales and offsets
    spoof[:, 1] = 50 + 20 * spoof[:, 1]
    fit = fit_linear_llr(bona, spoof)
    tb, ts = platt_targets(len(bona), len(spoof))
    x = np.vstack([bona, bona, spoof, spoof])
    y = np.concatenate([np.ones(len(bona)), np.zeros(len(bona)), np.ones(len(spoof)), np.zeros(len(spoof))])
    w = np.concatenate(
        [
            np.full(len(bona), 0.5 / len(bona) * tb),
            np.full(len(bona), 0.5 / len(bona) * (1 - tb)),
            np.full(len(spoof), 0.5 / len(spoof) * ts),
            np.full(len(spoof), 0.5 / len(spoof) * (1 - ts)),
        ]
    )
    ref = LogisticRegression(C=np.inf, solver="lbfgs", tol=1e-12, max_iter=10000).fit(x, y, sample_weight=w * 1000)
    np.testing.assert_allclose(fit.weights, ref.coef_[0], rtol=1e-4)
    assert fit.bias == pytest.approx(ref.intercept_[0], rel=1e-4)
    np.testing.assert_allclose(fit(x), ref.decision_function(x), atol=1e-4)


def test_recovers_the_analytic_llr_of_two_gaussians():
    # Shared covariance S: LLR(x) = d' S^-1 x - (mu_b' S^-1 mu_b - mu_s' S^-1 mu_s) / 2, d = mu_b - mu_s.
    rng = np.random.default_rng(5)
    mu_b, mu_s, cov = np.array([2.0, 1.0]), np.array([0.0, -0.5]), np.array([[1.5, 0.6], [0.6, 1.0]])
    bona, spoof = gaussian_trials(rng, 40000, 10000, mu_b, mu_s, cov)  # unequal counts: the prior weighting undoes them
    inv = np.linalg.inv(cov)
    weights = inv @ (mu_b - mu_s)
    bias = -(mu_b @ inv @ mu_b - mu_s @ inv @ mu_s) / 2
    fit = fit_linear_llr(bona, spoof)
    np.testing.assert_allclose(fit.weights, weights, rtol=0.05)
    assert fit.bias == pytest.approx(bias, abs=0.06)


def test_separable_trials_give_finite_bounded_llrs():
    # Two features, classes split by a line: without smoothing the weights would grow without bound.
    # With it, J(optimum) <= J(0) = ln 2 (the weights sum to 1), each trial's cross-entropy is at least
    # its target's entropy H, and at least min(t, 1 - t) * |m| at log-odds m (the wrong side of its
    # target costs more). So a trial of weight v has |m| <= (ln 2 - sum of the others' v H) / (v min(t, 1-t)).
    rng = np.random.default_rng(6)
    bona = rng.uniform(0, 1, (30, 2)) + [3.0, 2.0]
    spoof = rng.uniform(0, 1, (50, 2)) - [1.0, 2.0]
    fit = fit_linear_llr(bona, spoof, names=["a", "b"])
    llr_b, llr_s = fit(bona), fit(spoof)
    assert np.all(np.isfinite(fit.weights)) and np.isfinite(fit.bias)
    assert np.all(llr_b > 0) and np.all(llr_s < 0)  # the separation survives
    tb, ts = platt_targets(30, 50)

    def entropy(t):
        return -(t * np.log(t) + (1 - t) * np.log(1 - t))

    total = 30 * (0.5 / 30) * entropy(tb) + 50 * (0.5 / 50) * entropy(ts)
    bound_b = (np.log(2) - (total - 0.5 / 30 * entropy(tb))) / (0.5 / 30 * (1 - tb))
    bound_s = (np.log(2) - (total - 0.5 / 50 * entropy(ts))) / (0.5 / 50 * ts)
    assert np.max(np.abs(llr_b)) <= bound_b and np.max(np.abs(llr_s)) <= bound_s


def test_three_separated_points_land_on_the_platt_targets():
    # Bona fide trials at two points, spoofs at a third: an affine map of two features can put each
    # point at any log-odds, so the optimum puts every trial on its smoothed target's logit:
    # logit((N+ + 1)/(N+ + 2)) = log(N+ + 1), logit(1/(N- + 2)) = -log(N- + 1).
    bona = np.array([[2.0, 0.0]] * 10 + [[0.0, 3.0]] * 15)
    spoof = np.full((40, 2), -1.0)
    fit = fit_linear_llr(bona, spoof)
    np.testing.assert_allclose(fit(bona), np.log(26), atol=1e-6)
    np.testing.assert_allclose(fit(spoof), -np.log(41), atol=1e-6)


def test_refuses_what_it_cannot_fit():
    rng = np.random.default_rng(7)
    bona, spoof = rng.normal(1, 1, (20, 2)), rng.normal(0, 1, (20, 2))
    dependent_b = np.column_stack([bona[:, 0], 2 * bona[:, 0] + 3])
    dependent_s = np.column_stack([spoof[:, 0], 2 * spoof[:, 0] + 3])
    with pytest.raises(ValueError, match="a, b are affinely dependent"):
        fit_linear_llr(dependent_b, dependent_s, names=["a", "b"])
    constant = np.column_stack([bona[:, 0], np.ones(20)]), np.column_stack([spoof[:, 0], np.ones(20)])
    with pytest.raises(ValueError, match="^b needs at least two distinct scores"):
        fit_linear_llr(*constant, names=["a", "b"])
    with pytest.raises(ValueError, match="both classes"):
        fit_linear_llr(bona, np.empty((0, 2)))
    with pytest.raises(ValueError, match="a: scores must be finite"):
        fit_linear_llr(np.vstack([bona, [np.nan, 0.0]]), spoof, names=["a", "b"])
    with pytest.raises(ValueError, match="same K"):
        fit_linear_llr(bona, spoof[:, :1])


def test_the_map_is_its_weights_and_bias_and_the_same_bytes_each_time():
    rng = np.random.default_rng(8)
    bona, spoof = rng.normal(1, 1, (60, 3)), rng.normal(0, 1.5, (90, 3))
    fit = fit_linear_llr(bona, spoof)
    assert fit == fit_linear_llr(bona.copy(), spoof.copy())
    x = rng.normal(0, 1, (5, 3))
    np.testing.assert_allclose(
        fit(x), [sum(w * v for w, v in zip(fit.weights, row)) + fit.bias for row in x], rtol=1e-12
    )
    rec = fit.record()
    assert rec["weights"] == list(fit.weights) and rec["n_bonafide"] == 60 and rec["n_spoof"] == 90
    assert rec["target_bonafide"] == 61 / 62 and rec["target_spoof"] == 1 / 92
    with pytest.raises(ValueError, match="n x 3"):
        LinearLLR((1.0, 2.0, 3.0), 0.0, 1, 1)(np.ones((2, 2)))

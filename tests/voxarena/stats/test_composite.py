"""Composite scores (SoK paper, section 4.2 and 4.3.1) on small tables worked out by hand."""

from __future__ import annotations

import math

import pytest

from voxarena.stats.composite import (
    DETECTOR_ALPHA,
    EPSILON,
    RECONSTRUCTION_WEIGHTS,
    TTS_WEIGHTS,
    CompositeError,
    detector_scores,
    generator_scores,
    ranks,
)


def test_the_papers_constants():
    # Table 10: F_TTS and F_reconstruction weights; eps 0.1 and alpha 0.8 (section 4.3.1).
    assert TTS_WEIGHTS == {"dnsmos": 0.25, "sim": 0.25, "psnr": 0.15, "wer": 0.20, "rtf": 0.075, "params_m": 0.075}
    assert RECONSTRUCTION_WEIGHTS == {
        "dnsmos": 0.25,
        "pesq": 0.225,
        "psnr": 0.15,
        "ssim": 0.225,
        "rtf": 0.075,
        "params_m": 0.075,
    }
    assert (EPSILON, DETECTOR_ALPHA) == (0.1, 0.8)


def test_generator_scores_by_hand():
    table = {
        "A": {"dnsmos": 3.0, "wer": 0.1, "params_m": 0.0},  # rule-based: no trainable parameters
        "B": {"dnsmos": 4.0, "wer": 0.3, "params_m": 10.0},
        "C": {"dnsmos": 3.5, "wer": 0.2, "params_m": 100.0},
    }
    weights = {"dnsmos": 0.5, "wer": 0.25, "params_m": 0.25}
    # dnsmos (higher better): t = 0, 1, .5 -> .1 + .9 t = .1, 1, .55
    # wer (lower better): t = 0, 1, .5 -> .1 + .9 (1 - t) = 1, .1, .55
    # params (log, lower better, over B and C only): ln10, ln100 -> t = 0, 1 -> 1, .1; A gets the best, 1
    expected = {
        "A": 0.5 * 0.1 + 0.25 * 1.0 + 0.25 * 1.0,
        "B": 0.5 * 1.0 + 0.25 * 0.1 + 0.25 * 1.0,
        "C": 0.5 * 0.55 + 0.25 * 0.55 + 0.25 * 0.1,
    }
    assert generator_scores(table, weights) == pytest.approx(expected)


def test_a_metric_missing_everywhere_is_dropped_and_weights_renormalised():
    table = {"A": {"dnsmos": 3.0}, "B": {"dnsmos": 4.0, "sim": math.nan}}
    got = generator_scores(table, {"dnsmos": 0.25, "sim": 0.75}, eps=0.2)
    assert got == pytest.approx({"A": 0.2, "B": 1.0})  # dnsmos alone, weight 1
    with pytest.raises(CompositeError, match="A: metric sim is missing"):
        generator_scores({"A": {"sim": None}, "B": {"sim": 0.5}}, {"sim": 1.0})
    with pytest.raises(CompositeError, match="none of the weighted metrics"):
        generator_scores({"A": {"x": 1.0}}, {"sim": 1.0})
    with pytest.raises(CompositeError, match="no systems"):
        generator_scores({}, {"sim": 1.0})
    # All systems equal on a higher-is-better metric: t = 1 by the module's convention, the best term.
    assert generator_scores({"A": {"sim": 0.2}, "B": {"sim": 0.2}}, {"sim": 1.0}) == pytest.approx({"A": 1.0, "B": 1.0})


def test_detector_scores_by_hand():
    # Equal metrics everywhere: every A_ij is 0, so S_i = (1 - alpha) C_i alone.
    pairs = [{"detector": d, "generator": "g", "eer": 0.1, "cllr": 0.5, "min_dcf": 0.2} for d in ("a", "b", "c")]
    # log params ln2, 3 ln2, 5 ln2 -> C = 0, .5, 1
    got = detector_scores(pairs, {"a": 2.0, "b": 8.0, "c": 32.0})
    assert got == pytest.approx({"a": 0.0, "b": 0.1, "c": 0.2})
    assert detector_scores(pairs, {"a": 2.0, "b": 2.0, "c": 2.0}, alpha=0.5) == pytest.approx({"a": 0, "b": 0, "c": 0})
    with pytest.raises(CompositeError, match="no parameter count for detector\\(s\\) c"):
        detector_scores(pairs, {"a": 1.0, "b": 1.0})
    with pytest.raises(CompositeError, match="pair b x h is missing"):
        detector_scores(
            pairs + [{"detector": "a", "generator": "h", "eer": 0.1, "cllr": 0.5, "min_dcf": 0.2}],
            {"a": 1.0, "b": 1.0, "c": 1.0},
        )
    with pytest.raises(CompositeError, match="unknown generator\\(s\\) zz"):
        detector_scores(pairs, {"a": 1.0, "b": 1.0, "c": 1.0}, challenge={"zz": 1.0})
    with pytest.raises(CompositeError, match="no detector x generator pairs"):
        detector_scores([], {})


def test_the_parameter_term_is_log_scaled_and_rule_based_systems_get_the_best():
    # params_m 0.5, 5, 50: logs evenly spaced -> t = 0, .5, 1 -> 1, .55, .1 (lower is better); none: 1.
    table = {
        "none": {"params_m": 0.0},
        "half": {"params_m": 0.5},
        "five": {"params_m": 5.0},
        "fifty": {"params_m": 50.0},
    }
    assert generator_scores(table, {"params_m": 1.0}) == pytest.approx(
        {"none": 1.0, "half": 1.0, "five": 0.55, "fifty": 0.1}
    )


def test_challenge_scores_weight_the_generators():
    # R = 3 for g1 and the default R = 1 for g2: w = 3/4, 1/4. Detector a is worst on g1 and best on g2.
    pairs = [
        {"detector": "a", "generator": "g1", "eer": 0.4, "cllr": 1.0, "min_dcf": 0.8},
        {"detector": "a", "generator": "g2", "eer": 0.0, "cllr": 0.0, "min_dcf": 0.0},
        {"detector": "b", "generator": "g1", "eer": 0.0, "cllr": 0.0, "min_dcf": 0.0},
        {"detector": "b", "generator": "g2", "eer": 0.4, "cllr": 1.0, "min_dcf": 0.8},
    ]
    got = detector_scores(pairs, {"a": 1.0, "b": 1.0}, alpha=1.0, challenge={"g1": 3.0})
    assert got == pytest.approx({"a": 0.75, "b": 0.25})


def test_every_metric_enters_in_its_own_direction():
    # Two systems, one metric: the better one gets 1, the other eps. MCD and the pocketsphinx WER are
    # distances / error rates (lower is better); STOI and MOS predictions are higher-is-better.
    table = {
        "A": {"mcd": 4.0, "wer_pocketsphinx": 0.1, "stoi": 0.9, "mos_distill": 3.0},
        "B": {"mcd": 6.0, "wer_pocketsphinx": 0.3, "stoi": 0.7, "mos_distill": 4.0},
    }
    assert generator_scores(table, {"mcd": 1.0}) == pytest.approx({"A": 1.0, "B": 0.1})
    assert generator_scores(table, {"wer_pocketsphinx": 1.0}) == pytest.approx({"A": 1.0, "B": 0.1})
    assert generator_scores(table, {"stoi": 1.0}) == pytest.approx({"A": 1.0, "B": 0.1})
    assert generator_scores(table, {"mos_distill": 1.0}) == pytest.approx({"A": 0.1, "B": 1.0})


def test_a_weight_without_a_known_direction_is_refused():
    with pytest.raises(CompositeError, match="weighted metric 'estoi' has no known direction.*params_m"):
        generator_scores({"A": {"estoi": 0.5}, "B": {"estoi": 0.7}}, {"estoi": 1.0})


def test_ranks_best_first_and_ties_by_name():
    assert ranks({"a": 0.2, "b": 0.9, "c": 0.5}, higher_is_better=True) == {"b": 1, "c": 2, "a": 3}
    assert ranks({"a": 0.2, "b": 0.9, "c": 0.5}, higher_is_better=False) == {"a": 1, "c": 2, "b": 3}
    assert ranks({"z": 0.5, "m": 0.5, "a": 0.1}, higher_is_better=True) == {"m": 1, "z": 2, "a": 3}
    assert ranks({"z": 0.5, "m": 0.5, "a": 0.9}, higher_is_better=False) == {"m": 1, "z": 2, "a": 3}
    assert ranks({}, higher_is_better=True) == {}

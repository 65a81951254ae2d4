"""Source-tracing metrics (voxarena.stats.attribution) against scikit-learn's own: accuracy, top-k accuracy,
macro-F1, the confusion matrix, ROC AUC and the EER read off its ROC curve."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, confusion_matrix, f1_score, roc_auc_score, roc_curve, top_k_accuracy_score

from voxarena.stats.attribution import UNKNOWN, closed_set, open_set

LABELS = ["hifigan", "kokoro", "piper-vits", "espeak-ng", UNKNOWN]


def tracer(seed: int, n: int = 300, skill: float = 2.0) -> tuple[list[str], np.ndarray]:
    """Clips of the five labels, probabilities from a noisy softmax leaning to the truth (no ties)."""
    rng = np.random.default_rng(seed)
    truth = [LABELS[i] for i in rng.integers(0, len(LABELS), n)]
    logits = rng.normal(0, 1, (n, len(LABELS)))
    logits[np.arange(n), [LABELS.index(t) for t in truth]] += skill
    p = np.exp(logits)
    return truth, p / p.sum(axis=1, keepdims=True)


@pytest.mark.parametrize("seed,skill", [(0, 2.0), (1, 0.5), (2, 4.0)])
def test_closed_set_figures_equal_scikit_learns(seed, skill):
    truth, p = tracer(seed, skill=skill)
    got = closed_set(truth, p, LABELS)
    predicted = [LABELS[i] for i in p.argmax(axis=1)]
    assert got["accuracy"] == pytest.approx(accuracy_score(truth, predicted))
    order = np.argsort(LABELS)  # scikit-learn wants the labels, and the score columns, sorted
    top2 = top_k_accuracy_score(truth, p[:, order], k=2, labels=sorted(LABELS))
    assert got["top2_accuracy"] == pytest.approx(top2)
    assert got["macro_f1"] == pytest.approx(f1_score(truth, predicted, average="macro", zero_division=0))
    assert got["confusion"] == confusion_matrix(truth, predicted, labels=LABELS).tolist()


def test_a_label_never_true_nor_predicted_is_left_out_of_macro_f1():
    p = np.array([[0.9, 0.1, 0, 0, 0], [0.2, 0.8, 0, 0, 0], [0.6, 0.4, 0, 0, 0]])
    got = closed_set(["hifigan", "kokoro", "kokoro"], p, LABELS)
    # hifigan: P 1/2, R 1 -> 2/3; kokoro: P 1, R 1/2 -> 2/3; the other three labels do not count.
    assert got["macro_f1"] == pytest.approx(2 / 3) and got["accuracy"] == pytest.approx(2 / 3)


@pytest.mark.parametrize("seed", [3, 4])
def test_open_set_figures_equal_scikit_learns(seed):
    truth, p = tracer(seed)
    unseen = np.array([t == UNKNOWN for t in truth])
    u = p[:, LABELS.index(UNKNOWN)]
    got = open_set(truth, p, LABELS)
    assert got["open_auroc"] == pytest.approx(roc_auc_score(unseen, u))
    fpr, tpr, _ = roc_curve(~unseen, 1 - u, drop_intermediate=False)
    i = np.argmin(np.abs((1 - tpr) - fpr))
    assert got["open_eer"] == pytest.approx(((1 - tpr[i]) + fpr[i]) / 2, abs=1e-9)
    assert 0.0 <= got["known_accuracy_at_eer"] <= 1.0


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="outside the declared ones: vits"):
        closed_set(["vits"], np.array([[1, 0, 0, 0, 0]]), LABELS)
    with pytest.raises(ValueError, match="declares the label 'unknown'"):
        open_set(["a"], np.array([[1.0]]), ["a"])
    with pytest.raises(ValueError, match="both known and unseen"):
        open_set(["hifigan"], np.array([[1, 0, 0, 0, 0]]), LABELS)

"""Source-tracing (attribution) metrics: which system made a clip, and does the tracer know when it does not.

A tracer answers, per clip, a probability for each label it declares (generators, families or vocoders),
"unknown" among them when it is open-set. Against the arena's exact truth:

- **closed set** (the clips whose true label the tracer knows): ``accuracy`` (top-1), ``top2_accuracy`` (the
  truth among the two most probable labels), ``macro_f1`` (the unweighted mean over the known labels of
  F1 = 2PR / (P + R), a label never predicted nor true left out, one with P + R = 0 counted 0) and the
  ``confusion`` matrix (rows: truth, columns: the top-1 prediction, both over ``labels``);
- **open set** (some systems held out of the tracer's training, their clips' truth ``unknown``): how well
  the probability of "unknown" separates the unseen systems' clips from the known ones: ``open_auroc``
  (the probability that an unseen clip gets a higher P(unknown) than a known one, ties half) and
  ``open_eer`` (``stats.detection.eer`` with the known clips as targets scored by 1 - P(unknown)); and
  ``known_accuracy_at_eer``: top-1 accuracy over the known labels of the known clips the EER threshold
  keeps (P(unknown) below it).

Ties in top-1 and top-2 go to the label declared first (a stable sort), so the figures are a function of
the inputs alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from voxarena.stats.detection import eer

UNKNOWN = "unknown"


def _ranked(probabilities: np.ndarray) -> np.ndarray:
    """Label indices by decreasing probability, ties in declared order."""
    return np.argsort(-probabilities, axis=1, kind="stable")


def closed_set(truth: Sequence[str], probabilities: np.ndarray, labels: Sequence[str]) -> dict[str, Any]:
    """Accuracy, top-2 accuracy, macro-F1 and the confusion matrix of clips whose truth is among ``labels``
    (``probabilities``: clips x labels, rows summing to 1)."""
    index = {label: i for i, label in enumerate(labels)}
    missing = sorted({t for t in truth if t not in index})
    if missing:
        raise ValueError(f"true labels outside the declared ones: {', '.join(missing)}")
    if len(truth) == 0:
        raise ValueError("no clips")
    p = np.asarray(probabilities, dtype=float)
    t = np.array([index[x] for x in truth])
    ranked = _ranked(p)
    top1 = ranked[:, 0]
    confusion = np.zeros((len(labels), len(labels)), dtype=int)
    np.add.at(confusion, (t, top1), 1)
    f1 = []
    for k in range(len(labels)):
        tp, predicted, true = confusion[k, k], confusion[:, k].sum(), confusion[k, :].sum()
        if predicted == 0 and true == 0:
            continue
        precision = tp / predicted if predicted else 0.0
        recall = tp / true if true else 0.0
        f1.append(2 * precision * recall / (precision + recall) if precision + recall else 0.0)
    return {
        "accuracy": float(np.mean(top1 == t)),
        "top2_accuracy": float(np.mean((ranked[:, :2] == t[:, None]).any(axis=1))),
        "macro_f1": float(np.mean(f1)),
        "confusion": confusion.tolist(),
    }


def open_set(truth: Sequence[str], probabilities: np.ndarray, labels: Sequence[str]) -> dict[str, float]:
    """Known-vs-unknown figures of an open-set tracer: clips whose truth is ``UNKNOWN`` are the unseen
    systems'; ``labels`` must hold ``UNKNOWN``."""
    if UNKNOWN not in labels:
        raise ValueError(f"an open-set tracer declares the label {UNKNOWN!r}")
    p = np.asarray(probabilities, dtype=float)
    u = p[:, list(labels).index(UNKNOWN)]
    unseen = np.array([x == UNKNOWN for x in truth])
    if unseen.all() or not unseen.any():
        raise ValueError("open-set figures need clips of both known and unseen systems")
    known_u, unseen_u = u[~unseen], u[unseen]
    greater = (unseen_u[:, None] > known_u[None, :]).sum()
    ties = (unseen_u[:, None] == known_u[None, :]).sum()
    auroc = (greater + 0.5 * ties) / (unseen_u.size * known_u.size)
    equal_error, threshold = eer(1.0 - known_u, 1.0 - unseen_u)  # known clips are the targets
    kept = [int(i) for i in np.flatnonzero(~unseen) if 1.0 - u[i] > threshold]
    known_truth = [truth[i] for i in kept]
    accuracy = closed_set(known_truth, p[kept], labels)["accuracy"] if kept else float("nan")
    return {"open_auroc": float(auroc), "open_eer": float(equal_error), "known_accuracy_at_eer": accuracy}

"""The source tracer's heads: one per level (generator, family), the serving arithmetic in numpy.

A head is a multinomial logistic regression over the standardised clip features, with one class for
bona fide speech and one per system the tracer knows at that level, plus an **unknown** model: a
two-class logistic regression over three novelty cues of the clip,

- the log of the largest probability among the known systems (given the clip is a fake),
- the entropy of that distribution (nats),
- the log of the smallest mean squared distance from the clip's standardised features to a known
  system's centroid,

fitted (``train.py``) on what the head does with systems it has not seen: leave one system out of the
training, score the dev speakers' clips, and the left-out system's clips are the "unknown" examples.

The attribution of a clip at a level: P(unknown) = u from the unknown model, each known system
(1 - u) x its probability given a fake. The detection score (higher = more bona fide) is the
generator head's log-odds of bona fide, log P(bona fide) - log P(any system): not calibrated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from voxarena.attribution import UNKNOWN

BONAFIDE = "bonafide"
LEVELS = ("generator", "family")  # the tracer's levels, in the order it declares them


def softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=1, keepdims=True)
    e = np.exp(z)
    out: np.ndarray = e / e.sum(axis=1, keepdims=True)
    return out


@dataclass(frozen=True)
class Head:
    """One level's classifier (classes: bona fide first, then ``labels``) and unknown model."""

    level: str
    labels: tuple[str, ...]  # the known systems at this level
    weight: np.ndarray  # (1 + len(labels), D) on standardised features
    bias: np.ndarray  # (1 + len(labels),)
    centroids: np.ndarray  # (len(labels), D): each known system's mean standardised features (train)
    unknown_weight: np.ndarray  # (3,) on the novelty cues
    unknown_bias: float

    @property
    def declared(self) -> tuple[str, ...]:
        """The labels the service declares for this level: the known systems, then "unknown"."""
        return (*self.labels, UNKNOWN)

    def posteriors(self, z: np.ndarray) -> np.ndarray:
        """(clips, 1 + systems): P(bona fide), P(each known system)."""
        return softmax(z @ self.weight.T + self.bias)

    def bonafide_log_odds(self, z: np.ndarray) -> np.ndarray:
        logits = z @ self.weight.T + self.bias
        return logits[:, 0] - np.logaddexp.reduce(logits[:, 1:], axis=1)

    def given_fake(self, z: np.ndarray) -> np.ndarray:
        """(clips, systems): which known system, given that the clip is a fake."""
        return softmax((z @ self.weight.T + self.bias)[:, 1:])

    def novelty(self, z: np.ndarray) -> np.ndarray:
        return novelty_cues(self.given_fake(z), z, self.centroids)

    def p_unknown(self, z: np.ndarray) -> np.ndarray:
        margin = self.novelty(z) @ self.unknown_weight + self.unknown_bias
        out: np.ndarray = 1.0 / (1.0 + np.exp(-margin))
        return out

    def attribution(self, z: np.ndarray) -> np.ndarray:
        """(clips, len(declared)): the known systems' probabilities, then P(unknown); rows sum to 1."""
        u = self.p_unknown(z)[:, None]
        return np.hstack([(1.0 - u) * self.given_fake(z), u])


def novelty_cues(given_fake: np.ndarray, z: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """(clips, 3): log max probability, entropy, log min mean squared distance to a centroid."""
    p = np.clip(given_fake, 1e-12, 1.0)
    distance = ((z[:, None, :] - centroids[None, :, :]) ** 2).mean(axis=2).min(axis=1)
    return np.column_stack([np.log(p.max(axis=1)), -(p * np.log(p)).sum(axis=1), np.log(distance + 1e-12)])


def save_arrays(heads: list[Head], mean: np.ndarray, scale: np.ndarray) -> dict[str, Any]:
    """The npz arrays of a tracer (labels go to the metadata)."""
    out = {"feature_mean": mean, "feature_scale": scale}
    for h in heads:
        out.update(
            {
                f"{h.level}_weight": h.weight,
                f"{h.level}_bias": h.bias,
                f"{h.level}_centroids": h.centroids,
                f"{h.level}_unknown_weight": h.unknown_weight,
                f"{h.level}_unknown_bias": np.array([h.unknown_bias]),
            }
        )
    return out


def load_heads(arrays, labels: dict[str, list[str]]) -> list[Head]:
    """The heads of an npz (``arrays``) whose levels and known labels ``labels`` gives, in order."""
    heads = []
    for level, known in labels.items():
        h = Head(
            level,
            tuple(known),
            arrays[f"{level}_weight"],
            arrays[f"{level}_bias"],
            arrays[f"{level}_centroids"],
            arrays[f"{level}_unknown_weight"],
            float(arrays[f"{level}_unknown_bias"][0]),
        )
        if h.weight.shape[0] != 1 + len(known) or h.centroids.shape[0] != len(known):
            raise ValueError(f"{level}: {h.weight.shape[0]} classes in the weights, {1 + len(known)} declared")
        heads.append(h)
    return heads

"""lfcc-lcnn training (run by ``voxarena.services.detectors.training``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from voxarena.services.detectors.lfcc_gmm.lfcc import LfccConfig, lfcc
from voxarena.services.detectors.training.data import TrainingClip
from voxarena.services.detectors.training.torch_loop import TrainingPlan, fit_network

# 4 s windows of 10 ms frames; the ASVspoof 2021 baseline trains on whole utterances with Adam 3e-4.
PLAN = TrainingPlan(window=400, max_epochs=10, patience=3, batch_size=16, learning_rate=3e-4)


def featurize(samples: np.ndarray) -> np.ndarray:
    return lfcc(samples, LfccConfig()).T.astype(np.float32)  # (60, frames)


def fit(
    train: list[TrainingClip], dev: list[TrainingClip], out_dir: Path, seed: int, max_epochs: int | None = None, **_
) -> dict:
    from .network import Lcnn

    def build(features: list[np.ndarray]):
        # Feature normalisation from the training clips (all frames, both classes), held in the network.
        frames = np.concatenate(features, axis=1)
        return Lcnn(frames.shape[0], frames.mean(axis=1), frames.std(axis=1) + 1e-5)

    result = fit_network(build, featurize, PLAN, train, dev, out_dir, seed, "lfcc-lcnn", max_epochs)
    return {**result, "lfcc": LfccConfig().as_dict()}

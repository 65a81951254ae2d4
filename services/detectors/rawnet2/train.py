"""rawnet2 training (run by ``services.detectors.training``)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from services.detectors.training.data import TrainingClip
from services.detectors.training.torch_loop import TrainingPlan, fit_network, set_deterministic

# 64600 samples (~4 s) per window as in the paper; Adam 1e-4 there on 25k utterances, 1e-3 here on ~700 clips.
PLAN = TrainingPlan(window=64600, max_epochs=10, patience=3, batch_size=16, learning_rate=1e-3)


def featurize(samples: np.ndarray) -> np.ndarray:
    return samples.astype(np.float32)


def fit(train: list[TrainingClip], dev: list[TrainingClip], out_dir: Path, seed: int, max_epochs: int | None = None,
        **_) -> dict:
    from .network import RawNet2

    set_deterministic(seed)
    net = RawNet2()
    return fit_network(net, featurize, PLAN, train, dev, out_dir, seed, "rawnet2", max_epochs)

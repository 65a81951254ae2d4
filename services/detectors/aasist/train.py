"""aasist training (run by ``services.detectors.training``)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from services.detectors.training.data import TrainingClip
from services.detectors.training.torch_loop import TrainingPlan, fit_network, set_deterministic

# 2 s windows; the paper trains ~4 s crops with Adam 1e-4 for 100 epochs on 25k utterances.
PLAN = TrainingPlan(window=32000, max_epochs=10, patience=3, batch_size=16, learning_rate=1e-3)


def featurize(samples: np.ndarray) -> np.ndarray:
    return samples.astype(np.float32)


def fit(train: list[TrainingClip], dev: list[TrainingClip], out_dir: Path, seed: int, max_epochs: int | None = None,
        **_) -> dict:
    from .network import Aasist

    set_deterministic(seed)
    net = Aasist()
    return fit_network(net, featurize, PLAN, train, dev, out_dir, seed, "aasist", max_epochs)

"""lfcc-gmm training: one diagonal GMM per class over LFCC frames (run by ``voxarena.services.detectors.training``).

EM runs on a seeded subsample of at most ``MAX_FRAMES`` frames per class; same data + same seed =
same weights (``np.savez`` to a file object writes no timestamps).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from voxarena.services.detectors.training.data import TrainingClip, load_waveform

from .lfcc import LfccConfig, lfcc
from .model import WEIGHTS_FILE

N_COMPONENTS = 64  # the ASVspoof baseline uses 512 on ~25k utterances; we have ~1k clips
MAX_FRAMES = 200_000


def _fit_gmm(frames: np.ndarray, seed: int):
    from sklearn.mixture import GaussianMixture

    rng = np.random.default_rng(seed)
    if len(frames) > MAX_FRAMES:
        frames = frames[np.sort(rng.choice(len(frames), size=MAX_FRAMES, replace=False))]
    return GaussianMixture(
        n_components=N_COMPONENTS, covariance_type="diag", max_iter=100, tol=1e-3, reg_covar=1e-4, random_state=seed
    ).fit(frames)


def fit(train: list[TrainingClip], dev: list[TrainingClip], out_dir: Path, seed: int, **_) -> dict:
    cfg = LfccConfig()
    arrays = {}
    for k, label in enumerate(("bonafide", "spoof")):
        frames = np.vstack([lfcc(load_waveform(r), cfg) for r in train if r.label == label])
        print(
            f"lfcc-gmm: fitting the {label} GMM on {min(len(frames), MAX_FRAMES)} of {len(frames)} frames", flush=True
        )
        g = _fit_gmm(frames, seed + k)
        arrays[f"{label}_weights"], arrays[f"{label}_means"], arrays[f"{label}_variances"] = (
            g.weights_,
            g.means_,
            g.covariances_,
        )
    with open(out_dir / WEIGHTS_FILE, "wb") as f:
        np.savez(f, **arrays)
    return {
        "files": [WEIGHTS_FILE],
        "epochs": None,
        "lfcc": cfg.as_dict(),
        "hyperparameters": {
            "n_components": N_COMPONENTS,
            "max_frames": MAX_FRAMES,
            "covariance": "diag",
            "max_iter": 100,
            "tol": 1e-3,
            "reg_covar": 1e-4,
        },
    }

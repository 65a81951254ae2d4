"""whisper-frontend training: logistic regression on frozen Whisper encoder embeddings.

Embeddings are cached per clip sha256 under the data run's ``.feature-cache/`` (the encoder is the
slow part). The regularisation strength is chosen on dev (lowest dev EER, then lowest dev log-loss),
the "early stopping" of a convex back end.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from voxarena.services.detectors.training.data import TrainingClip, balanced_log_loss, equal_error_rate, load_waveform

from .frontend import WhisperEncoderEmbedding, model_dir
from .model import WEIGHTS_FILE

C_GRID = (0.001, 0.01, 0.1, 1.0, 10.0)


def _embeddings(rows: list[TrainingClip], encoder: WhisperEncoderEmbedding, cache: Path) -> np.ndarray:
    cache.mkdir(parents=True, exist_ok=True)
    out = []
    for i, r in enumerate(rows):
        path = cache / f"{r.sha256}.npy"
        if path.exists():
            out.append(np.load(path))
            continue
        e = encoder.embed(load_waveform(r))
        np.save(path, e)
        out.append(e)
        if (i + 1) % 100 == 0:
            print(f"whisper-frontend: embedded {i + 1}/{len(rows)}", flush=True)
    return np.stack(out)


def fit(train: list[TrainingClip], dev: list[TrainingClip], out_dir: Path, seed: int, cache_dir: Path, **_) -> dict:
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    from voxarena.hashing import sha256_file

    encoder = WhisperEncoderEmbedding()
    cache = cache_dir / "whisper-frontend"
    x_train, x_dev = _embeddings(train, encoder, cache), _embeddings(dev, encoder, cache)
    y_train = np.array([r.target for r in train])
    y_dev = np.array([r.target for r in dev])
    scaler = StandardScaler().fit(x_train)
    trials = []
    for c in C_GRID:
        clf = LogisticRegression(C=c, class_weight="balanced", max_iter=5000, random_state=seed)
        clf.fit(scaler.transform(x_train), y_train)
        margin = clf.decision_function(scaler.transform(x_dev))
        eer = equal_error_rate(margin[y_dev == 1], margin[y_dev == 0])
        loss = balanced_log_loss(margin, y_dev)
        trials.append({"C": c, "dev_eer": round(eer, 5), "dev_loss": round(float(loss), 5)})
        print(f"whisper-frontend: C={c} dev EER {eer:.4f} dev loss {loss:.4f}", flush=True)
    best = min(trials, key=lambda t: (t["dev_eer"], t["dev_loss"]))
    clf = LogisticRegression(C=best["C"], class_weight="balanced", max_iter=5000, random_state=seed)
    clf.fit(scaler.transform(x_train), y_train)
    with open(out_dir / WEIGHTS_FILE, "wb") as f:
        np.savez(f, mean=scaler.mean_, scale=scaler.scale_, coef=clf.coef_[0], intercept=clf.intercept_)
    return {
        "files": [WEIGHTS_FILE],
        "epochs": None,
        "model_selection": trials,
        "hyperparameters": {"C": best["C"], "class_weight": "balanced", "embedding": "mean+std of encoder frames"},
        "frontend": {
            "model": "whisper tiny.en encoder (CTranslate2 float32)",
            "model_sha256": sha256_file(model_dir() / "model.bin"),
        },
        "parameter_count": int(clf.coef_.size + clf.intercept_.size),
    }

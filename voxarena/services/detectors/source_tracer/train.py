"""Train the source tracer from an orchestrator data run (``configs/train-tracer.yaml``).

    make train-tracer
    python -m voxarena.services.detectors.source_tracer.train --data runs/train-tracer [--out DIR]

The clips: bona fide utterances of the training speakers and what the tracer's known generators made
of them (``voxarena.services.detectors.training.data``: checked by sha256, speakers split into train
and dev with the seed; the evaluation speakers, LibriSpeech test-*, are never here). A generator's
family is its GetInfo family as the data run's ``run.json`` recorded it.

Per level (generator, then family), on the standardised features (``features.py``):

1. the head's regularisation C is chosen on dev (the lowest mean log loss over the clips of dev
   speakers) among ``C_GRID``; the head is fitted on train (scikit-learn, lbfgs, multinomial);
2. the unknown model: for each known label, a head fitted on train without it scores the dev clips;
   the left-out label's fakes are "unknown" examples, the other fakes "known" ones; pooled over the
   folds, a balanced logistic regression on the novelty cues (``heads.novelty_cues``) learns P(unknown).

Why this model: a few hundred clips per system make a linear head over clip statistics well posed
(a network would learn the speakers), it is deterministic, trains in seconds, serves in numpy, and
its unknown model is learnt from real unseen systems rather than a threshold assumed. ``metadata.json``
records the file's sha256, the training manifest hash, seed, the labels, per level C and the dev
figures (closed-set accuracy with every system known, the leave-one-out open-set AUROC), the bona
fide dev EER and the command.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np

from voxarena.hashing import sha256_file
from voxarena.services.detectors.trained import METADATA_FILE, TRAINING_MANIFEST_FILE
from voxarena.services.detectors.training.data import (
    TrainingClip,
    TrainingDataError,
    build_training_manifest,
    equal_error_rate,
    load_waveform,
    manifest_sha256,
    write_manifest,
)

from .features import SAMPLE_RATE, clip_features
from .heads import BONAFIDE, LEVELS, Head, save_arrays
from .model import WEIGHTS_FILE, SourceTracerModel

DEFAULT_SEED = 20261206
C_GRID = (0.01, 0.03, 0.1, 0.3, 1.0)
DEFAULT_OUT = Path(__file__).parent / "weights"


def families_of(run_dir: Path) -> dict[str, str]:
    """generator -> its GetInfo family, from the data run's run.json."""
    path = run_dir / "run.json"
    if not path.exists():
        raise TrainingDataError(f"{path}: missing; finish the data run first (`make train-tracer`)")
    services = json.loads(path.read_text())["services"]
    return {n: s["info"].get("family", "") for n, s in services.items() if s["role"] == "generator"}


def features(rows: list[TrainingClip], cache: Path) -> np.ndarray:
    """(clips, D) features, cached by the training manifest's hash (same clips, same features)."""
    path = cache / f"source-tracer-{manifest_sha256(rows)[:16]}.npy"
    if path.exists():
        cached: np.ndarray = np.load(path)
        if cached.shape[0] == len(rows):
            return cached
    out = np.vstack([clip_features(load_waveform(r), SAMPLE_RATE) for r in rows])
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, out)
    return out


def _fit_lr(z: np.ndarray, y: np.ndarray, c: float):
    from sklearn.linear_model import LogisticRegression

    return LogisticRegression(C=c, max_iter=5000, tol=1e-6).fit(z, y)


def _coefficients(lr, classes: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Weight and bias rows in the order of ``classes`` (scikit-learn sorts its own)."""
    order = [list(lr.classes_).index(c) for c in classes]
    return lr.coef_[order], lr.intercept_[order]


def _head(level: str, known: list[str], z: np.ndarray, y: np.ndarray, c: float) -> Head:
    """A head without its unknown model yet (zero weights)."""
    classes = [BONAFIDE, *known]
    w, b = _coefficients(_fit_lr(z, y, c), classes)
    centroids = np.vstack([z[y == k].mean(axis=0) for k in known])
    return Head(level, tuple(known), w, b, centroids, np.zeros(3), 0.0)


def _log_loss(head: Head, z: np.ndarray, y: np.ndarray) -> float:
    classes = [BONAFIDE, *head.labels]
    p = head.posteriors(z)
    idx = np.array([classes.index(t) for t in y])
    return float(-np.mean(np.log(np.clip(p[np.arange(len(y)), idx], 1e-12, 1.0))))


def fit_level(level: str, z_train, y_train, z_dev, y_dev) -> tuple[Head, dict]:
    """One level's head with its unknown model, and its dev record."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import roc_auc_score

    known = sorted(set(y_train) - {BONAFIDE})
    losses = {c: _log_loss(_head(level, known, z_train, y_train, c), z_dev, y_dev) for c in C_GRID}
    c = min(C_GRID, key=lambda k: (losses[k], k))
    head = _head(level, known, z_train, y_train, c)
    fakes = y_dev != BONAFIDE
    cues, unseen = [], []
    for left_out in known:
        keep = y_train != left_out
        fold = _head(level, [k for k in known if k != left_out], z_train[keep], y_train[keep], c)
        cues.append(fold.novelty(z_dev[fakes]))
        unseen.append(y_dev[fakes] == left_out)
    x, t = np.vstack(cues), np.concatenate(unseen)
    mu, sd = x.mean(axis=0), x.std(axis=0) + 1e-12
    unknown = LogisticRegression(C=1.0, class_weight="balanced", max_iter=5000, tol=1e-8).fit((x - mu) / sd, t)
    w = unknown.coef_[0] / sd  # folded: the head takes raw cues
    b = float(unknown.intercept_[0] - np.sum(unknown.coef_[0] * mu / sd))
    head = Head(level, head.labels, head.weight, head.bias, head.centroids, w, b)
    top = np.array(head.labels)[head.given_fake(z_dev[fakes]).argmax(axis=1)]
    record = {
        "labels": list(known),
        "C": c,
        "dev_log_loss": {str(k): round(v, 6) for k, v in losses.items()},
        "dev_accuracy_closed": round(float(np.mean(top == y_dev[fakes])), 6),
        "dev_open_auroc_leave_one_out": round(float(roc_auc_score(t, x @ w + b)), 6),
        "n_unknown_examples": int(t.sum()),
        "n_known_examples": int((~t).sum()),
    }
    return head, record


def train(data: list[Path], out_dir: Path, seed: int, dev_fraction: float, command: str) -> dict:
    t0 = time.perf_counter()
    rows = build_training_manifest(data, dev_fraction, seed)
    family = families_of(data[0])
    missing = sorted({r.generator for r in rows if r.generator and not family.get(r.generator)})
    if missing:
        raise TrainingDataError(f"{data[0]}/run.json: no family recorded for {', '.join(missing)}")
    feats = features(rows, data[0] / ".feature-cache")
    train_mask = np.array([r.split == "train" for r in rows])
    mean, scale = feats[train_mask].mean(axis=0), feats[train_mask].std(axis=0) + 1e-9
    z = (feats - mean) / scale
    truth = {
        "generator": np.array([r.generator or BONAFIDE for r in rows]),
        "family": np.array([family[r.generator] if r.generator else BONAFIDE for r in rows]),
    }
    heads, levels = [], {}
    for level in LEVELS:
        y = truth[level]
        head, record = fit_level(level, z[train_mask], y[train_mask], z[~train_mask], y[~train_mask])
        heads.append(head)
        levels[level] = record
        print(
            f"source-tracer: {level}: C {record['C']}, dev accuracy {record['dev_accuracy_closed']:.3f}, "
            f"leave-one-out open-set AUROC {record['dev_open_auroc_leave_one_out']:.3f}",
            flush=True,
        )
    dev_scores = heads[0].bonafide_log_odds(z[~train_mask])
    dev_bona = truth["generator"][~train_mask] == BONAFIDE
    out_dir.mkdir(parents=True, exist_ok=True)
    with open(out_dir / WEIGHTS_FILE, "wb") as f:
        np.savez(f, **save_arrays(heads, mean, scale))
    count = lambda split, lab: sum(r.split == split and r.label == lab for r in rows)  # noqa: E731
    meta = {
        "detector": SourceTracerModel.name,
        "files": {WEIGHTS_FILE: sha256_file(out_dir / WEIGHTS_FILE)},
        "labels": {h.level: list(h.labels) for h in heads},
        "levels": levels,
        "families": {g: family[g] for g in sorted({r.generator for r in rows if r.generator})},
        "seen_generators": sorted({r.generator for r in rows if r.generator}),
        "training_manifest_sha256": manifest_sha256(rows),
        "seed": seed,
        "dev_fraction": dev_fraction,
        "epochs": None,
        "dev_eer": round(equal_error_rate(dev_scores[dev_bona], dev_scores[~dev_bona]), 6),
        "n_train_bonafide": count("train", "bonafide"),
        "n_train_spoof": count("train", "spoof"),
        "n_dev_bonafide": count("dev", "bonafide"),
        "n_dev_spoof": count("dev", "spoof"),
        "hyperparameters": {"C_grid": list(C_GRID), "features": int(feats.shape[1])},
        "train_seconds": round(time.perf_counter() - t0, 1),
        "command": command,
    }
    write_manifest(rows, out_dir / TRAINING_MANIFEST_FILE)
    (out_dir / METADATA_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return meta


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m voxarena.services.detectors.source_tracer.train", description=__doc__)
    p.add_argument(
        "--data", required=True, type=Path, nargs="+", help="the data run directory (or runs of one manifest)"
    )
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="weights directory (default: the tracer's weights/)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--dev-fraction", type=float, default=0.2, help="share of training speakers held out as dev")
    args = p.parse_args(argv)
    command = "python -m voxarena.services.detectors.source_tracer.train " + shlex.join(
        [a for a in (argv if argv is not None else sys.argv[1:])]
    )
    try:
        meta = train(args.data, args.out, args.seed, args.dev_fraction, command)
    except TrainingDataError as e:
        raise SystemExit(f"source-tracer: {e}") from None
    print(f"source-tracer: weights in {args.out} ({meta['train_seconds']} s); dev EER {meta['dev_eer']:.3f}")


if __name__ == "__main__":
    main()

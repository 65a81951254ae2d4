"""The detectors' training pipeline as a library: ``train_detector`` (train and calibrate a detector's weights from
orchestrator data runs), ``refit_calibration`` (refit the calibration of committed weights) and
``current_training`` (are the weights in a directory already trained on this data?).

Its command line is ``python -m voxarena.services.detectors.training`` (``__main__``): the entry point the
Makefile and the orchestrator's race use. The race runs it as a subprocess and never imports this package
(the orchestrator knows models by the catalogue only); a detector that ships an entry point taking the same
arguments can race.

The data run (``configs/train-detectors.yaml``) holds bona fide clips of the training speakers and
spoofed clips from the seen generators. Speakers are split into train and dev (seeded); the detector
trains on train (neural ones stop early on dev EER). The calibration to LLRs is fitted on
leave-one-attack-out dev scores (``loao``: one fold detector per seen generator, trained without it,
scoring every dev clip), so it has seen the detector meet an attack it was not trained on; the
served weights are still the ones trained on every attack. ``metadata.json`` records the weight
files' sha256, the training manifest hash, seed, epochs, dev EER, the calibration with its method,
parameters and folds, the pooled LOAO dev Cllr and the command that made them.
"""

from __future__ import annotations

import importlib
import json
import time
from pathlib import Path

import numpy as np

from voxarena.catalogue import SERVICES
from voxarena.codec import read_audio_file
from voxarena.hashing import sha256_file
from voxarena.services.detectors.trained import (
    METADATA_FILE,
    TRAINING_MANIFEST_FILE,
    TrainedDetector,
    read_verified_metadata,
)
from voxarena.services.model_class import class_path

from .data import build_training_manifest, cllr, equal_error_rate, manifest_sha256, write_manifest
from .loao import loao_calibration

# detector name -> (trainer module with fit(), serving model class): every catalogue row with a trainer,
# its fit() beside its model (``voxarena/services/detectors/<name>/train.py``).
TRAINERS = {s.name: (f"{s.module}.train", class_path(s.module)) for s in SERVICES if s.trainable}
DEFAULT_SEED = 20260101


def model_class(detector: str) -> type[TrainedDetector]:
    """The serving model class of ``detector`` (imported: its dependencies are needed)."""
    module, name = TRAINERS[detector][1].split(":")
    cls: type[TrainedDetector] = getattr(importlib.import_module(module), name)
    return cls


def _write_metadata(out_dir: Path, meta: dict) -> None:
    (out_dir / METADATA_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")


def _train_into(
    detector: str, train_rows: list, dev_rows: list, out_dir: Path, seed: int, max_epochs: int | None, cache_dir: Path
) -> dict:
    """Fit ``detector`` on ``train_rows`` (early stopping / model selection on ``dev_rows``) into ``out_dir``
    and write the metadata the serving code needs to load it; returns that metadata."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.iterdir():  # no stale file may survive next to new metadata
        if old.is_file():
            old.unlink()
    fit = importlib.import_module(TRAINERS[detector][0]).fit
    result = fit(train_rows, dev_rows, out_dir, seed, max_epochs=max_epochs, cache_dir=cache_dir)
    files = {name: sha256_file(out_dir / name) for name in sorted(result.pop("files"))}
    meta = {"detector": detector, "files": files, **result}
    _write_metadata(out_dir, meta)
    return meta


def check_trainable(detector: str) -> None:
    if detector not in TRAINERS:
        raise SystemExit(f"unknown detector {detector!r}; trainable: {', '.join(TRAINERS)}")


def current_training(
    detector: str, data: Path | list[Path], out_dir: Path, seed: int = DEFAULT_SEED, dev_fraction: float = 0.1
) -> dict | None:
    """The metadata of the weights in ``out_dir`` when they are ``detector``'s, intact (every file's sha256 as
    recorded), calibrated, and trained on exactly the clips ``data`` gives with this seed and dev fraction;
    else None (none yet, other data, or a training that was cut: training again gives the same weights)."""
    check_trainable(detector)
    expected = manifest_sha256(build_training_manifest(data, dev_fraction, seed))
    try:
        meta = read_verified_metadata(out_dir, detector, model_class(detector).weight_files)
    except (FileNotFoundError, RuntimeError, ValueError, KeyError):
        return None
    if meta.get("training_manifest_sha256") == expected and "calibration" in meta:
        return meta
    return None


def _raw_scores(detector: str, weights_dir: Path, rows: list) -> np.ndarray:
    """Uncalibrated scores of ``rows`` through the serving code path, with the weights in ``weights_dir``."""
    model = model_class(detector)(weights_dir)
    model.load()
    model.calibration = None
    return np.array(model.score_batch([read_audio_file(r.path, r.id) for r in rows]))


def _calibrate(
    detector: str,
    run_dir: Path,
    rows: list,
    weights_dir: Path,
    seed: int,
    max_epochs: int | None,
    meta: dict,
    loao_dir: Path | None = None,
) -> None:
    """Fit the calibration on the pooled leave-one-attack-out dev scores (``loao``, folds kept in ``loao_dir``,
    default RUN_DIR/.loao/DETECTOR) and record it in ``meta``, with the dev Cllr it gives on those scores and
    on the served detector's own dev scores (seen attacks)."""
    cache = run_dir / ".feature-cache"
    record = loao_calibration(
        detector,
        rows,
        loao_dir or run_dir / ".loao" / detector,
        seed,
        max_epochs,
        lambda train, dev, out: _train_into(detector, train, dev, out, seed, max_epochs, cache),
        lambda out, scored: _raw_scores(detector, out, scored),
    )
    dev_rows = [r for r in rows if r.split == "dev"]
    scores = _raw_scores(detector, weights_dir, dev_rows)
    labels = np.array([r.label for r in dev_rows])
    bona, spoof = scores[labels == "bonafide"], scores[labels == "spoof"]
    a, b = record["a"], record["b"]
    meta["dev_eer"] = round(equal_error_rate(bona, spoof), 6)
    meta["calibration"] = record
    # The headline dev Cllr is the pooled LOAO one: unseen speakers and, in each fold, one unseen attack.
    meta["dev_cllr"] = record["dev_cllr_pooled"]
    # The served detector on its own dev clips (seen attacks only): optimistic, for comparison.
    meta["dev_cllr_seen_attacks"] = round(cllr(a * bona + b, a * spoof + b), 6)


def train_detector(
    detector: str,
    data: Path | list[Path],
    out_dir: Path,
    seed: int = DEFAULT_SEED,
    dev_fraction: float = 0.1,
    max_epochs: int | None = None,
    command: str = "",
    loao_dir: Path | None = None,
) -> dict:
    """Train on the data run(s) ``data`` (feature cache and, unless ``loao_dir`` says where, the LOAO folds
    live in the first) into ``out_dir``."""
    check_trainable(detector)
    t0 = time.perf_counter()
    run_dir = data if isinstance(data, Path) else data[0]
    rows = build_training_manifest(data, dev_fraction, seed)
    train_rows = [r for r in rows if r.split == "train"]
    dev_rows = [r for r in rows if r.split == "dev"]
    count = lambda rs, lab: sum(r.label == lab for r in rs)  # noqa: E731
    print(
        f"{detector}: {count(train_rows, 'bonafide')} bona fide + {count(train_rows, 'spoof')} spoof training clips, "
        f"{count(dev_rows, 'bonafide')} + {count(dev_rows, 'spoof')} dev",
        flush=True,
    )
    result = _train_into(detector, train_rows, dev_rows, out_dir, seed, max_epochs, run_dir / ".feature-cache")
    meta = {
        **result,
        "training_manifest_sha256": manifest_sha256(rows),
        "seed": seed,
        "dev_fraction": dev_fraction,
        "seen_generators": sorted({r.generator for r in rows if r.label == "spoof"}),
        "n_train_bonafide": count(train_rows, "bonafide"),
        "n_train_spoof": count(train_rows, "spoof"),
        "n_dev_bonafide": count(dev_rows, "bonafide"),
        "n_dev_spoof": count(dev_rows, "spoof"),
        "command": command,
    }
    write_manifest(rows, out_dir / TRAINING_MANIFEST_FILE)
    _write_metadata(out_dir, meta)
    meta["train_seconds"] = round(time.perf_counter() - t0, 1)
    t1 = time.perf_counter()
    _calibrate(detector, run_dir, rows, out_dir, seed, max_epochs, meta, loao_dir)
    meta["calibration"]["seconds"] = round(time.perf_counter() - t1, 1)
    _write_metadata(out_dir, meta)
    return meta


def _same_clips(rows: list, weights_dir: Path) -> int:
    """Check that ``rows`` are the clips the weights were trained on (ids, labels, speakers, train/dev split,
    bona fide bytes); returns how many spoofed clips were regenerated with other bytes.

    Spoofed bytes may differ without the clip being another one: float WAVs used to carry
    libsndfile's timestamped PEAK chunk, so the same samples written twice had two sha256s. What the
    calibration relies on is the split: the dev speakers were never in the weights' training set."""
    committed = {}
    for line in (weights_dir / TRAINING_MANIFEST_FILE).read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            committed[r["id"]] = r
    mine = {r.id: r.record() for r in rows}
    if set(mine) != set(committed):
        diff = sorted(set(mine) ^ set(committed))
        raise SystemExit(
            f"{weights_dir}: the data has {len(diff)} clips more or fewer than the weights were trained on "
            f"(e.g. {', '.join(diff[:3])}); rebuild that data run or retrain"
        )
    changed = [
        k
        for k in mine
        if any(mine[k][f] != committed[k][f] for f in ("label", "speaker", "split"))
        or (mine[k]["label"] == "bonafide" and mine[k]["sha256"] != committed[k]["sha256"])
    ]
    if changed:
        raise SystemExit(
            f"{weights_dir}: {len(changed)} clips differ in label, speaker, split or bona fide bytes "
            f"from the training data (e.g. {', '.join(changed[:3])}); rebuild that data run or retrain"
        )
    return sum(mine[k]["sha256"] != committed[k]["sha256"] for k in mine)


def refit_calibration(detector: str, data: Path | list[Path], weights_dir: Path, command: str = "") -> dict:
    """Refit the calibration of committed weights by LOAO, keeping the weight files. The data must hold the
    clips the weights were trained on (``_same_clips``); the seed, dev split and epoch budget are the ones
    recorded."""
    meta = read_verified_metadata(weights_dir, detector, model_class(detector).weight_files)
    run_dir = data if isinstance(data, Path) else data[0]
    rows = build_training_manifest(data, meta["dev_fraction"], meta["seed"])
    regenerated = _same_clips(rows, weights_dir)
    max_epochs = meta.get("hyperparameters", {}).get("max_epochs")
    t1 = time.perf_counter()
    _calibrate(detector, run_dir, rows, weights_dir, meta["seed"], max_epochs, meta)
    meta["calibration"].update(
        seconds=round(time.perf_counter() - t1, 1),
        command=command,
        data_manifest_sha256=manifest_sha256(rows),
        spoof_clips_regenerated=regenerated,
    )
    _write_metadata(weights_dir, meta)
    return meta

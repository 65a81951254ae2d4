"""Train a detector's weights from an orchestrator run directory.

    make train-detectors                      # builds the data, then trains every detector
    python -m services.detectors.training --detector rawnet2 --data runs/train-detectors \\
        --out services/detectors/rawnet2/weights

The data run (``configs/train-detectors.yaml``) holds bona fide clips of the training speakers and
spoofed clips from the seen generators. Speakers are split into train and dev (seeded); the detector
trains on train (neural ones stop early on dev EER), then the serving code scores dev, a logistic
calibration to LLRs is fitted on those scores, and ``metadata.json`` records the weight files'
sha256, the training manifest hash, seed, epochs, dev EER, calibration and this command.
"""
from __future__ import annotations

import argparse
import importlib
import json
import shlex
import sys
import time
from pathlib import Path

import numpy as np

from services.detectors.calibration import fit_llr_calibration
from services.detectors.trained import METADATA_FILE, TRAINING_MANIFEST_FILE
from voxarena.codec import read_audio_file
from voxarena.hashing import sha256_file

from .data import build_training_manifest, cllr, equal_error_rate, manifest_sha256, write_manifest

# detector name -> (trainer module with fit(), serving model class)
TRAINERS = {
    "lfcc-gmm": ("services.detectors.lfcc_gmm.train", "services.detectors.lfcc_gmm.model:LfccGmmModel"),
    "lfcc-lcnn": ("services.detectors.lfcc_lcnn.train", "services.detectors.lfcc_lcnn.model:LfccLcnnModel"),
    "rawnet2": ("services.detectors.rawnet2.train", "services.detectors.rawnet2.model:RawNet2Model"),
    "aasist": ("services.detectors.aasist.train", "services.detectors.aasist.model:AasistModel"),
    "whisper-frontend": ("services.detectors.whisper_frontend.train",
                         "services.detectors.whisper_frontend.model:WhisperFrontendModel"),
}
DEFAULT_SEED = 20260101


def _load_class(path: str):
    module, name = path.split(":")
    return getattr(importlib.import_module(module), name)


def _write_metadata(out_dir: Path, meta: dict) -> None:
    (out_dir / METADATA_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")


def train_detector(detector: str, run_dir: Path, out_dir: Path, seed: int = DEFAULT_SEED, dev_fraction: float = 0.1,
                   max_epochs: int | None = None, command: str = "") -> dict:
    if detector not in TRAINERS:
        raise SystemExit(f"unknown detector {detector!r}; trainable: {', '.join(TRAINERS)}")
    trainer_module, model_class = TRAINERS[detector]
    t0 = time.perf_counter()
    rows = build_training_manifest(run_dir, dev_fraction, seed)
    train_rows = [r for r in rows if r.split == "train"]
    dev_rows = [r for r in rows if r.split == "dev"]
    count = lambda rs, lab: sum(r.label == lab for r in rs)  # noqa: E731
    print(f"{detector}: {count(train_rows, 'bonafide')} bona fide + {count(train_rows, 'spoof')} spoof training clips, "
          f"{count(dev_rows, 'bonafide')} + {count(dev_rows, 'spoof')} dev", flush=True)
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.iterdir():  # no stale file may survive next to new metadata
        if old.is_file():
            old.unlink()
    fit = importlib.import_module(trainer_module).fit
    result = fit(train_rows, dev_rows, out_dir, seed, max_epochs=max_epochs, cache_dir=run_dir / ".feature-cache")
    files = {name: sha256_file(out_dir / name) for name in sorted(result.pop("files"))}
    meta = {
        "detector": detector, "files": files, "training_manifest_sha256": manifest_sha256(rows), "seed": seed,
        "dev_fraction": dev_fraction, "seen_generators": sorted({r.generator for r in rows if r.label == "spoof"}),
        "n_train_bonafide": count(train_rows, "bonafide"), "n_train_spoof": count(train_rows, "spoof"),
        "n_dev_bonafide": count(dev_rows, "bonafide"), "n_dev_spoof": count(dev_rows, "spoof"),
        "command": command, **result,
    }
    write_manifest(rows, out_dir / TRAINING_MANIFEST_FILE)
    _write_metadata(out_dir, meta)
    # Dev scores through the serving code path, with the weights just written.
    model = _load_class(model_class)(out_dir)
    model.load()
    model.calibration = None
    scores = np.array(model.score_batch([read_audio_file(r.path, r.id) for r in dev_rows]))
    labels = np.array([r.label for r in dev_rows])
    bona, spoof = scores[labels == "bonafide"], scores[labels == "spoof"]
    a, b = fit_llr_calibration(bona, spoof)
    meta["dev_eer"] = round(equal_error_rate(bona, spoof), 6)
    meta["calibration"] = {"a": a, "b": b, "fitted_on": "dev", "method": "prior-weighted logistic regression (P=0.5)"}
    # Cllr of the calibrated dev scores: optimistic (fitted and measured on the same dev set).
    meta["dev_cllr"] = round(cllr(a * bona + b, a * spoof + b), 6)
    meta["train_seconds"] = round(time.perf_counter() - t0, 1)
    _write_metadata(out_dir, meta)
    return meta


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    p = argparse.ArgumentParser(prog="python -m services.detectors.training", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--detector", required=True, choices=sorted(TRAINERS))
    p.add_argument("--data", required=True, type=Path, help="orchestrator run directory with the training clips")
    p.add_argument("--out", type=Path, help="weights directory (default: the detector's own weights/)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--dev-fraction", type=float, default=0.1, help="share of training speakers held out as dev")
    p.add_argument("--max-epochs", type=int, help="override the detector's epoch budget (neural detectors)")
    args = p.parse_args(argv)
    out = args.out or Path(importlib.import_module(TRAINERS[args.detector][0]).__file__).parent / "weights"
    command = shlex.join(["python", "-m", "services.detectors.training", *argv])
    meta = train_detector(args.detector, args.data, out, args.seed, args.dev_fraction, args.max_epochs, command)
    print(json.dumps(meta, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()

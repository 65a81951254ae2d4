"""Serving side of every detector trained by ``voxarena.services.detectors.training``.

A trained detector's weights directory holds its weight files and ``metadata.json``, which records
each file's sha256, the training manifest hash, seed, epochs, dev EER, the calibration fitted on dev
and the command that reproduces it. ``TrainedDetector.load()`` refuses to start when a file's hash
does not match, loads the calibration (so the SDK answers LLRs) and exposes the training record
in GetInfo metadata.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import ClassVar

from voxarena.catalogue import WEIGHTS_METADATA
from voxarena.codec import RESAMPLER
from voxarena.hashing import sha256_file
from voxarena.sdk import DetectorModel

METADATA_FILE = WEIGHTS_METADATA  # the catalogue states it: a race reads it too
TRAINING_MANIFEST_FILE = "training_manifest.jsonl"

# Metadata keys shown in GetInfo (values are stringified; nested values as JSON).
PUBLISHED_KEYS = (
    "training_manifest_sha256",
    "seed",
    "epochs",
    "dev_eer",
    "dev_cllr",
    "train_seconds",
    "command",
    "n_train_bonafide",
    "n_train_spoof",
    "n_dev_bonafide",
    "n_dev_spoof",
    "seen_generators",
    "calibration",
    "hyperparameters",
    "torch_version",
)


class WeightsMismatch(RuntimeError):
    """The weights on disk are not the ones the metadata describes."""


def read_verified_metadata(
    directory: Path, detector: str, files: tuple[str, ...], role: str = "detector", train_with: str = ""
) -> dict:
    """The metadata of ``directory`` after checking every file in ``files`` against its recorded sha256.
    ``role``: the metadata key that names the model (a generator trained here records "generator");
    ``train_with``: the command that makes the weights, for the error when they are missing."""
    meta_path = directory / METADATA_FILE
    missing = [name for name in (METADATA_FILE, *files) if not (directory / name).exists()]
    if missing:
        raise FileNotFoundError(
            f"{detector}: no weights in {directory} (missing {', '.join(missing)}); "
            f"train them with `{train_with or f'make train-detectors DETECTORS={detector}'}`"
        )
    meta = json.loads(meta_path.read_text())
    if meta.get(role) != detector:
        raise WeightsMismatch(f"{meta_path}: weights are for {meta.get(role)!r}, not {detector!r}; refusing to start")
    recorded = meta.get("files", {})
    for name in files:
        actual = sha256_file(directory / name)
        if actual != recorded.get(name):
            raise WeightsMismatch(
                f"{directory / name}: sha256 {actual} does not match metadata {recorded.get(name)}; refusing to start"
            )
    return meta


class TrainedDetector(DetectorModel):
    """Base for detectors whose weights come from the training pipeline.

    Subclasses set ``name``, ``weight_files`` and ``weights_env`` and implement ``load_weights``.
    """

    weight_files: ClassVar[tuple[str, ...]] = ()
    weights_env: ClassVar[str] = ""
    deterministic = True

    def __init__(self, weights_dir: str | Path | None = None) -> None:
        super().__init__()
        module_file = sys.modules[type(self).__module__].__file__
        if module_file is None:
            raise RuntimeError(f"{type(self).__name__}: its module has no file, so no default weights folder")
        default = Path(module_file).parent / "weights"  # beside the model module
        self.weights_dir = Path(weights_dir or os.environ.get(self.weights_env, "") or default)
        self.training: dict = {}

    def load(self) -> None:
        self.training = read_verified_metadata(self.weights_dir, self.name, self.weight_files)
        cal = self.training.get("calibration")
        self.calibration = (float(cal["a"]), float(cal["b"])) if cal else None
        self.load_weights(self.weights_dir, self.training)

    def load_weights(self, directory: Path, meta: dict) -> None:
        raise NotImplementedError

    def weights_sha256(self) -> str:
        files = self.training.get("files", {})
        if len(files) == 1:
            return next(iter(files.values()))
        # Several files: the hash of their sorted "name sha256" lines (like sha256sum output).
        listing = "".join(f"{files[k]}  {k}\n" for k in sorted(files))
        return hashlib.sha256(listing.encode()).hexdigest()

    def metadata(self) -> dict[str, str]:
        out = {}
        for key in PUBLISHED_KEYS:
            if key in self.training:
                value = self.training[key]
                out[key] = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
        out["resampler"] = RESAMPLER
        return out

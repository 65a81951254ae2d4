"""The generators trained here (diffwave-small, codec-rvq): their weights on the serving side, their speech on
the training side.

Serving: ``TrainedGenerator`` reads the weights directory (beside the service's module, or ``$weights_env``),
whose ``metadata.json`` records each weight file's sha256, the training manifest's hash, the seed, the steps,
the losses and the command that made them; it refuses weights whose bytes differ (the detectors' rule,
``detectors.trained.read_verified_metadata``) and publishes the record in GetInfo. The networks are served
from ONNX with onnxruntime, one thread per call, no torch.

Training: ``speech_rows`` lists a LibriSpeech subset's utterances (train-clean-100 here: never an evaluation
speaker) with their sha256 and a seeded speaker split into train and dev; ``crops`` draws a batch of
fixed-length crops. The rows' canonical hash is the training manifest hash recorded with the weights.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import ClassVar

import numpy as np

from voxarena.codec import RESAMPLER
from voxarena.hashing import sha256_file
from voxarena.sdk import GeneratorModel
from voxarena.services.detectors.trained import METADATA_FILE, TRAINING_MANIFEST_FILE, read_verified_metadata
from voxarena.services.detectors.training.data import TrainingClip, manifest_sha256, write_manifest

SAMPLE_RATE = 16000
# Metadata keys shown in GetInfo (values stringified; nested values as JSON).
PUBLISHED_KEYS = (
    "training_manifest_sha256",
    "training_data",
    "seed",
    "steps",
    "final_losses",
    "dev",
    "train_seconds",
    "command",
    "n_train_utterances",
    "n_dev_utterances",
    "hyperparameters",
    "torch_version",
)


def onnx_session(path: Path):
    """An onnxruntime session on one thread, no busy-waiting (the server runs calls side by side)."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])


class TrainedGenerator(GeneratorModel):
    """Base of a generator whose weights were trained here; subclasses set ``name``, ``weight_files``,
    ``weights_env``, ``train_with`` and implement ``load_weights``."""

    weight_files: ClassVar[tuple[str, ...]] = ()
    weights_env: ClassVar[str] = ""
    train_with: ClassVar[str] = ""  # the command that makes the weights
    deterministic = True

    def __init__(self, weights_dir: str | Path | None = None) -> None:
        super().__init__()
        module_file = sys.modules[type(self).__module__].__file__
        if module_file is None:
            raise RuntimeError(f"{type(self).__name__}: its module has no file, so no default weights folder")
        default = Path(module_file).parent / "weights"
        self.weights_dir = Path(weights_dir or os.environ.get(self.weights_env, "") or default)
        self.training: dict = {}

    def load(self) -> None:
        self.training = read_verified_metadata(
            self.weights_dir, self.name, self.weight_files, role="generator", train_with=self.train_with
        )
        self.load_weights(self.weights_dir, self.training)

    def load_weights(self, directory: Path, meta: dict) -> None:
        raise NotImplementedError

    def parameter_count(self) -> int | None:
        return self.training.get("parameter_count")

    def weights_sha256(self) -> str:
        files = self.training["files"]
        if len(files) == 1:
            return next(iter(files.values()))
        # Several files: the hash of their sorted "sha256  name" lines (sha256sum's output).
        return hashlib.sha256("".join(f"{files[k]}  {k}\n" for k in sorted(files)).encode()).hexdigest()

    def metadata(self) -> dict[str, str]:
        out = {
            key: value if isinstance(value, str) else json.dumps(value, sort_keys=True)
            for key, value in self.training.items()
            if key in PUBLISHED_KEYS
        }
        return {**out, "input_resampler": RESAMPLER, "engine": "onnxruntime (CPU, 1 thread per call)"}


# ------------------------------------------------------------------------------------------------ training


def speech_rows(corpus: Path, dev_speakers: int, seed: int) -> list[TrainingClip]:
    """Every ``*.flac`` of a LibriSpeech subset folder, sorted, with its sha256; ``dev_speakers`` speakers
    (drawn with the seed) are dev, the rest train."""
    paths = sorted(corpus.rglob("*.flac"))
    if not paths:
        raise FileNotFoundError(f"{corpus}: no .flac files (a LibriSpeech subset folder is expected)")
    speakers = sorted({p.name.split("-")[0] for p in paths})
    if dev_speakers >= len(speakers):
        raise ValueError(f"{corpus}: {len(speakers)} speakers, cannot hold out {dev_speakers} for dev")
    dev = set(np.random.default_rng(seed).choice(speakers, dev_speakers, replace=False).tolist())
    return [
        TrainingClip(
            p.stem,
            str(p),
            sha256_file(p),
            "bonafide",
            p.name.split("-")[0],
            "",
            "dev" if p.name.split("-")[0] in dev else "train",
        )
        for p in paths
    ]


def crops(waves: list[np.ndarray], length: int, batch: int, rng: np.random.Generator) -> np.ndarray:
    """``batch`` random crops of ``length`` samples (float32), each from a clip drawn at random (a clip
    shorter than ``length`` is repeated)."""
    out = np.empty((batch, length), np.float32)
    for i, j in enumerate(rng.integers(0, len(waves), batch)):
        w = waves[j]
        if w.size <= length:
            w = np.tile(w, length // w.size + 1)
        start = int(rng.integers(0, w.size - length + 1))
        out[i] = w[start : start + length]
    return out


def write_weights(out_dir: Path, name: str, files: tuple[str, ...], rows: list[TrainingClip], record: dict) -> dict:
    """``metadata.json`` (the files' sha256, the manifest hash, ``record``) and ``training_manifest.jsonl``."""
    meta = {
        "generator": name,
        "files": {f: sha256_file(out_dir / f) for f in files},
        "training_manifest_sha256": manifest_sha256(rows),
        "n_train_utterances": sum(r.split == "train" for r in rows),
        "n_dev_utterances": sum(r.split == "dev" for r in rows),
        **record,
    }
    write_manifest(rows, out_dir / TRAINING_MANIFEST_FILE)
    (out_dir / METADATA_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return meta

"""hf-audio-classifier: any Hugging Face ``AutoModelForAudioClassification`` checkpoint from a local
directory (a user's wav2vec 2.0 / XLSR / AST / Whisper-encoder detector) as a VoxArena detector.

Nothing is downloaded: the directory must hold the model (``config.json`` + ``*.safetensors`` or
``pytorch_model.bin``) and its feature extractor (``preprocessor_config.json``); loading runs with
``local_files_only`` and the hub offline. Which label means bona fide is configurable (default
``bonafide``; matched case-insensitively against the model's ``id2label``). Each clip is resampled
to the feature extractor's rate (soxr HQ) and scored alone (no padding effects): score =
log p(bona fide) - log(1 - p(bona fide)) from the model's softmax, a log-odds that is **not** a
calibrated LLR (the training priors are unknown), so ``calibrated`` is false, unless the service is
started with ``--calibration A,B`` fitted on the user's dev data (then it answers ``is_llr``).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from voxarena.codec import RESAMPLER, AudioClip, resample
from voxarena.hashing import sha256_file
from voxarena.sdk import DetectorModel

WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin")


class HfAudioClassifierModel(DetectorModel):
    name = "hf-audio-classifier"
    version = "1.0.0"
    licence = "Apache-2.0 (adapter); the checkpoint's own licence applies to its weights"
    family = "PRETRAINED_FRONT_END"
    calibrated = False
    deterministic = True
    timing_scope = "score: resample + feature extraction + model forward, one clip at a time"
    max_batch_size = 16
    max_seconds = 120.0

    def __init__(
        self, model_dir: str | Path | None = None, bonafide_label: str | None = None, calibration: str | None = None
    ) -> None:
        super().__init__()
        if calibration:
            from voxarena.services.detectors.calibration import parse_calibration

            self.calibration = parse_calibration(calibration)
        self.model_dir = Path(model_dir or os.environ.get("VOXARENA_HF_MODEL_DIR", ""))
        self.bonafide_label = bonafide_label or os.environ.get("VOXARENA_HF_BONAFIDE_LABEL", "bonafide")

    def load(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        if not str(self.model_dir) or not (self.model_dir / "config.json").exists():
            raise RuntimeError(
                f"model directory {str(self.model_dir) or '(none)'} has no config.json; "
                "pass --model-dir or set VOXARENA_HF_MODEL_DIR to a saved checkpoint"
            )
        weights = sorted(f for pattern in WEIGHT_PATTERNS for f in self.model_dir.glob(pattern))
        if not weights:
            raise RuntimeError(f"{self.model_dir}: no weights ({' or '.join(WEIGHT_PATTERNS)})")
        import torch
        from transformers import AutoFeatureExtractor, AutoModelForAudioClassification

        torch.set_num_threads(1)
        self._torch = torch
        self._model = AutoModelForAudioClassification.from_pretrained(self.model_dir, local_files_only=True).eval()
        self._extractor = AutoFeatureExtractor.from_pretrained(self.model_dir, local_files_only=True)
        labels = {str(v).lower(): int(k) for k, v in self._model.config.id2label.items()}
        if self.bonafide_label.lower() not in labels:
            raise RuntimeError(
                f"bona fide label {self.bonafide_label!r} is not one of the model's labels "
                f"{sorted(self._model.config.id2label.values())}; set --bonafide-label"
            )
        self._bona = labels[self.bonafide_label.lower()]
        self.native_sample_rate = int(self._extractor.sampling_rate)
        digest = hashlib.sha256()
        for f in weights:
            digest.update(f.name.encode() + bytes.fromhex(sha256_file(f)))
        self._sha = digest.hexdigest()
        self._params = int(sum(p.numel() for p in self._model.parameters()))

    def parameter_count(self) -> int:
        return self._params

    def weights_sha256(self) -> str:
        return self._sha

    def metadata(self) -> dict[str, str]:
        return {
            "model_dir": str(self.model_dir),
            "architecture": type(self._model).__name__,
            "bonafide_label": self._model.config.id2label[self._bona],
            "resampler": RESAMPLER,
            "score": "log p(bona fide) - log(1 - p(bona fide)), not calibrated",
        }

    def score_clip(self, clip: AudioClip) -> float:
        x = resample(clip.samples, clip.sample_rate, self.native_sample_rate)
        inputs = self._extractor(x, sampling_rate=self.native_sample_rate, return_tensors="pt")
        with self._torch.no_grad():
            logp = self._torch.log_softmax(self._model(**inputs).logits[0].double(), dim=-1).numpy()
        others = np.delete(logp, self._bona)
        return float(logp[self._bona] - np.logaddexp.reduce(others))

    def score_batch(self, clips: list[AudioClip]) -> list[float]:
        return [self.score_clip(c) for c in clips]

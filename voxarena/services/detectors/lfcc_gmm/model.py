"""LFCC-GMM: the ASVspoof 2019/2021 baseline countermeasure.

Two GMMs over LFCC frames, one trained on bona fide speech and one on spoofed speech; the score of
a clip is the average over its frames of log p(x|bona fide) - log p(x|spoof) (higher = more bona
fide). That frame-average is not a likelihood ratio; the service maps it to an LLR with the logistic
calibration fitted on dev at training time (see ``voxarena.services.detectors.training``).

Weights live in ``weights/`` (or ``$VOXARENA_LFCC_GMM_WEIGHTS``): ``lfcc_gmm.npz`` and
``metadata.json``; the service refuses to start when the npz does not hash to the recorded sha256.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from voxarena.codec import AudioClip, resample
from voxarena.services.detectors.trained import TrainedDetector, WeightsMismatch  # noqa: F401 (re-exported)

from .gmm import DiagonalGmm
from .lfcc import LfccConfig, lfcc

WEIGHTS_FILE = "lfcc_gmm.npz"


class LfccGmmModel(TrainedDetector):
    name = "lfcc-gmm"
    version = "1.1.0"
    licence = "Apache-2.0 (VoxArena implementation of the ASVspoof baseline; weights trained on LibriSpeech, CC BY 4.0)"
    family = "HANDCRAFTED_FRONT_END"
    native_sample_rate = 16000
    timing_scope = "score: resample to 16 kHz (soxr HQ) + LFCC + two GMM likelihoods, batch averaged per clip"
    max_batch_size = 64
    max_seconds = 600.0
    weight_files = (WEIGHTS_FILE,)
    weights_env = "VOXARENA_LFCC_GMM_WEIGHTS"

    def load_weights(self, directory: Path, meta: dict) -> None:
        data = np.load(directory / WEIGHTS_FILE)
        self._bona, self._spoof = (
            DiagonalGmm(data[f"{k}_weights"], data[f"{k}_means"], data[f"{k}_variances"]) for k in ("bonafide", "spoof")
        )
        self._cfg = LfccConfig(**meta["lfcc"])

    def parameter_count(self) -> int:
        return int(sum(g.weights.size + g.means.size + g.variances.size for g in (self._bona, self._spoof)))

    def score_clip(self, clip: AudioClip) -> float:
        x = resample(clip.samples, clip.sample_rate, self._cfg.sample_rate)
        feats = lfcc(x, self._cfg)
        return float(np.mean(self._bona.frame_log_likelihood(feats) - self._spoof.frame_log_likelihood(feats)))

    def score_batch(self, clips: list[AudioClip]) -> list[float]:
        return [self.score_clip(c) for c in clips]

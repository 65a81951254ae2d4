"""LFCC-GMM: the ASVspoof 2019/2021 baseline countermeasure.

Two GMMs over LFCC frames, one trained on bona fide speech and one on spoofed speech; the score of
a clip is the average over its frames of log p(x|bona fide) - log p(x|spoof) (higher = more bona
fide). That frame-average is not a calibrated likelihood ratio, so ``calibrated`` is False.

Weights live in ``weights/`` (or ``$VOXARENA_LFCC_GMM_WEIGHTS``): ``lfcc_gmm.npz`` and
``metadata.json``; the service refuses to start when the npz does not hash to the recorded sha256.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from services.sdk import DetectorModel
from voxarena.hashing import sha256_file
from voxarena.codec import RESAMPLER, AudioClip, resample

from .gmm import DiagonalGmm
from .lfcc import LfccConfig, lfcc

WEIGHTS_DIR = Path(__file__).parent / "weights"
WEIGHTS_FILE = "lfcc_gmm.npz"
METADATA_FILE = "metadata.json"


class WeightsMismatch(RuntimeError):
    """The weights on disk are not the ones the metadata describes."""


def load_weights(directory: Path) -> tuple[DiagonalGmm, DiagonalGmm, LfccConfig, dict]:
    meta_path, npz_path = directory / METADATA_FILE, directory / WEIGHTS_FILE
    if not meta_path.exists() or not npz_path.exists():
        raise FileNotFoundError(
            f"no lfcc-gmm weights in {directory} (expected {WEIGHTS_FILE} and {METADATA_FILE}); "
            "train them with `make train-lfcc-gmm`"
        )
    meta = json.loads(meta_path.read_text())
    actual = sha256_file(npz_path)
    if actual != meta.get("weights_sha256"):
        raise WeightsMismatch(
            f"{npz_path}: sha256 {actual} does not match metadata weights_sha256 {meta.get('weights_sha256')}; refusing to start"
        )
    data = np.load(npz_path)
    gmms = tuple(
        DiagonalGmm(data[f"{k}_weights"], data[f"{k}_means"], data[f"{k}_variances"]) for k in ("bonafide", "spoof")
    )
    return gmms[0], gmms[1], LfccConfig(**meta["lfcc"]), meta


class LfccGmmModel(DetectorModel):
    name = "lfcc-gmm"
    version = "1.0.0"
    licence = "Apache-2.0 (VoxArena implementation of the ASVspoof baseline; weights trained on LibriSpeech, CC BY 4.0)"
    family = "HANDCRAFTED_FRONT_END"
    calibrated = False
    native_sample_rate = 16000
    deterministic = True
    timing_scope = "score: resample to 16 kHz (soxr HQ) + LFCC + two GMM likelihoods, batch averaged per clip"
    max_batch_size = 64
    max_seconds = 600.0

    def __init__(self, weights_dir: str | Path | None = None) -> None:
        super().__init__()
        self.weights_dir = Path(weights_dir or os.environ.get("VOXARENA_LFCC_GMM_WEIGHTS") or WEIGHTS_DIR)

    def load(self) -> None:
        self._bona, self._spoof, self._cfg, self._meta = load_weights(self.weights_dir)

    def parameter_count(self) -> int:
        return int(sum(g.weights.size + g.means.size + g.variances.size for g in (self._bona, self._spoof)))

    def weights_sha256(self) -> str:
        return self._meta["weights_sha256"]

    def metadata(self) -> dict[str, str]:
        keep = ("training_manifest_sha256", "seed", "n_components", "dev_eer", "train_seconds", "command",
                "n_train_bonafide", "n_train_spoof", "spoof_generators")
        out = {k: str(self._meta[k]) for k in keep if k in self._meta}
        out["lfcc"] = json.dumps(self._cfg.as_dict(), sort_keys=True)
        out["resampler"] = RESAMPLER
        return out

    def score_clip(self, clip: AudioClip) -> float:
        x = resample(clip.samples, clip.sample_rate, self._cfg.sample_rate)
        feats = lfcc(x, self._cfg)
        return float(np.mean(self._bona.frame_log_likelihood(feats) - self._spoof.frame_log_likelihood(feats)))

    def score_batch(self, clips: list[AudioClip]) -> list[float]:
        return [self.score_clip(c) for c in clips]

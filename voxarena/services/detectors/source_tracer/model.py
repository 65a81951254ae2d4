"""source-tracer: which system made a clip, at two levels (generator and family), open set.

Clip features (``features.py``: LFCC statistics, the long-term spectrum's shape, energy percentiles),
standardised, into one head per level (``heads.py``: a multinomial logistic regression with bona fide
as a class, and an unknown model learnt by leaving systems out). Trained here on the arena's own clips
(``train.py``, ``make train-tracer``); the weights and their record live in ``weights/``.

Its labels are read from ``weights/metadata.json`` when the model is made (GetInfo declares them before
the weights load); ``load()`` then checks the weight file's sha256 and that the labels match it.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from voxarena.codec import AudioClip
from voxarena.services.detectors.trained import METADATA_FILE, TrainedDetector

from .features import clip_features
from .heads import LEVELS, Head, load_heads

WEIGHTS_FILE = "tracer.npz"


class SourceTracerModel(TrainedDetector):
    name = "source-tracer"
    version = "1.0.0"
    licence = "Apache-2.0 (VoxArena; weights trained on the arena's own clips of LibriSpeech, CC BY 4.0)"
    family = "HANDCRAFTED_FRONT_END"
    native_sample_rate = 16000
    timing_scope = "score: resample to 16 kHz (soxr HQ) + clip features + linear heads, batch averaged per clip"
    max_batch_size = 64
    min_seconds = 0.1
    max_seconds = 600.0
    weight_files = (WEIGHTS_FILE,)
    weights_env = "VOXARENA_SOURCE_TRACER_WEIGHTS"

    def __init__(self, weights_dir: str | Path | None = None) -> None:
        super().__init__(weights_dir)
        meta_path = self.weights_dir / METADATA_FILE
        if not meta_path.exists():
            raise FileNotFoundError(
                f"{self.name}: no weights in {self.weights_dir} (missing {METADATA_FILE}); "
                "train them with `make train-tracer`"
            )
        recorded = json.loads(meta_path.read_text())["labels"]
        # In the trainer's level order (generator first: its head gives the score), whatever the file's key order.
        self._labels: dict[str, list[str]] = {level: recorded[level] for level in LEVELS if level in recorded}
        # The declaration is this instance's (its weights'), not every tracer's: set on the instance.
        declared = tuple((level, (*known, "unknown")) for level, known in self._labels.items())
        self.attribution = declared  # type: ignore[misc]
        self._heads: list[Head] = []

    def load_weights(self, directory: Path, meta: dict) -> None:
        if {level: meta["labels"].get(level) for level in self._labels} != self._labels:
            raise ValueError(f"{directory / METADATA_FILE}: its labels changed after the service declared them")
        with np.load(directory / WEIGHTS_FILE) as arrays:
            self._mean, self._scale = arrays["feature_mean"], arrays["feature_scale"]
            self._heads = load_heads(arrays, self._labels)

    def parameter_count(self) -> int:
        return int(sum(h.weight.size + h.bias.size + h.centroids.size + 4 for h in self._heads) + 2 * self._mean.size)

    def metadata(self) -> dict[str, str]:
        out = super().metadata()
        out["levels"] = json.dumps(self.training.get("levels", {}), sort_keys=True)
        return out

    def standardised(self, clips: list[AudioClip]) -> np.ndarray:
        feats = np.vstack([clip_features(c.as_float32(), c.sample_rate) for c in clips])
        out: np.ndarray = (feats - self._mean) / self._scale
        return out

    def score_batch(self, clips: list[AudioClip]) -> list[float]:
        (generator,) = (h for h in self._heads if h.level == "generator")
        return generator.bonafide_log_odds(self.standardised(clips)).tolist()

    def attribute_batch(
        self, clips: list[AudioClip], options: list[dict[str, str]]
    ) -> list[dict[str, dict[str, float]]]:
        z = self.standardised(clips)
        per_level = [(h.level, h.declared, h.attribution(z)) for h in self._heads]
        return [{level: dict(zip(labels, p[i].tolist())) for level, labels, p in per_level} for i in range(len(clips))]

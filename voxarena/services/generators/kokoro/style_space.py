"""Kokoro's style space as CLONE searches it: points, and the bank of points with their d-vectors.

A point is two weight vectors over the five stock voices: ``timbre`` mixes the voices' tables in
their first 128 columns (the decoder's style), ``prosody`` in their last 128 (the predictor's: pitch,
durations, energy). Its style table is the mix of the whole [510, 256] tables, so the style for any
input length n is row n - 1 of the mixture, consistent across lengths. Weights may go slightly
negative (extrapolation beyond a voice), within ``WEIGHT_BOUNDS``.

The bank: a fixed recipe of points (the stock voices, their pairwise mixtures, every voice's
timbre with every other's prosody, each voice pushed away from the others, seeded random
mixtures), each with the d-vector of Kokoro speaking a fixed probe text in that style. Building it
costs one synthesis per point, so it is cached on disk under a key that is the sha256 of
everything it depends on.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

log = logging.getLogger("voxarena.kokoro")

WEIGHT_BOUNDS = (-0.5, 1.5)
# Phonetically rich (Harvard sentences, public domain), about 5 s of speech.
PROBE_TEXT = "The birch canoe slid on the smooth planks. Glue the sheet to the dark blue background."
RECIPE_VERSION = 1
RANDOM_MIXTURES = 15
RECIPE_SEED = 20250101


@dataclass(frozen=True)
class StylePoint:
    timbre: np.ndarray  # (K,) weights, sum 1
    prosody: np.ndarray  # (K,) weights, sum 1

    def table(self, stock: np.ndarray) -> np.ndarray:
        """The [510, 256] style table of this point from the stock tables [K, 510, 256]."""
        half = stock.shape[2] // 2
        return np.concatenate(
            [np.tensordot(self.timbre, stock[:, :, :half], 1), np.tensordot(self.prosody, stock[:, :, half:], 1)],
            axis=1,
        ).astype(np.float32)

    def vector(self) -> np.ndarray:
        return np.concatenate([self.timbre, self.prosody])

    @staticmethod
    def from_vector(v: np.ndarray) -> StylePoint:
        """Clipped to the bounds and renormalised to sum 1 per half."""
        k = v.size // 2
        halves = [np.clip(h, *WEIGHT_BOUNDS) for h in (v[:k], v[k:])]
        return StylePoint(*(h / h.sum() for h in halves))

    def describe(self, names: list[str]) -> str:
        def part(w: np.ndarray) -> str:
            return ",".join(f"{n}:{x:.2f}" for n, x in zip(names, w) if abs(x) >= 0.005)

        return f"timbre {part(self.timbre)}; prosody {part(self.prosody)}"


def recipe_points(k: int) -> list[StylePoint]:
    """The bank's points, in a fixed order (the recipe's version is part of the cache key)."""
    eye = np.eye(k)
    points = [StylePoint(eye[i], eye[i]) for i in range(k)]
    points += [StylePoint((eye[i] + eye[j]) / 2, (eye[i] + eye[j]) / 2) for i, j in itertools.combinations(range(k), 2)]
    points += [StylePoint(eye[i], eye[j]) for i, j in itertools.permutations(range(k), 2)]
    pushed = [1.4 * eye[i] - 0.4 * (1 - eye[i]) / (k - 1) for i in range(k)]  # each voice away from the others
    points += [StylePoint(w, w) for w in pushed]
    rng = np.random.default_rng(RECIPE_SEED)
    points += [
        StylePoint(rng.dirichlet(np.full(k, 0.7)), rng.dirichlet(np.full(k, 0.7))) for _ in range(RANDOM_MIXTURES)
    ]
    return points


def cache_dir() -> Path:
    """``$VOXARENA_CACHE/kokoro``, else ``$TMPDIR/voxarena-cache/kokoro`` (container roots are read-only)."""
    root = os.environ.get("VOXARENA_CACHE") or os.path.join(tempfile.gettempdir(), "voxarena-cache")
    return Path(root) / "kokoro"


@dataclass
class StyleBank:
    points: list[StylePoint]
    embeddings: np.ndarray  # (N, D) L2-normalised d-vectors of the probe text spoken in each point
    key: str

    @staticmethod
    def cache_key(dependencies: dict[str, str], k: int) -> str:
        payload = dict(
            dependencies,
            recipe_version=str(RECIPE_VERSION),
            probe=PROBE_TEXT,
            random_mixtures=str(RANDOM_MIXTURES),
            seed=str(RECIPE_SEED),
            voices=str(k),
        )
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    @classmethod
    def load_or_build(
        cls,
        dependencies: dict[str, str],
        k: int,
        embed_point: Callable[[StylePoint], np.ndarray],
        directory: Path | None = None,
    ) -> StyleBank:
        key = cls.cache_key(dependencies, k)
        path = (directory or cache_dir()) / f"style-bank-{key[:16]}.npz"
        points = recipe_points(k)
        if path.is_file():
            with np.load(path) as npz:
                if str(npz["key"]) == key and npz["embeddings"].shape[0] == len(points):
                    log.info("kokoro style bank: %d points from %s", len(points), path)
                    return cls(points, npz["embeddings"], key)
            log.warning("kokoro style bank %s does not match its key; rebuilding", path)
        t0 = time.perf_counter()
        rows = []
        for i, point in enumerate(points):
            rows.append(embed_point(point))
            log.info("kokoro style bank: point %d/%d (%.0f s)", i + 1, len(points), time.perf_counter() - t0)
        bank = cls(points, np.stack(rows).astype(np.float32), key)
        bank._save(path)
        return bank

    def _save(self, path: Path) -> None:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".npz", delete=False) as f:
                np.savez(f, embeddings=self.embeddings, key=np.array(self.key))
            os.replace(f.name, path)
            log.info("kokoro style bank saved to %s", path)
        except OSError as e:  # a read-only file system: keep it in memory, rebuild next start
            log.warning("kokoro style bank not cached (%s): it will be rebuilt at the next start", e)

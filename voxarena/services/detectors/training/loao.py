"""Leave-one-attack-out (LOAO) dev scores: the calibration's view of the detector being wrong.

A detector separates the dev clips of the attacks it was trained on perfectly, so a calibration
fitted on them learns that the detector is never wrong and answers huge LLRs on every attack it
has not seen. Here, for each seen generator g, a fold detector is trained on the training speakers
and the other seen generators (early-stopped or model-selected on the dev clips without g), then
scores every dev clip, g's included, through the serving code. The folds' dev scores are pooled
and the calibration is fitted on them; the detector that is served keeps the weights trained on
every attack. Dev speakers are held out in every fold, so the pool has unseen speakers and one
unseen attack per fold, as the arena's evaluation has.

Fold weights and scores live under ``RUN_DIR/.loao/DETECTOR/HELD_OUT/``; a fold whose recorded key
(detector, held-out generator, seed, epoch budget, training manifest hash) matches is reused, so an
interrupted refit resumes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .data import TrainingClip, cllr, equal_error_rate, manifest_sha256

SCORES_FILE = "dev_scores.json"


@dataclass(frozen=True)
class FoldScores:
    held_out: str
    ids: list[str]
    labels: list[str]
    generators: list[str]
    scores: list[float]
    record: dict  # what metadata.json keeps about the fold

    def of(self, label: str, generator: str | None = None) -> np.ndarray:
        return np.array(
            [
                s
                for s, lab, g in zip(self.scores, self.labels, self.generators)
                if lab == label and (generator is None or g == generator)
            ]
        )


def seen_generators(rows: list[TrainingClip]) -> list[str]:
    return sorted({r.generator for r in rows if r.label == "spoof"})


def fold_split(rows: list[TrainingClip], held_out: str) -> tuple[list, list, list]:
    """(train, early-stopping dev, scored dev) of the fold that holds ``held_out`` out of training."""
    train = [r for r in rows if r.split == "train" and r.generator != held_out]
    dev = [r for r in rows if r.split == "dev"]
    return train, [r for r in dev if r.generator != held_out], dev


def run_fold(
    detector: str,
    rows: list[TrainingClip],
    held_out: str,
    work_dir: Path,
    seed: int,
    max_epochs: int | None,
    train_into: Callable[..., dict],
    score_raw: Callable[[Path, list], np.ndarray],
) -> FoldScores:
    """Train (or reuse) the fold without ``held_out`` and score every dev clip with it, uncalibrated.

    ``train_into(train, dev, out_dir)`` fits and writes weights + metadata into ``out_dir``;
    ``score_raw(out_dir, rows)`` scores clips through the serving code with those weights.
    """
    fold_dir = work_dir / held_out
    key = {
        "detector": detector,
        "held_out": held_out,
        "seed": seed,
        "max_epochs": max_epochs,
        "training_manifest_sha256": manifest_sha256(rows),
    }
    cached = fold_dir / SCORES_FILE
    if cached.exists():
        stored = json.loads(cached.read_text())
        if stored["key"] == key:
            print(f"{detector}: LOAO fold without {held_out}: reusing {cached}", flush=True)
            return FoldScores(
                held_out, stored["ids"], stored["labels"], stored["generators"], stored["scores"], stored["record"]
            )
    train, stop_dev, scored = fold_split(rows, held_out)
    print(f"{detector}: LOAO fold without {held_out}: training on {len(train)} clips", flush=True)
    t0 = time.perf_counter()
    result = train_into(train, stop_dev, fold_dir)
    scores = score_raw(fold_dir, scored)
    labels = np.array([r.label for r in scored])
    gens = np.array([r.generator for r in scored])
    bona = scores[labels == "bonafide"]
    record = {
        "held_out": held_out,
        "n_train_spoof": sum(r.label == "spoof" for r in train),
        "epochs": result.get("epochs"),
        "dev_eer_seen": round(equal_error_rate(bona, scores[(labels == "spoof") & (gens != held_out)]), 6),
        "dev_eer_held_out": round(equal_error_rate(bona, scores[gens == held_out]), 6),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    out = FoldScores(held_out, [r.id for r in scored], labels.tolist(), gens.tolist(), scores.tolist(), record)
    cached.write_text(
        json.dumps(
            {
                "key": key,
                "ids": out.ids,
                "labels": out.labels,
                "generators": out.generators,
                "scores": out.scores,
                "record": record,
            },
            indent=1,
        )
        + "\n"
    )
    print(
        f"{detector}: LOAO fold without {held_out}: dev EER {record['dev_eer_seen']:.3f} on seen attacks, "
        f"{record['dev_eer_held_out']:.3f} on {held_out} ({record['seconds']:.0f} s)",
        flush=True,
    )
    return out


def loao_calibration(
    detector: str,
    rows: list[TrainingClip],
    work_dir: Path,
    seed: int,
    max_epochs: int | None,
    train_into: Callable[..., dict],
    score_raw: Callable[[Path, list], np.ndarray],
) -> dict:
    """Calibration fitted on the pooled LOAO dev scores, with the pooled dev EER and Cllr and each fold's record."""
    from voxarena.services.detectors.calibration import calibration_record, fit_llr_calibration

    folds = [
        run_fold(detector, rows, g, work_dir, seed, max_epochs, train_into, score_raw) for g in seen_generators(rows)
    ]
    bona = np.concatenate([f.of("bonafide") for f in folds])
    spoof = np.concatenate([f.of("spoof") for f in folds])
    a, b = fit_llr_calibration(bona, spoof)
    record = calibration_record(
        a, b, int(bona.size), int(spoof.size), "leave-one-attack-out dev scores of held-out speakers, pooled over folds"
    )
    record["loao_folds"] = [f.record for f in folds]
    record["dev_eer_pooled"] = round(equal_error_rate(bona, spoof), 6)
    record["dev_cllr_pooled"] = round(cllr(a * bona + b, a * spoof + b), 6)
    return record

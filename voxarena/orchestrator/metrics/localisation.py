"""``metrics/localisation.csv``: how well each detector finds the fake words of the run's partial fakes.

One row per detector x method (``vocoded``, ``words``, and ``pooled``), on the clean channel (the fake
intervals are the clean clip's samples), over the partial fakes of that method and every bona fide clip,
each with its segment scores (``run.segments``: the detector's own, or sliding windows):

- ``eer_utt`` and ``eer_utt_<bin>``: utterance EER of the partial fakes against the bona fide clips, all of
  them and by fake fraction (``<10%``, ``10-30%``, ``>30%`` of their samples);
- ``seg_eer_<ms>``: segment EER at the PartialSpoof resolutions 20..640 ms;
- ``range_eer``: range-based EER (duration-weighted, no resolution);
- ``precision``, ``recall``, ``iou``: of the time the detector's segment scores put below its utterance EER
  threshold (of all partial fakes of the method against bona fide), against the true fake time;

the definitions are in ``voxarena.stats.localisation``. ``eer_utt``, ``range_eer``, ``seg_eer_160ms`` and
``iou`` carry speaker-cluster bootstrap intervals (the run's resamples, seed and confidence), computed here
with the statistics core.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from voxarena.orchestrator.metrics.scorer_client import add_intervals, bootstrap_settings
from voxarena.orchestrator.run.partial import METHODS
from voxarena.orchestrator.store.records import DetectionRecord
from voxarena.orchestrator.store.run_store import CLEAN, RunStore
from voxarena.stats.detection import eer
from voxarena.stats.localisation import (
    FRACTION_BINS,
    RESOLUTIONS,
    LocalisedClip,
    detected_time,
    range_eer,
    segment_eer,
)

POOLED = "pooled"
BINS = [name for _, _, name in FRACTION_BINS]
SEG_COLUMNS = [f"seg_eer_{round(r * 1000)}ms" for r in RESOLUTIONS]
WITH_CI = ("eer_utt", "range_eer", "seg_eer_160ms", "iou")
LOCALISATION_COLUMNS = (
    ["detector", "method", "segments", "n_bonafide", "n_partial", "mean_fake_fraction", "eer_utt"]
    + [f"eer_utt_{b}" for b in BINS]
    + SEG_COLUMNS
    + ["range_eer", "precision", "recall", "iou"]
    + [f"{c}_ci_{side}" for c in WITH_CI for side in ("low", "high")]
)


class _Trial:
    """One scored clip: its utterance score, its localised truth and scores, its speaker and fake fraction."""

    def __init__(self, det: DetectionRecord, samples: int, rate: int, fake: tuple[tuple[int, int], ...]) -> None:
        seg = det.segments or {}
        self.score = float(det.score or 0.0)
        self.speaker, self.bonafide = det.speaker, det.kind == "bonafide"
        self.source = str(seg.get("source", ""))
        self.clip = LocalisedClip(samples, rate, fake, float(seg["hop_seconds"]), np.asarray(seg["scores"]))
        self.fraction = self.clip.fake_fraction


def _headline(trials: list[_Trial]) -> tuple[dict[str, float], float]:
    """(the figures with intervals, the utterance EER threshold); ValueError when a class is missing."""
    bona = np.array([t.score for t in trials if t.bonafide])
    fakes = np.array([t.score for t in trials if not t.bonafide])
    if bona.size == 0 or fakes.size == 0:
        raise ValueError("needs bona fide clips and partial fakes")
    out: dict[str, float] = {}
    out["eer_utt"], threshold = eer(bona, fakes)
    clips = [t.clip for t in trials]
    out["seg_eer_160ms"] = segment_eer(clips, 0.16)[0]
    out["range_eer"] = range_eer(clips)[0]
    out["iou"] = detected_time(clips, threshold)["iou"]
    return out, threshold


def _figures(trials: list[_Trial]) -> dict[str, float]:
    """Every figure of one row from its trials (ValueError when a class is missing)."""
    out, threshold = _headline(trials)
    bona = np.array([t.score for t in trials if t.bonafide])
    fakes = [t for t in trials if not t.bonafide]
    for low, high, name in FRACTION_BINS:
        mine = np.array([t.score for t in fakes if low <= t.fraction < high or (high == 1.0 and t.fraction == 1.0)])
        out[f"eer_utt_{name}"] = eer(bona, mine)[0] if mine.size else math.nan
    clips = [t.clip for t in trials]
    for resolution, column in zip(RESOLUTIONS, SEG_COLUMNS):
        out[column] = segment_eer(clips, resolution)[0]
    found = detected_time(clips, threshold)
    out.update(precision=found["precision"], recall=found["recall"])
    return out


def _samples(path: Path) -> tuple[int, int]:
    info = sf.info(str(path))
    return info.frames, info.samplerate


def localisation_rows(store: RunStore, cfg, items: dict) -> list[dict[str, Any]]:
    """The table's rows; none when the run made no partial fakes."""
    gens = {r.id: r for r in store.generations.sorted_rows() if r.ok and r.partial}
    if not gens:
        return []
    dets = [d for d in store.detections.sorted_rows() if d.ok and d.segments and d.channel == CLEAN]
    boot = bootstrap_settings(cfg)
    out = []
    for detector in sorted({d.detector for d in dets}):
        trials: list[tuple[_Trial, str]] = []  # (trial, method; "" for bona fide)
        for d in (d for d in dets if d.detector == detector):
            if d.kind == "bonafide":
                samples, rate = _samples(Path(items[d.clip].audio_path))
                trials.append((_Trial(d, samples, rate, ()), ""))
            elif d.clip in gens:
                partial = gens[d.clip].partial or {}
                samples, rate = _samples(store.dir / str(gens[d.clip].audio))
                fake = tuple((int(s["start"]), int(s["end"])) for s in partial["spans"])
                trials.append((_Trial(d, samples, rate, fake), str(partial["method"])))
        made = {m for _, m in trials if m}
        for method in [m for m in METHODS.values() if m in made] + [POOLED]:
            mine = [t for t, m in trials if not m or method in (m, POOLED)]
            out.append(_row(detector, method, mine, boot))
    return out


def _row(detector: str, method: str, trials: list[_Trial], boot) -> dict[str, Any]:
    fakes = [t for t in trials if not t.bonafide]
    row: dict[str, Any] = {
        "detector": detector,
        "method": method,
        "segments": "+".join(sorted({t.source for t in trials})),
        "n_bonafide": len(trials) - len(fakes),
        "n_partial": len(fakes),
        "mean_fake_fraction": float(np.mean([t.fraction for t in fakes])) if fakes else math.nan,
    }
    try:
        row.update(_figures(trials))
    except ValueError:
        return row
    add_intervals(row, [t.speaker for t in trials], lambda idx: _headline([trials[i] for i in idx])[0], boot, WITH_CI)
    return row

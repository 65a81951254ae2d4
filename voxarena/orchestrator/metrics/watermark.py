"""``metrics/watermark_survival.csv``: does a watermark survive? One row per watermark detector (a detector
whose GetInfo family is WATERMARK_DECODER) x generator x channel condition, over that generator's one-shot clips
against the bona fide clips under the same condition (definitions in ``voxarena.stats.watermark``):

- ``watermarked``: whether the run marks the generator's clips (``generators.NAME.watermark``);
- ``threshold`` at a 1 % false-alarm rate on the bona fide clips, their ``false_alarm`` share at it, and
  ``flagged``: the generator's clips flagged as marked at it: the **detection rate** of a watermarked
  generator, the false-alarm rate on an unmarked one's fakes; ``eer``;
- beside them, the fake-voice detectors on the same clips: ``cm_detector``, the one with the lowest EER
  there, and its ``cm_eer``.

``flagged`` and ``eer`` carry speaker-cluster bootstrap intervals.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from voxarena.orchestrator.metrics.scorer_client import add_intervals, bootstrap_settings
from voxarena.orchestrator.store.records import DetectionRecord
from voxarena.orchestrator.store.run_store import CLEAN, RunStore
from voxarena.stats.detection import eer
from voxarena.stats.watermark import FAR, survival
from voxarena.v1 import detector_pb2

WITH_CI = ("flagged", "eer")
FIGURES = ("threshold", "false_alarm", "flagged", "eer")
SURVIVAL_COLUMNS = (
    ["detector", "generator", "condition", "watermarked", "n_bonafide", "n_clips"]
    + list(FIGURES)
    + [f"{c}_ci_{side}" for c in WITH_CI for side in ("low", "high")]
    + ["cm_detector", "cm_eer"]
)


def watermark_detectors(infos: dict) -> list[str]:
    return sorted(
        name
        for name, info in infos.items()
        if isinstance(info, detector_pb2.DetectorInfo) and info.family == detector_pb2.WATERMARK_DECODER
    )


def survival_rows(store: RunStore, cfg, infos: dict) -> list[dict[str, Any]]:
    marks = watermark_detectors(infos)
    if not marks:
        return []
    boot = bootstrap_settings(cfg)
    rows = [d for d in store.detections.sorted_rows() if d.ok and d.i2d_iteration == 1]
    by: dict[tuple[str, str], list[DetectionRecord]] = {}
    for d in rows:
        by.setdefault((d.detector, d.channel), []).append(d)
    others = [n for n in cfg.detector_services() if n not in marks]
    out = []
    for detector in marks:
        for condition in (CLEAN, *cfg.conditions):
            mine = by.get((detector, condition), [])
            bona = [d for d in mine if d.kind == "bonafide"]
            if not bona:
                continue
            for generator, gen in cfg.generators.items():
                clips = [d for d in mine if d.kind == "spoof" and d.generator == generator]
                if clips:
                    row = _row(detector, generator, condition, gen.watermark is not None, bona, clips, boot)
                    row.update(_best_cm(by, others, generator, condition))
                    out.append(row)
    return out


def _row(detector, generator, condition, marked, bona, clips, boot) -> dict[str, Any]:
    both = bona + clips
    scores = np.array([d.scored for d in both])
    is_bona = np.array([d.kind == "bonafide" for d in both])
    row: dict[str, Any] = {
        "detector": detector,
        "generator": generator,
        "condition": condition,
        "watermarked": "yes" if marked else "no",
        "n_bonafide": len(bona),
        "n_clips": len(clips),
        **survival(scores[is_bona], scores[~is_bona], FAR),
    }

    def statistic(idx: np.ndarray) -> dict[str, float]:
        b, c = scores[idx][is_bona[idx]], scores[idx][~is_bona[idx]]
        return survival(b, c, FAR) if b.size else {k: math.nan for k in FIGURES}

    add_intervals(row, [d.speaker for d in both], statistic, boot, WITH_CI)
    return row


def _best_cm(by: dict, others: list[str], generator: str, condition: str) -> dict[str, Any]:
    """The fake-voice detector with the lowest EER on the generator's clips under ``condition``."""
    best: tuple[float, str] | None = None
    for name in others:
        mine = by.get((name, condition), [])
        bona = np.array([d.scored for d in mine if d.kind == "bonafide"])
        spoof = np.array([d.scored for d in mine if d.kind == "spoof" and d.generator == generator])
        if bona.size and spoof.size:
            value = eer(bona, spoof)[0]
            if best is None or value < best[0]:
                best = (value, name)
    return {"cm_detector": best[1], "cm_eer": best[0]} if best else {"cm_detector": "", "cm_eer": math.nan}

"""``metrics/attribution.csv`` and ``metrics/attribution_confusion.json``: how well each tracer (a detector
that declares ``DetectorInfo.attribution``) says which system made the run's fakes.

The truth is the arena's own record of every generated clip: at level ``generator`` the generator's name
in the run, at level ``family`` its GetInfo family (the SoK taxonomy); a corpus spoof's generator is its
attack id (no family). A truth the tracer does not declare is ``unknown`` for an open-set tracer (one that
declares that label); for a closed-set one the clip cannot be scored and is left out. Bona fide clips are
not traced.

One row per tracer x level x channel condition, over its spoof clips (definitions in
``voxarena.stats.attribution``): ``accuracy``, ``top2_accuracy``, ``macro_f1`` on the clips whose system
the tracer knows; with unseen systems (truth ``unknown``) too, ``open_auroc``, ``open_eer`` and
``known_accuracy_at_eer``. ``accuracy``, ``macro_f1`` and ``open_eer`` carry speaker-cluster bootstrap
intervals. The confusion matrices (truth x top-1, over the declared labels) go to the JSON file.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from voxarena.attribution import UNKNOWN
from voxarena.orchestrator.metrics.scorer_client import add_intervals, bootstrap_settings
from voxarena.orchestrator.store.records import DetectionRecord
from voxarena.orchestrator.store.run_store import RunStore
from voxarena.stats.attribution import closed_set, open_set
from voxarena.v1 import generator_pb2

WITH_CI = ("accuracy", "macro_f1", "open_eer")
FIGURES = ("accuracy", "top2_accuracy", "macro_f1", "open_auroc", "open_eer", "known_accuracy_at_eer")
ATTRIBUTION_COLUMNS = (
    ["detector", "level", "condition", "n_clips", "n_known", "n_unseen"]
    + list(FIGURES)
    + [f"{c}_ci_{side}" for c in WITH_CI for side in ("low", "high")]
)


def truth_of(row: DetectionRecord, level: str, families: dict[str, str]) -> str | None:
    """The system that made the clip, at ``level``; None when the run does not know it there."""
    if level == "generator":
        return row.generator
    if level == "family":
        return families.get(row.generator)
    return None


def families_of(infos: dict) -> dict[str, str]:
    """generator name -> its GetInfo family name."""
    return {
        name: generator_pb2.GeneratorFamily.Name(info.family)
        for name, info in infos.items()
        if isinstance(info, generator_pb2.GeneratorInfo)
    }


def _figures(truth: list[str], p: np.ndarray, labels: list[str]) -> dict[str, float]:
    out: dict[str, float] = {k: math.nan for k in FIGURES}
    known = [i for i, t in enumerate(truth) if t != UNKNOWN]
    if known:
        closed = closed_set([truth[i] for i in known], p[known], labels)
        out.update({k: closed[k] for k in ("accuracy", "top2_accuracy", "macro_f1")})
    if UNKNOWN in labels and known and len(known) < len(truth):
        out.update(open_set(truth, p, labels))
    return out


def attribution_tables(store: RunStore, cfg, infos: dict) -> tuple[list[dict[str, Any]], dict]:
    """(the CSV's rows, the confusion matrices); empty when no detector traces sources."""
    rows = [d for d in store.detections.sorted_rows() if d.ok and d.attribution and d.kind == "spoof"]
    families, boot = families_of(infos), bootstrap_settings(cfg)
    out: list[dict[str, Any]] = []
    confusion: dict = {}
    keys = sorted({(d.detector, level, d.channel) for d in rows for level in (d.attribution or {})})
    for detector, level, condition in keys:
        mine = [d for d in rows if (d.detector, d.channel) == (detector, condition)]
        made = _row(detector, level, condition, mine, families, boot)
        if made is None:
            continue
        row, matrix = made
        out.append(row)
        if matrix is not None:
            confusion.setdefault(detector, {}).setdefault(level, {})[condition] = matrix
    return out, confusion


def _row(
    detector: str, level: str, condition: str, mine: list[DetectionRecord], families: dict[str, str], boot
) -> tuple[dict[str, Any], dict | None] | None:
    """One row and its confusion matrix (None without known clips); None when no clip can be scored."""
    labels = list((mine[0].attribution or {})[level])
    truth, probabilities, speakers = [], [], []
    for d in mine:
        t = truth_of(d, level, families)
        t = t if t in labels else (UNKNOWN if UNKNOWN in labels and t is not None else None)
        if t is None:
            continue
        truth.append(t)
        probabilities.append([(d.attribution or {})[level][label] for label in labels])
        speakers.append(d.speaker)
    if not truth:
        return None
    p = np.array(probabilities)
    row: dict[str, Any] = {
        "detector": detector,
        "level": level,
        "condition": condition,
        "n_clips": len(truth),
        "n_known": sum(t != UNKNOWN for t in truth),
        "n_unseen": sum(t == UNKNOWN for t in truth),
        **_figures(truth, p, labels),
    }
    known = [i for i, t in enumerate(truth) if t != UNKNOWN]
    matrix = None
    if known:
        matrix = {"labels": labels, "matrix": closed_set([truth[i] for i in known], p[known], labels)["confusion"]}
    add_intervals(row, speakers, lambda idx: _figures([truth[i] for i in idx], p[idx], labels), boot, WITH_CI)
    return row, matrix

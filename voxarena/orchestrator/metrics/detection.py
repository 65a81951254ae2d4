"""The detection tables: one row per detector x generator x condition, and one per label value.

Metrics are computed once per trial set over pooled scores (never averaged per item): a generator's
one-shot spoofs against all bona fide clips, and all spoofs pooled (generator ``pooled``), under
one channel condition; with a label, over the items carrying that label.
"""

from __future__ import annotations

import json
import math

from voxarena.orchestrator.metrics.scorer_client import detection_results, one_shot, trial_set
from voxarena.orchestrator.store.records import DetectionRecord
from voxarena.orchestrator.store.run_store import CLEAN, RunStore
from voxarena.v1 import scorer_pb2

# calibration_loss = cllr - min_cllr: the bits a detector loses because its LLRs are miscalibrated.
DETECTION_HEADLINES = ["eer", "min_dcf", "act_dcf", "cllr", "min_cllr", "calibration_loss"]
DETECTION_COLUMNS = (
    ["detector", "generator", "condition", "n_bonafide", "n_spoof"]
    + DETECTION_HEADLINES
    + [f"{m}_ci_{b}" for m in DETECTION_HEADLINES for b in ("low", "high")]
    + ["scores_are_llr", "attack_seen_in_training", "n_failed", "scorer_fingerprint"]
)
POOLED = "pooled"


def _trial_sets(
    dets: list[DetectionRecord],
    detectors: list[str],
    generators: list[str],
    label: tuple[str, str] | None,
    items: dict,
    condition: str = CLEAN,
) -> tuple[list, list[dict]]:
    """Per detector: each generator's one-shot spoofs, and all of them pooled, against the bona fide
    clips, all under one channel condition (both sides of a trial set went through the same channel)."""
    sets, meta = [], []
    for d in detectors:
        mine = [r for r in dets if r.detector == d and r.channel == condition and one_shot(r)]
        if label is not None:
            # A label only spoofs carry (an ASVspoof attack id) splits the spoofs and keeps every bona fide trial.
            spoof_only = not any(label[0] in items[r.item].labels for r in mine if r.kind == "bonafide")
            mine = [
                r
                for r in mine
                if items[r.item].labels.get(label[0]) == label[1] or (spoof_only and r.kind == "bonafide")
            ]
        ok = [r for r in mine if r.ok]
        bona = [r for r in ok if r.kind == "bonafide"]
        llr = bool(ok) and all(r.is_llr for r in ok)
        for g in generators + [POOLED]:
            spoof = [r for r in ok if r.kind == "spoof" and (g == POOLED or r.generator == g)]
            failed = sum(1 for r in mine if not r.ok and (g == POOLED or r.generator in (g, "bonafide")))
            row = {
                "detector": d,
                "generator": g,
                "condition": condition,
                "n_bonafide": len(bona),
                "n_spoof": len(spoof),
                "scores_are_llr": llr,
                "n_failed": failed,
            }
            if label:
                row["label"], row["value"] = label
            meta.append(row)
            if bona and spoof:
                sets.append(trial_set(f"{d}|{g}|{condition}", bona, spoof))
    return sets, meta


def detection_rows(
    store: RunStore,
    scorer,
    cfg,
    generators: list[str],
    detectors: list[str],
    items: dict,
    label: tuple[str, str] | None = None,
    conditions: tuple[str, ...] = (CLEAN,),
) -> list[dict]:
    rows = store.detections.sorted_rows()
    sets: list[scorer_pb2.TrialSet] = []
    meta: list[dict] = []
    for condition in conditions:
        condition_sets, condition_meta = _trial_sets(rows, detectors, generators, label, items, condition)
        sets += condition_sets
        meta += condition_meta
    results = detection_results(scorer, cfg, sets)
    for m in meta:
        s = results.get(f"{m['detector']}|{m['generator']}|{m['condition']}")
        for k in DETECTION_HEADLINES:
            if k == "calibration_loss":  # not a field of the scorer's reply: derived here, its CI bootstrapped there
                m[k] = s.cllr - s.min_cllr if s is not None else math.nan
            else:
                m[k] = getattr(s, k) if s is not None else math.nan
            m[f"{k}_ci_low"] = s.ci_low.get(k, math.nan) if s is not None else math.nan
            m[f"{k}_ci_high"] = s.ci_high.get(k, math.nan) if s is not None else math.nan
    return meta


def attack_seen(infos: dict, detector: str, generator: str) -> str:
    """ "yes"/"no" when the detector declares its training generators (GetInfo metadata
    ``seen_generators``, a JSON list of model names), "" when it does not or for the pooled row."""
    declared = infos[detector].model.metadata.get("seen_generators") if detector in infos else None
    if not declared or generator == POOLED or generator not in infos:
        return ""
    return "yes" if infos[generator].model.name in json.loads(declared) else "no"

"""``metrics/attack_metrics.csv``: what each attack condition did to its target detector, per generator and
pooled (issue 16 item 3).

For a condition with an ``attack`` step against detector T (one-shot clips, bona fide unchanged):

- ``threshold_clean``, ``eer_clean``: T's EER threshold and EER on the clean condition, all generators
  pooled: the operating point T would be deployed at. A trial is accepted when its score is above it.
- ``accepted_clean``: the share of the generator's fakes T accepts as bona fide before the attack;
  ``success_rate``: the share of the attacked fakes it accepts (the attack success rate at T's clean
  EER threshold); ``eer_attacked``: T's EER with the attacked fakes against the (unchanged) bona fide.
- ``median_queries``, ``mean_snr_db`` (of the perturbation against the clip), ``mean_score_gain`` (the
  target's score of the chosen candidate minus the original's, during the search): from the attack records.

How the attacked clips transfer to the other detectors is the run's per-condition detection tables: each
attack condition is scored by every detector (``detection_metrics.csv``, the report's condition heatmap).
"""

from __future__ import annotations

import math
import statistics
from typing import Any

import numpy as np

from voxarena.stats.detection import eer

from .run_store import CLEAN, RunStore

ATTACK_COLUMNS = [
    "condition",
    "target",
    "generator",
    "n_spoof",
    "threshold_clean",
    "eer_clean",
    "accepted_clean",
    "success_rate",
    "eer_attacked",
    "median_queries",
    "mean_snr_db",
    "mean_score_gain",
]


def attack_conditions(cfg) -> dict[str, str]:
    """condition -> the detector its attack step targets (conditions without one left out)."""
    return {c: s.attack.target for c, steps in cfg.conditions.items() for s in steps if s.attack is not None}


def attack_rows(store: RunStore, cfg) -> list[dict[str, Any]]:
    targets = attack_conditions(cfg)
    if not targets:
        return []
    scores: dict[tuple[str, str, str], list[float]] = {}  # (detector, condition, generator or "bonafide")
    for r in store.detections.sorted_rows():
        if r.get("status") == "ok" and r.get("iteration", 1) == 1:
            who = "bonafide" if r["kind"] == "bonafide" else r["generator"]
            scores.setdefault((r["detector"], r["condition"], who), []).append(float(r["score"]))
    attacks: dict[str, list[dict]] = {}  # condition -> the records of its attacks that ran (spoofed clips)
    for r in store.degradations.sorted_rows():
        if r.get("status") == "ok" and r["condition"] in targets:
            ran = [s["attack"] for s in r.get("steps", []) if "queries" in s.get("attack", {})]
            attacks.setdefault(r["condition"], []).extend(ran)
    generators = sorted({g for (_, _, g) in scores if g != "bonafide"})
    out = []
    for condition, target in targets.items():
        bona_clean = np.array(scores.get((target, CLEAN, "bonafide"), []))
        spoof_clean_all = np.array([x for g in generators for x in scores.get((target, CLEAN, g), [])])
        if bona_clean.size == 0 or spoof_clean_all.size == 0:
            continue
        eer_clean, threshold = eer(bona_clean, spoof_clean_all)
        bona_attacked = np.array(scores.get((target, condition, "bonafide"), []))
        done = attacks.get(condition, [])
        for generator in [*generators, "pooled"]:
            names = generators if generator == "pooled" else [generator]
            clean = np.array([x for g in names for x in scores.get((target, CLEAN, g), [])])
            attacked = np.array([x for g in names for x in scores.get((target, condition, g), [])])
            mine = [a for a in done if generator == "pooled" or a["generator"] == generator]
            out.append(
                {
                    "condition": condition,
                    "target": target,
                    "generator": generator,
                    "n_spoof": int(attacked.size),
                    "threshold_clean": threshold,
                    "eer_clean": eer_clean,
                    "accepted_clean": _share(clean > threshold),
                    "success_rate": _share(attacked > threshold),
                    "eer_attacked": eer(bona_attacked, attacked)[0]
                    if bona_attacked.size and attacked.size
                    else math.nan,
                    "median_queries": statistics.median(a["queries"] for a in mine) if mine else math.nan,
                    "mean_snr_db": _mean([a["snr_db"] for a in mine if a["snr_db"] is not None]),
                    "mean_score_gain": _mean([a["score"] - a["original_score"] for a in mine]),
                }
            )
    return out


def _share(mask: np.ndarray) -> float:
    return float(np.mean(mask)) if mask.size else math.nan


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else math.nan

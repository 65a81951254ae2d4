"""Score fusion (ASVspoof 5 track 2 practice) and the calibration split it is fitted on.

A fused detector is a detector entry with a ``fusion`` key: its LLR is w . x + b over its members'
stored scores x, the map fitted by prior-weighted logistic regression with Platt smoothing
(``voxarena.stats.llr``, the same fit as a detector's own calibration) on the run's calibration split.

The split (``protocol.calibration_split``) is a set of manifest items that calibrate and are never
evaluated: every detection matrix of the run, members and fused alike, leaves their clips out, a
spoof following the item it was made from. It is the items whose label has one of the given values,
or a seeded share of the speakers: those whose sha256(run seed, speaker) ranks lowest, so calibration
and evaluation speakers are disjoint and the choice depends on nothing but the seed and the names.

The fit uses the clean channel's one-shot clips of the calibration items that every member scored,
and is applied to every clip of every condition. A fused row is made from the members' stored rows
after detection, in id order, and appended only when it differs from the one recorded: a rerun or a
resume of a finished run appends nothing and writes the same matrices. A clip a member failed on is
a failed fused row naming the member (``UPSTREAM_FAILED``), never a missing one.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from typing import Any

import numpy as np

from voxarena.orchestrator.run.config import CalibrationSplitConfig
from voxarena.orchestrator.run.manifest import ManifestSet
from voxarena.orchestrator.store.failures import Failure, failed_row
from voxarena.orchestrator.store.records import OK, DetectionRecord
from voxarena.orchestrator.store.run_store import CLEAN, RunStore, detection_id
from voxarena.stats.llr import LinearLLR, fit_linear_llr
from voxarena.v1 import common_pb2, detector_pb2

# What a fused row keeps of its members' rows: the clip it is about (the same for every member); the
# rest (the detector, the score and its timing, a failure) is the fused detector's own.
OWN = ("id", "detector", "condition", "status", "score", "is_llr", "wall_seconds", "failure", "code", "reason")
FITTED_ON = "clean channel, one-shot clips of the calibration split that every member scored"


class FusionError(ValueError):
    """The calibration split cannot be made from this manifest."""


SPLIT_KEY = "protocol.calibration_split"


def _by_label(manifest: ManifestSet, label: str, values: list[str]) -> frozenset[str]:
    chosen = frozenset(it.id for it in manifest if it.labels.get(label) in values)
    if not chosen:
        found = sorted({it.labels[label] for it in manifest if label in it.labels})
        raise FusionError(
            f"{SPLIT_KEY}: no item has {label} in {values} "
            f"(values of {label!r} in the manifest: {', '.join(found) or 'none'})"
        )
    return chosen


def _by_speakers(manifest: ManifestSet, fraction: float, seed: int) -> frozenset[str]:
    """The items of round(fraction x speakers) speakers (at least one on each side): those whose
    sha256("<seed>:<speaker>") sorts first."""
    speakers = sorted({it.speaker for it in manifest}, key=lambda s: hashlib.sha256(f"{seed}:{s}".encode()).hexdigest())
    if len(speakers) < 2:
        raise FusionError(f"{SPLIT_KEY}: speaker_fraction needs two or more speakers, the manifest has {len(speakers)}")
    k = min(max(int(fraction * len(speakers) + 0.5), 1), len(speakers) - 1)  # half rounds up
    calibrating = set(speakers[:k])
    return frozenset(it.id for it in manifest if it.speaker in calibrating)


def calibration_items(manifest: ManifestSet, split: CalibrationSplitConfig | None, seed: int) -> frozenset[str]:
    """The ids of the manifest items that calibrate (none without a split). Raises FusionError when the
    rule selects no item or every item (nothing would be left to evaluate)."""
    if split is None:
        return frozenset()
    if split.label is not None:
        chosen = _by_label(manifest, split.label, split.values)
    elif split.speaker_fraction is not None:
        chosen = _by_speakers(manifest, split.speaker_fraction, seed)
    else:  # the config refuses a split without a rule; a hand-made one is refused here
        raise FusionError(f"{SPLIT_KEY}: no rule (label with values, or speaker_fraction)")
    if len(chosen) == len(manifest):
        rule = split.model_dump(mode="json", exclude_defaults=True)
        raise FusionError(f"{SPLIT_KEY}: {rule} selects every item of the manifest; nothing would be evaluated")
    return chosen


def split_record(manifest: ManifestSet, calibration: frozenset[str], split: CalibrationSplitConfig) -> dict:
    """What ``run.json`` says about the split: its rule and the items and speakers on each side."""
    parts = {
        "calibration": [it for it in manifest if it.id in calibration],
        "evaluation": [it for it in manifest if it.id not in calibration],
    }
    bonafide = {it.id for it in manifest.bonafide()}
    out: dict = {"rule": split.model_dump(mode="json", exclude_defaults=True)}
    for name, items in parts.items():
        out[name] = {
            "items": len(items),
            "speakers": len({it.speaker for it in items}),
            "bonafide_items": sum(it.id in bonafide for it in items),
        }
    out["calibration_speakers"] = sorted({it.speaker for it in parts["calibration"]})
    out["shared_speakers"] = len(set(out["calibration_speakers"]) & {it.speaker for it in parts["evaluation"]})
    return out


def evaluation_store(store: RunStore, calibration: frozenset[str]) -> RunStore:
    """``store`` as the detection matrices read it: its detections table without the calibration items'
    rows, everything else shared. A view to read, never to append to."""
    if not calibration:
        return store
    view = copy.copy(store)
    view.detections = store.detections.filtered(lambda r: r.item not in calibration)
    return view


class Fusion:
    """One fused detector: its map, fitted on the calibration split, and a row for every clip its
    members scored."""

    def __init__(self, name: str, members: list[str], store: RunStore, calibration: frozenset[str]) -> None:
        self.name, self.members = name, list(members)
        # member -> (condition, clip) -> its row
        self.rows: dict[str, dict[tuple[str, str], DetectionRecord]] = {m: {} for m in self.members}
        for row in store.detections.sorted_rows():
            if row.detector in self.rows:
                self.rows[row.detector][(row.channel, row.clip)] = row
        self.keys = sorted({key for by_key in self.rows.values() for key in by_key})
        self.map: LinearLLR | None = None
        self.error = ""
        try:
            self.map = self._fit(calibration)
        except ValueError as e:
            self.error = f"{name} cannot be fitted on the calibration split: {e}"

    def _fit(self, calibration: frozenset[str]) -> LinearLLR:
        """The map fitted on the clean one-shot clips of the calibration items that every member scored."""
        train = [
            k
            for k in self.keys
            if k[0] == CLEAN
            and self._scored(k)
            and self._clip(k).item in calibration
            and self._clip(k).i2d_iteration == 1
        ]
        bona = [k for k in train if self._clip(k).kind == "bonafide"]
        spoof = [k for k in train if self._clip(k).kind == "spoof"]
        return fit_linear_llr(self._features(bona), self._features(spoof), names=self.members)

    def _clip(self, key: tuple[str, str]) -> DetectionRecord:
        """The first member's row of a clip: what every member's row says about the clip itself."""
        return next(self.rows[m][key] for m in self.members if key in self.rows[m])

    def _scored(self, key: tuple[str, str]) -> bool:
        return all(self._ok(m, key) for m in self.members)

    def _ok(self, member: str, key: tuple[str, str]) -> bool:
        row = self.rows[member].get(key)
        return row is not None and row.ok

    def _features(self, keys: list[tuple[str, str]]) -> np.ndarray:
        """Member scores of clips, one row per clip, members in config order."""
        scores = [[self.rows[m][k].score for m in self.members] for k in keys]
        return np.array(scores, float).reshape(-1, len(self.members))

    def _lost(self, key: tuple[str, str]) -> str:
        """Why a clip has no fused score: each member that failed on it or has no row for it."""
        why = [
            f"{m} failed on it ({self.rows[m][key].code or ''})" if key in self.rows[m] else f"{m} has no row for it"
            for m in self.members
            if not self._ok(m, key)
        ]
        return "member " + "; member ".join(why)

    def record(self) -> dict:
        """The fit as ``run.json`` records it; ``error`` instead of the map when it could not be fitted."""
        out = {"members": self.members, "fitted_on": FITTED_ON}
        return {**out, **self.map.record()} if self.map is not None else {**out, "error": self.error}

    def detection_rows(self) -> list[DetectionRecord]:
        """A fused row for every (condition, clip) a member has a row for, in id order."""
        llrs: dict[tuple[str, str], float] = {}
        if self.map is not None:
            scored = [k for k in self.keys if self._scored(k)]
            llrs = dict(zip(scored, (float(x) for x in self.map(self._features(scored)))))
        out = []
        for key in self.keys:
            own = {"id": detection_id(self.name, key[0], key[1]), "detector": self.name, "condition": key[0]}
            # status: the fused score's, set below
            fields: dict[str, Any] = {**dict.fromkeys(OWN), **own, "status": "pending"}
            base = dataclasses.replace(self._clip(key), **fields, extra={})
            if key in llrs:
                out.append(dataclasses.replace(base, status=OK, score=llrs[key], is_llr=True))
            else:
                out.append(failed_row(base, Failure.UPSTREAM_FAILED, f"{base.id}: {self.error or self._lost(key)}"))
        return sorted(out, key=lambda r: r.id)


def fuse(store: RunStore, fused: dict[str, list[str]], calibration: frozenset[str]) -> dict[str, dict]:
    """Fit every fused detector and store its rows (those not already recorded as they are); returns
    fused detector -> its fit, for ``run.json``."""
    record = {}
    for name, members in fused.items():
        fusion = Fusion(name, members, store, calibration)
        record[name] = fusion.record()
        for row in fusion.detection_rows():
            if store.detections.get(row.id) != row:
                store.detections.append(row)
    return record


def fused_infos(infos: dict, fused: dict[str, list[str]]) -> dict:
    """``infos`` (GetInfo by service) and one for each fused detector, the system its members make: their
    parameters summed (when every member counts them), the generators they saw in training together
    (when every member declares them), calibrated LLRs."""
    out = dict(infos)
    for name, members in fused.items():
        models = [infos[m].model for m in members]
        model = common_pb2.ModelInfo(
            name=name,
            version="fusion",
            deterministic=all(m.deterministic for m in models),
            metadata={"fusion_members": json.dumps(members)},
        )
        if all(m.HasField("parameter_count") for m in models):
            model.parameter_count = sum(m.parameter_count for m in models)
        if all(m.metadata.get("seen_generators") for m in models):
            seen = sorted({g for m in models for g in json.loads(m.metadata["seen_generators"])})
            model.metadata["seen_generators"] = json.dumps(seen)
        out[name] = detector_pb2.DetectorInfo(model=model, calibrated=True)
    return out


def fusion_table(record: dict) -> list[dict]:
    """One row per fused detector and member (weight), and per detector its bias, for the report."""
    rows = []
    for name, fit in (record.get("fusion") or {}).items():
        if "error" in fit:
            rows.append({"detector": name, "term": "error", "value": fit["error"]})
            continue
        rows += [
            {"detector": name, "term": f"weight {m}", "value": f"{w:.6g}"}
            for m, w in zip(fit["members"], fit["weights"])
        ]
        rows.append({"detector": name, "term": "bias", "value": f"{fit['bias']:.6g}"})
        rows.append(
            {
                "detector": name,
                "term": "fitted on",
                "value": f"{fit['n_bonafide']} bona fide + "
                f"{fit['n_spoof']} spoof trials ({fit['fitted_on']}); {fit['method']}",
            }
        )
    return rows


def recorded_calibration_items(record: dict, manifest: ManifestSet) -> frozenset[str]:
    """The calibration split of a run directory, from its run.json's resolved config and frozen manifest."""
    protocol = record["config"]["protocol"]
    split = protocol.get("calibration_split")
    return calibration_items(
        manifest, CalibrationSplitConfig.model_validate(split) if split else None, protocol["seed"]
    )

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
- The perceptual cost, measured by the run's scorer with those of pesq, sim and wer the run measures
  (``scorer.metrics``; the metrics' own definitions): ``pesq`` of
  the attacked clip against the original (time-aligned: an attack keeps every sample's place), ``sim``
  between them (the speaker embedding's cosine), and ``wer`` of each against the clip's text, aggregated as
  the scorer's WER is (errors summed over reference words summed); ``wer_change`` = attacked - original.
  A metric the run does not measure leaves its columns empty.

``metrics/attack_transfer.csv`` is the transfer matrix: every detector scores every attack condition's clips,
so for each attack (target T) and each detector D, pooled over generators: D's own clean EER threshold,
the share of fakes D accepts there before (``accepted_clean``) and after the attack on T
(``accepted_attacked``), and D's EER clean and under the attack. The diagonal (D = T) is the attack's
success; the rest is how far it transfers.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

import numpy as np

from voxarena.codec import encode_audio
from voxarena.orchestrator.store.clips import read_clip
from voxarena.orchestrator.store.records import DegradationRecord
from voxarena.orchestrator.store.run_store import CLEAN, RunStore
from voxarena.stats.detection import eer
from voxarena.v1 import scorer_pb2

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
    "pesq_vs_original",
    "sim_vs_original",
    "wer_original",
    "wer_attacked",
    "wer_change",
]
COST_METRICS = ("pesq", "sim", "wer")
TRANSFER_COLUMNS = [
    "condition",
    "target",
    "detector",
    "n_spoof",
    "threshold_clean",
    "eer_clean",
    "accepted_clean",
    "accepted_attacked",
    "eer_attacked",
]


def attack_conditions(cfg) -> dict[str, str]:
    """condition -> the detector its attack step targets (conditions without one left out)."""
    return {c: s.attack.target for c, steps in cfg.conditions.items() for s in steps if s.attack is not None}


def _scores(store: RunStore) -> dict[tuple[str, str, str], list[float]]:
    """(detector, condition, generator or "bonafide") -> the one-shot scores."""
    scores: dict[tuple[str, str, str], list[float]] = {}
    for r in store.detections.sorted_rows():
        if r.ok and r.i2d_iteration == 1:
            who = "bonafide" if r.kind == "bonafide" else r.generator
            scores.setdefault((r.detector, r.channel, who), []).append(r.scored)
    return scores


def _pooled(scores: dict[tuple[str, str, str], list[float]], detector: str, condition: str, names) -> np.ndarray:
    """The one-shot scores of ``detector`` on the clips of ``names`` (generators, or "bonafide") under ``condition``."""
    return np.array([x for g in names for x in scores.get((detector, condition, g), [])])


def _clean_threshold(scores, detector: str, generators: list[str]) -> tuple[float, float] | None:
    """(EER, threshold) of ``detector`` on the clean clips, every generator pooled; None without both classes."""
    bona_clean, spoof_clean = (
        _pooled(scores, detector, CLEAN, ["bonafide"]),
        _pooled(scores, detector, CLEAN, generators),
    )
    if bona_clean.size == 0 or spoof_clean.size == 0:
        return None
    return eer(bona_clean, spoof_clean)


def _attack_row(head: dict[str, Any], scores, d: str, condition: str, names, clean_eer, accepted: str) -> dict:
    """``head`` then what detector ``d``'s clean threshold lets through of ``names``' spoofs, clean and under
    ``condition`` (``accepted``: the column of the attacked share), and its EER under ``condition``."""
    eer_clean, threshold = clean_eer
    clean, attacked = _pooled(scores, d, CLEAN, names), _pooled(scores, d, condition, names)
    bona_attacked = _pooled(scores, d, condition, ["bonafide"])
    return {
        **head,
        "n_spoof": int(attacked.size),
        "threshold_clean": threshold,
        "eer_clean": eer_clean,
        "accepted_clean": _share(clean > threshold),
        accepted: _share(attacked > threshold),
        "eer_attacked": eer(bona_attacked, attacked)[0] if bona_attacked.size and attacked.size else math.nan,
    }


def transfer_rows(store: RunStore, cfg, detectors: list[str]) -> list[dict[str, Any]]:
    """Every attack condition x every detector, pooled over generators (the transfer matrix)."""
    targets = attack_conditions(cfg)
    if not targets:
        return []
    scores = _scores(store)
    generators = sorted({g for (_, _, g) in scores if g != "bonafide"})
    out = []
    for condition, target in targets.items():
        for d in detectors:
            clean_eer = _clean_threshold(scores, d, generators)
            if clean_eer is not None:
                head = {"condition": condition, "target": target, "detector": d}
                out.append(_attack_row(head, scores, d, condition, generators, clean_eer, "accepted_attacked"))
    return out


def attack_rows(store: RunStore, cfg, scorer=None) -> list[dict[str, Any]]:
    """The table's rows; ``scorer`` (a ``MetricsScorer``) measures the perceptual cost."""
    targets = attack_conditions(cfg)
    if not targets:
        return []
    scores = _scores(store)
    attacks: dict[str, list[dict]] = {}  # condition -> the records of its attacks that ran (spoofed clips)
    attacked_rows = []
    for r in store.degradations.sorted_rows():
        if r.ok and r.condition in targets:
            ran = [{**s["attack"], "id": r.id} for s in r.steps or [] if "queries" in s.get("attack", {})]
            attacks.setdefault(r.condition, []).extend(ran)
            attacked_rows += [r] if ran else []
    costs = perceptual_costs(store, cfg, scorer, attacked_rows) if scorer is not None else {}
    generators = sorted({g for (_, _, g) in scores if g != "bonafide"})
    out = []
    for condition, target in targets.items():
        clean_eer = _clean_threshold(scores, target, generators)
        if clean_eer is None:
            continue
        done = attacks.get(condition, [])
        for generator in [*generators, "pooled"]:
            names = generators if generator == "pooled" else [generator]
            mine = [a for a in done if generator == "pooled" or a["generator"] == generator]
            head = {"condition": condition, "target": target, "generator": generator}
            out.append(
                {
                    **_attack_row(head, scores, target, condition, names, clean_eer, "success_rate"),
                    "median_queries": statistics.median(a["queries"] for a in mine) if mine else math.nan,
                    "mean_snr_db": _mean([a["snr_db"] for a in mine if a["snr_db"] is not None]),
                    "mean_score_gain": _mean([a["score"] - a["original_score"] for a in mine]),
                    **_cost_columns([costs[a["id"]] for a in mine if a["id"] in costs]),
                }
            )
    return out


def perceptual_costs(store: RunStore, cfg, scorer, attacked: list[DegradationRecord]) -> dict[str, dict[str, float]]:
    """Degradation id -> the scorer's raw values for the attacked clip against its original (``pesq.value``,
    ``sim.cosine``, ``wer.errors``, ``wer.ref``) and the original's own (``original.wer.errors``, ...)."""
    metrics = [m for m in COST_METRICS if m in cfg.scorer.metrics]
    if not metrics or not attacked:
        return {}
    requests = []
    for r in attacked:
        g = store.generations.get(r.clip)
        if g is None:  # an attacked clip is a generated one: its row is there
            raise KeyError(f"{r.id}: no generation row {r.clip!r}")
        original = encode_audio(read_clip(store.dir / str(g.audio), str(g.audio_sha256), g.id))
        clip = encode_audio(read_clip(store.dir / str(r.audio), str(r.audio_sha256), r.id))
        text = g.text or ""
        requests.append(
            scorer_pb2.ClipRequest(
                request_id=r.id,
                metrics=metrics,
                text=text,
                audio=clip,
                speaker_reference=original,
                source_reference=original,
                reference_aligned=True,
            )
        )
        if "wer" in metrics:
            requests.append(
                scorer_pb2.ClipRequest(request_id=f"original|{r.id}", metrics=["wer"], text=text, audio=original)
            )
    values: dict[str, dict[str, float]] = {}
    size = cfg.scorer.batch_size
    for start in range(0, len(requests), size):
        resp, _ = scorer.call("MeasureClips", scorer_pb2.MeasureClipsRequest(items=requests[start : start + size]))
        for m in resp.items:
            key = m.request_id.removeprefix("original|")
            prefix = "original." if m.request_id.startswith("original|") else ""
            values.setdefault(key, {}).update({prefix + k: v for k, v in m.values.items()})
    return values


def _cost_columns(costs: list[dict[str, float]]) -> dict[str, float]:
    def ratio(errors: str, ref: str) -> float:
        pairs = [(c[errors], c[ref]) for c in costs if errors in c and ref in c]
        total = sum(r for _, r in pairs)
        return sum(e for e, _ in pairs) / total if total else math.nan

    attacked, original = ratio("wer.errors", "wer.ref"), ratio("original.wer.errors", "original.wer.ref")
    return {
        "pesq_vs_original": _mean([c["pesq.value"] for c in costs if "pesq.value" in c]),
        "sim_vs_original": _mean([c["sim.cosine"] for c in costs if "sim.cosine" in c]),
        "wer_original": original,
        "wer_attacked": attacked,
        "wer_change": attacked - original,
    }


def _share(mask: np.ndarray) -> float:
    return float(np.mean(mask)) if mask.size else math.nan


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else math.nan

"""``metrics/watermark_cost.csv``: what a generator's watermark costs in quality, measured by the run's scorer on
every marked clip against the unmarked one the run keeps (``generators.NAME.watermark``, ``run.watermark``).

Per watermarked generator, over its whole clips (a partial fake's marked words are spliced into bona fide
speech: not compared): PESQ and STOI of the marked clip with the unmarked one as the aligned reference, SIM
(speaker similarity) between them, and DNSMOS of both (``unmarked_`` columns), each a corpus-level value with a
speaker-cluster bootstrap interval (the scorer's Aggregate). Only the metrics the scorer offers are asked; the
clips are measured when the metrics are computed (not stored as measurement rows: they are not the run's
generations), in requests of the run's ``scorer.batch_size``.
"""

from __future__ import annotations

import math
from typing import Any

from voxarena.codec import encode_audio
from voxarena.orchestrator.metrics.scorer_client import bootstrap_settings
from voxarena.orchestrator.store.clips import read_clip
from voxarena.orchestrator.store.records import GenerationRecord
from voxarena.orchestrator.store.run_store import RunStore
from voxarena.v1 import scorer_pb2

COST_METRICS = ("pesq", "stoi", "sim", "dnsmos")


def _requests(store: RunStore, g: GenerationRecord, metrics: list[str]) -> list[scorer_pb2.ClipRequest]:
    w = g.watermark or {}
    marked = read_clip(store.dir / str(g.audio), str(g.audio_sha256), g.id)
    unmarked = read_clip(store.dir / str(w["unmarked_audio"]), str(w["unmarked_sha256"]), g.id)
    reference = encode_audio(unmarked)
    out = [
        scorer_pb2.ClipRequest(
            request_id=g.id,
            metrics=metrics,
            audio=encode_audio(marked),
            speaker_reference=reference,
            source_reference=reference,
            reference_aligned=True,
        )
    ]
    if "dnsmos" in metrics:
        out.append(scorer_pb2.ClipRequest(request_id=f"{g.id}|unmarked", metrics=["dnsmos"], audio=reference))
    return out


def cost_rows(
    store: RunStore, cfg, infos: dict, scorer, columns: dict[str, list[str]], items: dict
) -> list[dict[str, Any]]:
    offered = {m.name for m in infos["scorer"].metrics}
    metrics = [m for m in COST_METRICS if m in offered]
    marked = [
        g
        for g in store.generations.sorted_rows()
        if g.ok and g.watermark and g.i2d_iteration == 1 and g.partial is None and g.generator in cfg.generators
    ]
    if not marked or not metrics:
        return []
    speaker = {g.id: items[g.item].speaker for g in marked}  # the bootstrap's clusters
    limit = min(cfg.scorer.batch_size, infos["scorer"].limits.max_clips_per_request or 256)
    requests = [r for g in marked for r in _requests(store, g, metrics)]
    measured: dict[str, scorer_pb2.ClipMeasurement] = {}
    for start in range(0, len(requests), limit):
        resp, _ = scorer.call("MeasureClips", scorer_pb2.MeasureClipsRequest(items=requests[start : start + limit]))
        measured.update({m.request_id: m for m in resp.items})
    groups = []
    for generator in cfg.generators:
        mine = [g for g in marked if g.generator == generator]
        for suffix in ("", "|unmarked"):
            clips = [
                scorer_pb2.ClipMeasurement(
                    request_id=g.id + suffix,
                    values=measured[g.id + suffix].values,
                    errors=measured[g.id + suffix].errors,
                    cluster=speaker[g.id],
                )
                for g in mine
                if g.id + suffix in measured
            ]
            if clips:
                groups.append(scorer_pb2.MeasurementGroup(name=generator + suffix, clips=clips))
    resp, _ = scorer.call(
        "Aggregate", scorer_pb2.AggregateRequest(metrics=metrics, groups=groups, bootstrap=bootstrap_settings(cfg))
    )
    by_name = {gm.name: gm for gm in resp.groups}
    rows = []
    for generator, gen in cfg.generators.items():
        if generator not in by_name:
            continue
        row: dict[str, Any] = {"generator": generator, "watermark": gen.watermark, "n_clips": 0}
        for prefix, name, wanted in (("", generator, metrics), ("unmarked_", generator + "|unmarked", ["dnsmos"])):
            gm = by_name.get(name)
            for metric in (m for m in wanted if m in metrics):
                for col in columns.get(metric, [metric]):
                    row[prefix + col] = gm.values.get(col, math.nan) if gm else math.nan
                    row[f"{prefix}{col}_ci_low"] = gm.ci_low.get(col, math.nan) if gm else math.nan
                    row[f"{prefix}{col}_ci_high"] = gm.ci_high.get(col, math.nan) if gm else math.nan
        row["n_clips"] = sum(g.generator == generator for g in marked)
        rows.append(row)
    return rows


def cost_columns(rows: list[dict[str, Any]]) -> list[str]:
    """The CSV's columns: the fixed ones, then the measured ones in the order the rows hold them."""
    fixed = ["generator", "watermark", "n_clips"]
    return fixed + [c for c in dict.fromkeys(k for r in rows for k in r) if c not in fixed]

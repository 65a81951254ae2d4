"""The generator tables: one row per generator (and per label value) of its clips' metrics with
bootstrap CIs, and the composite scores (F_TTS, F_reconstruction, detectors' S_i) with ranks."""

from __future__ import annotations

import math

from voxarena.stats.composite import RECONSTRUCTION_WEIGHTS, TTS_WEIGHTS
from voxarena.v1 import generator_pb2, scorer_pb2

from .metrics_scorer import bootstrap_settings, check_scorer, measurement_group, one_shot
from .run_store import CLEAN, RunStore, condition_of


def generator_rows(
    store: RunStore,
    scorer,
    cfg,
    infos: dict,
    columns: dict[str, list[str]],
    items: dict | None = None,
    label: tuple[str, str] | None = None,
) -> list[dict]:
    """One row per generator; with ``label`` (name, value), over the clips of items carrying that label only."""
    gens = [r for r in store.generations.sorted_rows() if one_shot(r)]
    if label is not None:
        if items is None:
            raise ValueError("generator_rows: a label breakdown needs the manifest items")
        gens = [r for r in gens if items[r["item"]].labels.get(label[0]) == label[1]]
    meas = {r["id"]: r for r in store.measurements.sorted_rows() if r["status"] == "ok"}
    groups = [measurement_group(g, [r for r in gens if r["generator"] == g], meas) for g in cfg.generators]
    resp, _ = scorer.call(
        "Aggregate",
        scorer_pb2.AggregateRequest(metrics=list(columns), groups=groups, bootstrap=bootstrap_settings(cfg)),
    )
    by_name = {gm.name: gm for gm in resp.groups}
    rows = []
    for g in cfg.generators:
        mine = [r for r in gens if r["generator"] == g]
        model = infos[g].model
        row = {
            "generator": g,
            "n_ok": sum(r["status"] == "ok" for r in mine),
            "n_failed": sum(r["status"] != "ok" for r in mine),
            "params_m": model.parameter_count / 1e6 if model.HasField("parameter_count") else math.nan,
            "family": generator_pb2.GeneratorFamily.Name(infos[g].family),
            "tasks": "+".join(sorted({r["task"] for r in mine})),
        }
        if label is not None:
            row["label"], row["value"] = label
        gm = by_name[g]
        for metric, cols in columns.items():
            for col in cols:
                row[col] = gm.values.get(col, math.nan)
                row[f"{col}_ci_low"] = gm.ci_low.get(col, math.nan)
                row[f"{col}_ci_high"] = gm.ci_high.get(col, math.nan)
            row[f"n_{metric}"] = gm.counts.get(metric, 0)
        rows.append(row)
    return rows


def composite_table(gen_rows: list[dict], kind: str) -> dict[str, dict]:
    """The generator_metrics rows a generator composite compares: F_TTS over generators that speak text or
    convert, F_reconstruction over pure vocoders (``tasks`` == RECONSTRUCT)."""
    if kind == "reconstruction":
        return {r["generator"]: r for r in gen_rows if r["tasks"] == "RECONSTRUCT"}
    return {r["generator"]: r for r in gen_rows if r["tasks"] and r["tasks"] != "RECONSTRUCT"}


def composite_rows(scorer, gen_rows: list[dict], det_rows: list[dict], infos: dict) -> list[dict]:
    """F_TTS over generators that speak text or convert, F_reconstruction over pure vocoders, S_i over
    detectors, with ranks, computed by the scorer; a composite that cannot be computed is a row with a note."""
    request = scorer_pb2.CompositeRequest()
    for kind, weights in (("tts", TTS_WEIGHTS), ("reconstruction", RECONSTRUCTION_WEIGHTS)):
        table = composite_table(gen_rows, kind)
        if len(table) >= 2:
            request.generators.add(
                name=kind,
                weights=[scorer_pb2.MetricWeight(metric=m, weight=w) for m, w in weights.items()],
                systems=[
                    scorer_pb2.SystemMetrics(system=g, values={m: r[m] for m in weights if m in r})
                    for g, r in table.items()
                ],
            )
    # The detector composite ranks on the clean channel, as the SoK paper's S_i does.
    pairs = [r for r in det_rows if r["generator"] in infos and condition_of(r) == CLEAN and not math.isnan(r["eer"])]
    params = {
        d: infos[d].model.parameter_count / 1e6
        for d in {r["detector"] for r in pairs}
        if infos[d].model.HasField("parameter_count") and infos[d].model.parameter_count > 0
    }
    if pairs and len(params) == len({r["detector"] for r in pairs}):
        request.detectors.add(
            name="detector",
            params_m=params,
            pairs=[
                scorer_pb2.DetectorPair(**{k: r[k] for k in ("detector", "generator", "eer", "cllr", "min_dcf")})
                for r in pairs
            ],
        )
    resp, _ = scorer.call("Composite", request)
    check_scorer(resp, infos, "composite scores")
    out = []
    for result in resp.results:
        if result.error:
            out.append({"kind": result.name, "system": "", "score": math.nan, "rank": "", "note": result.error})
        out.extend({"kind": result.name, "system": s.system, "score": s.score, "rank": s.rank} for s in result.scores)
    return out

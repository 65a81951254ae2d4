"""The generator tables: one row per generator (and per label value) of its clips' metrics, with
bootstrap CIs."""

from __future__ import annotations

import math

from voxarena.orchestrator.metrics.scorer_client import bootstrap_settings, measurement_group, one_shot
from voxarena.orchestrator.store.run_store import RunStore
from voxarena.v1 import generator_pb2, scorer_pb2


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
        gens = [r for r in gens if items[r.item].labels.get(label[0]) == label[1]]
    meas = {r.id: r for r in store.measurements.sorted_rows() if r.ok}
    groups = [measurement_group(g, [r for r in gens if r.generator == g], meas) for g in cfg.generators]
    resp, _ = scorer.call(
        "Aggregate",
        scorer_pb2.AggregateRequest(metrics=list(columns), groups=groups, bootstrap=bootstrap_settings(cfg)),
    )
    by_name = {gm.name: gm for gm in resp.groups}
    rows = []
    for g in cfg.generators:
        mine = [r for r in gens if r.generator == g]
        model = infos[g].model
        row = {
            "generator": g,
            "n_ok": sum(r.ok for r in mine),
            "n_failed": sum(not r.ok for r in mine),
            "params_m": model.parameter_count / 1e6 if model.HasField("parameter_count") else math.nan,
            "family": generator_pb2.GeneratorFamily.Name(infos[g].family),
            "tasks": "+".join(sorted({r.task for r in mine})),
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

"""The I2D tables: per-iteration trajectories of every generator metric and detector EER
(``i2d_iterations.csv``), and their Mean / LWA / EWA / AUC aggregates (``i2d_aggregates.csv``)."""

from __future__ import annotations

import math

from voxarena.orchestrator.metrics.scorer_client import (
    bootstrap_settings,
    check_scorer,
    detection_results,
    measurement_group,
    trial_set,
)
from voxarena.orchestrator.run.config import I2D_TASKS
from voxarena.orchestrator.store.records import GenerationRecord
from voxarena.orchestrator.store.run_store import CLEAN, RunStore
from voxarena.stats.i2d import AGGREGATES
from voxarena.v1 import scorer_pb2

I2D_ITERATION_COLUMNS = [
    "generator",
    "task",
    "iteration",
    "metric",
    "higher_is_better",
    "value",
    "ci_low",
    "ci_high",
    "n",
    "scorer_fingerprint",
]
I2D_AGGREGATE_COLUMNS = ["generator", "task", "metric", "iterations", *AGGREGATES, "scorer_fingerprint"]


Chain = tuple[str, str]  # (generator, task): one I2D trajectory's clips


def i2d_rows(
    store: RunStore, scorer, cfg, infos: dict, columns: dict[str, list[str]], detectors: list[str]
) -> tuple[list[dict], list[dict]]:
    """Per-iteration trajectories of every generator metric and every detector's EER against the
    clips of each I2D iteration (clean channel), and their Mean / LWA / EWA / AUC aggregates."""
    gens = [r for r in store.generations.sorted_rows() if r.task in I2D_TASKS]
    chains = sorted({(r.generator, r.task) for r in gens}, key=lambda gt: (list(cfg.generators).index(gt[0]), gt[1]))
    if not chains:
        return [], []
    rows = _metric_rows(store, scorer, cfg, infos, columns, gens, chains)
    rows += _eer_rows(store, scorer, cfg, detectors, chains)
    return rows, _aggregates(scorer, cfg, infos, rows, chains)


def _metric_rows(
    store: RunStore,
    scorer,
    cfg,
    infos: dict,
    columns: dict[str, list[str]],
    gens: list[GenerationRecord],
    chains: list[Chain],
) -> list[dict]:
    """Every generator metric of each chain's clips, per iteration, with bootstrap CIs."""
    depth = cfg.protocol.i2d.iterations
    meas = {r.id: r for r in store.measurements.sorted_rows() if r.ok}
    groups = [
        measurement_group(
            f"{g}|{task}|{k}", [r for r in gens if r.generator == g and r.task == task and r.i2d_iteration == k], meas
        )
        for g, task in chains
        for k in range(1, depth + 1)
    ]
    resp, _ = scorer.call(
        "Aggregate",
        scorer_pb2.AggregateRequest(metrics=list(columns), groups=groups, bootstrap=bootstrap_settings(cfg)),
    )
    agg = {gm.name: gm for gm in resp.groups}
    direction = {m.name: m.higher_is_better for m in infos["scorer"].metrics}
    rows = []
    for g, task in chains:
        for k in range(1, depth + 1):
            gm = agg[f"{g}|{task}|{k}"]
            for metric, cols in columns.items():
                for col in cols:
                    rows.append(
                        {
                            "generator": g,
                            "task": task,
                            "iteration": k,
                            "metric": col,
                            "higher_is_better": direction.get(metric, True),
                            "value": gm.values.get(col, math.nan),
                            "ci_low": gm.ci_low.get(col, math.nan),
                            "ci_high": gm.ci_high.get(col, math.nan),
                            "n": gm.counts.get(metric, 0),
                        }
                    )
    return rows


def _eer_rows(store: RunStore, scorer, cfg, detectors: list[str], chains: list[Chain]) -> list[dict]:
    """Detector EER per iteration: that iteration's spoofs against every bona fide clip, clean channel."""
    depth = cfg.protocol.i2d.iterations
    dets = [r for r in store.detections.sorted_rows() if r.ok and r.channel == CLEAN]
    sets = []
    for d in detectors:
        bona = [r for r in dets if r.detector == d and r.kind == "bonafide"]
        for g, task in chains:
            for k in range(1, depth + 1):
                spoof = [
                    r
                    for r in dets
                    if r.detector == d
                    and r.kind == "spoof"
                    and r.generator == g
                    and r.task == task
                    and r.i2d_iteration == k
                ]
                if bona and spoof:
                    sets.append(trial_set(f"{d}|{g}|{task}|{k}", bona, spoof))
    results = detection_results(scorer, cfg, sets)
    rows = []
    for d in detectors:
        for g, task in chains:
            for k in range(1, depth + 1):
                s = results.get(f"{d}|{g}|{task}|{k}")
                # From the generator's side a higher EER is better: its clips are harder to detect.
                rows.append(
                    {
                        "generator": g,
                        "task": task,
                        "iteration": k,
                        "metric": f"eer:{d}",
                        "higher_is_better": True,
                        "value": s.eer if s else math.nan,
                        "ci_low": s.ci_low.get("eer", math.nan) if s else math.nan,
                        "ci_high": s.ci_high.get("eer", math.nan) if s else math.nan,
                        "n": s.n_spoof if s else 0,
                    }
                )
    return rows


def _aggregates(scorer, cfg, infos: dict, rows: list[dict], chains: list[Chain]) -> list[dict]:
    """Each trajectory's Mean / LWA / EWA / AUC, from the scorer; a lower-is-better metric x enters as 1 - x."""
    trajectories = {
        (g, task, metric): sorted(
            (r for r in rows if r["generator"] == g and r["task"] == task and r["metric"] == metric),
            key=lambda r: r["iteration"],
        )
        for g, task in chains
        for metric in dict.fromkeys(r["metric"] for r in rows)
    }
    resp, _ = scorer.call(
        "I2DAggregates",
        scorer_pb2.I2DAggregatesRequest(
            ewa_decay=cfg.protocol.i2d.ewa_decay,
            trajectories=[
                scorer_pb2.Trajectory(
                    name="|".join(key), values=[r["value"] for r in traj], higher_is_better=traj[0]["higher_is_better"]
                )
                for key, traj in trajectories.items()
            ],
        ),
    )
    check_scorer(resp, infos, "I2D aggregates")
    by_name = {a.name: a for a in resp.trajectories}
    aggregates = []
    for (g, task, metric), traj in trajectories.items():
        a = by_name["|".join((g, task, metric))]
        name = metric if traj[0]["higher_is_better"] else f"1-{metric}"
        aggregates.append(
            {
                "generator": g,
                "task": task,
                "metric": name,
                "iterations": a.iterations,
                **{k: getattr(a, k) for k in AGGREGATES},
            }
        )
    return aggregates

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
from voxarena.orchestrator.store.run_store import CLEAN, RunStore, condition_of, iteration_of
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


def i2d_rows(
    store: RunStore, scorer, cfg, infos: dict, columns: dict[str, list[str]], detectors: list[str]
) -> tuple[list[dict], list[dict]]:
    """Per-iteration trajectories of every generator metric and every detector's EER against the
    clips of each I2D iteration (clean channel), and their Mean / LWA / EWA / AUC aggregates."""
    depth = cfg.protocol.i2d.iterations
    gens = [r for r in store.generations.sorted_rows() if r["task"] in I2D_TASKS]
    chains = sorted(
        {(r["generator"], r["task"]) for r in gens}, key=lambda gt: (list(cfg.generators).index(gt[0]), gt[1])
    )
    if not chains:
        return [], []
    meas = {r["id"]: r for r in store.measurements.sorted_rows() if r["status"] == "ok"}
    groups = [
        measurement_group(
            f"{g}|{task}|{k}",
            [r for r in gens if r["generator"] == g and r["task"] == task and iteration_of(r) == k],
            meas,
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
    # Detector EER per iteration: that iteration's spoofs against every bona fide clip, clean channel.
    dets = [r for r in store.detections.sorted_rows() if r["status"] == "ok" and condition_of(r) == CLEAN]
    sets = []
    for d in detectors:
        bona = [r for r in dets if r["detector"] == d and r["kind"] == "bonafide"]
        for g, task in chains:
            for k in range(1, depth + 1):
                spoof = [
                    r
                    for r in dets
                    if r["detector"] == d
                    and r["kind"] == "spoof"
                    and r["generator"] == g
                    and r["task"] == task
                    and iteration_of(r) == k
                ]
                if bona and spoof:
                    sets.append(trial_set(f"{d}|{g}|{task}|{k}", bona, spoof))
    results = detection_results(scorer, cfg, sets)
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
    # Each trajectory's Mean / LWA / EWA / AUC, from the scorer; a lower-is-better metric x enters as 1 - x.
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
    return rows, aggregates

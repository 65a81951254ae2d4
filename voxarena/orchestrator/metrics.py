"""Turns the stored records into ``metrics/*.csv`` through the scorer service.

Detection metrics are computed once per trial set over pooled scores (never averaged per item):
one row per detector x generator (that generator's spoofs against all bona fide clips) and one row
per detector with generator ``pooled`` (all spoofs); ``detection_by_label.csv`` repeats the pooled
and per-generator rows for every value of every manifest label (sex, subset, ...). Every headline
number has a speaker-cluster bootstrap confidence interval, and every row carries the scorer
fingerprint (``metrics/fingerprint.json`` holds it in full). Rows are sorted and floats printed
with fixed precision, so the same records always give the same bytes.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math

from google.protobuf import json_format

from voxarena.stats.composite import RECONSTRUCTION_WEIGHTS, TTS_WEIGHTS
from voxarena.stats.i2d import AGGREGATES
from voxarena.v1 import generator_pb2, scorer_pb2

from .config import I2D_TASKS
from .fleet import RunError
from .manifest import ManifestSet
from .run_store import CLEAN, RunStore, condition_of, iteration_of

# calibration_loss = cllr - min_cllr: the bits a detector loses because its LLRs are miscalibrated.
DETECTION_HEADLINES = ["eer", "min_dcf", "act_dcf", "cllr", "min_cllr", "calibration_loss"]
DETECTION_COLUMNS = (
    ["detector", "generator", "condition", "n_bonafide", "n_spoof"]
    + DETECTION_HEADLINES
    + [f"{m}_ci_{b}" for m in DETECTION_HEADLINES for b in ("low", "high")]
    + ["scores_are_llr", "attack_seen_in_training", "n_failed", "scorer_fingerprint"]
)
POOLED = "pooled"


def _one_shot(row: dict) -> bool:
    """The headline tables hold one-shot clips; I2D iterations beyond the first have tables of their own."""
    return iteration_of(row) == 1


def _fmt(v) -> str:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else repr(round(v, 10))
    return str(v)


def _write_csv(path, columns: list[str], rows: list[dict]) -> None:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([_fmt(r.get(c, "")) for c in columns])
    tmp = path.with_suffix(".tmp")
    tmp.write_text(buf.getvalue())
    tmp.replace(path)


def _bootstrap(cfg) -> scorer_pb2.Bootstrap:
    return scorer_pb2.Bootstrap(
        resamples=cfg.scorer.bootstrap_resamples, seed=cfg.protocol.seed, confidence=cfg.scorer.confidence
    )


def _trial_set(name: str, bona: list[dict], spoof: list[dict]) -> scorer_pb2.TrialSet:
    """Scores and speakers (the bootstrap's clusters) of detection rows, as the scorer takes them."""
    return scorer_pb2.TrialSet(
        name=name,
        bonafide_scores=[r["score"] for r in bona],
        spoof_scores=[r["score"] for r in spoof],
        bonafide_clusters=[r["speaker"] for r in bona],
        spoof_clusters=[r["speaker"] for r in spoof],
    )


def _detection_results(scorer, cfg, sets: list) -> dict:
    """Trial set name -> the scorer's metrics with bootstrap CIs (one call for all sets)."""
    if not sets:
        return {}
    resp, _ = scorer.call("DetectionMetrics", scorer_pb2.DetectionMetricsRequest(sets=sets, bootstrap=_bootstrap(cfg)))
    return {s.name: s for s in resp.sets}


def _measurement_group(name: str, gens: list[dict], meas: dict[str, dict]) -> scorer_pb2.MeasurementGroup:
    """The stored measurements of the generations ``gens`` (those that have one) as one scorer group."""
    return scorer_pb2.MeasurementGroup(
        name=name,
        clips=[
            scorer_pb2.ClipMeasurement(
                request_id=r["id"],
                values=meas[r["id"]]["values"],
                errors=meas[r["id"]]["errors"],
                cluster=meas[r["id"]]["speaker"],
            )
            for r in gens
            if r["id"] in meas
        ],
    )


def _trial_sets(
    dets: list[dict],
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
        mine = [r for r in dets if r["detector"] == d and condition_of(r) == condition and _one_shot(r)]
        if label is not None:
            # A label only spoofs carry (an ASVspoof attack id) splits the spoofs and keeps every bona fide trial.
            spoof_only = not any(label[0] in items[r["item"]].labels for r in mine if r["kind"] == "bonafide")
            mine = [
                r
                for r in mine
                if items[r["item"]].labels.get(label[0]) == label[1] or (spoof_only and r["kind"] == "bonafide")
            ]
        ok = [r for r in mine if r["status"] == "ok"]
        bona = [r for r in ok if r["kind"] == "bonafide"]
        llr = bool(ok) and all(r.get("is_llr") for r in ok)
        for g in generators + [POOLED]:
            spoof = [r for r in ok if r["kind"] == "spoof" and (g == POOLED or r["generator"] == g)]
            failed = sum(1 for r in mine if r["status"] != "ok" and (g == POOLED or r["generator"] in (g, "bonafide")))
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
                sets.append(_trial_set(f"{d}|{g}|{condition}", bona, spoof))
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
    results = _detection_results(scorer, cfg, sets)
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


def _metric_columns(scorer_info, metric_names: list[str]) -> dict[str, list[str]]:
    specs = {m.name: list(m.columns) or [m.name] for m in scorer_info.metrics}
    return {name: specs.get(name, [name]) for name in metric_names}


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
    gens = [r for r in store.generations.sorted_rows() if _one_shot(r)]
    if label is not None:
        if items is None:
            raise ValueError("generator_rows: a label breakdown needs the manifest items")
        gens = [r for r in gens if items[r["item"]].labels.get(label[0]) == label[1]]
    meas = {r["id"]: r for r in store.measurements.sorted_rows() if r["status"] == "ok"}
    groups = [_measurement_group(g, [r for r in gens if r["generator"] == g], meas) for g in cfg.generators]
    resp, _ = scorer.call(
        "Aggregate", scorer_pb2.AggregateRequest(metrics=list(columns), groups=groups, bootstrap=_bootstrap(cfg))
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


def _check_scorer(resp, infos: dict, what: str) -> None:
    """The scorer's summaries come with its fingerprint: it must be the run's, whose hash the rows carry."""
    if dict(resp.fingerprint) != dict(infos["scorer"].fingerprint):
        raise RunError(f"{what}: computed by a scorer whose fingerprint is not the run's (metrics/fingerprint.json)")


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
    _check_scorer(resp, infos, "composite scores")
    out = []
    for result in resp.results:
        if result.error:
            out.append({"kind": result.name, "system": "", "score": math.nan, "rank": "", "note": result.error})
        out.extend({"kind": result.name, "system": s.system, "score": s.score, "rank": s.rank} for s in result.scores)
    return out


def attack_seen(infos: dict, detector: str, generator: str) -> str:
    """ "yes"/"no" when the detector declares its training generators (GetInfo metadata
    ``seen_generators``, a JSON list of model names), "" when it does not or for the pooled row."""
    declared = infos[detector].model.metadata.get("seen_generators") if detector in infos else None
    if not declared or generator == POOLED or generator not in infos:
        return ""
    return "yes" if infos[generator].model.name in json.loads(declared) else "no"


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
        _measurement_group(
            f"{g}|{task}|{k}",
            [r for r in gens if r["generator"] == g and r["task"] == task and iteration_of(r) == k],
            meas,
        )
        for g, task in chains
        for k in range(1, depth + 1)
    ]
    resp, _ = scorer.call(
        "Aggregate", scorer_pb2.AggregateRequest(metrics=list(columns), groups=groups, bootstrap=_bootstrap(cfg))
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
                    sets.append(_trial_set(f"{d}|{g}|{task}|{k}", bona, spoof))
    results = _detection_results(scorer, cfg, sets)
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
    _check_scorer(resp, infos, "I2D aggregates")
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


def write_metrics(store: RunStore, cfg, manifest: ManifestSet, infos: dict, scorer) -> tuple[list[dict], list[dict]]:
    fingerprint = dict(infos["scorer"].fingerprint)
    fp_hash = hashlib.sha256(json.dumps(fingerprint, sort_keys=True).encode()).hexdigest()[:16]
    (store.metrics_dir / "fingerprint.json").write_text(
        json.dumps(
            {
                "sha256_16": fp_hash,
                "fingerprint": fingerprint,
                "metrics": [
                    json_format.MessageToDict(m, preserving_proto_field_name=True) for m in infos["scorer"].metrics
                ],
            },
            indent=2,
            sort_keys=True,
        )
        + "\n"
    )
    items = manifest.by_id()
    # The arena's generators, then the corpus's own attacks (ASVspoof A07, ...) as generators of their own.
    generators, detectors = list(cfg.generators) + manifest.corpus_attacks(), list(cfg.detectors)
    conditions = (CLEAN, *cfg.conditions)
    det = detection_rows(store, scorer, cfg, generators, detectors, items, conditions=conditions)
    for r in det:
        r["scorer_fingerprint"] = fp_hash
        r["attack_seen_in_training"] = attack_seen(infos, r["detector"], r["generator"])
    _write_csv(store.metrics_dir / "detection_metrics.csv", DETECTION_COLUMNS, det)

    labels = sorted({(k, v) for it in manifest for k, v in it.labels.items() if k not in ("speaker", "key") and v})
    by_label = []
    for label in labels:
        by_label.extend(detection_rows(store, scorer, cfg, generators, detectors, items, label))
    for r in by_label:
        r["scorer_fingerprint"] = fp_hash
        r["attack_seen_in_training"] = attack_seen(infos, r["detector"], r["generator"])
    _write_csv(store.metrics_dir / "detection_by_label.csv", ["label", "value"] + DETECTION_COLUMNS, by_label)

    columns = _metric_columns(infos["scorer"], list(cfg.scorer.metrics))
    gen = generator_rows(store, scorer, cfg, infos, columns)
    for r in gen:
        r["scorer_fingerprint"] = fp_hash
    value_cols = [c for cols in columns.values() for c in cols]
    gen_columns = (
        ["generator", "family", "tasks", "n_ok", "n_failed"]
        + value_cols
        + ["params_m"]
        + [f"{c}_ci_{b}" for c in value_cols for b in ("low", "high")]
        + [f"n_{m}" for m in columns]
        + ["scorer_fingerprint"]
    )
    _write_csv(store.metrics_dir / "generator_metrics.csv", gen_columns, gen)
    # Every manifest label (sex, subset, corpus, emotion, attack id, ...) is a breakdown axis.
    gen_by_label = []
    source_labels = {k for it in manifest.bonafide() for k in it.labels}
    for label in (lb for lb in labels if lb[0] in source_labels):  # generators only take bona fide inputs
        for r in generator_rows(store, scorer, cfg, infos, columns, items, label):
            r["scorer_fingerprint"] = fp_hash
            gen_by_label.append(r)
    _write_csv(store.metrics_dir / "generator_metrics_by_label.csv", ["label", "value"] + gen_columns, gen_by_label)
    if cfg.protocol.i2d is not None:
        trajectories, aggregates = i2d_rows(store, scorer, cfg, infos, columns, detectors)
        for r in trajectories + aggregates:
            r["scorer_fingerprint"] = fp_hash
        _write_csv(store.metrics_dir / "i2d_iterations.csv", I2D_ITERATION_COLUMNS, trajectories)
        _write_csv(store.metrics_dir / "i2d_aggregates.csv", I2D_AGGREGATE_COLUMNS, aggregates)
    _write_csv(
        store.metrics_dir / "composite_scores.csv",
        ["kind", "system", "score", "rank", "note"],
        composite_rows(scorer, gen, det, infos),
    )
    return det, gen

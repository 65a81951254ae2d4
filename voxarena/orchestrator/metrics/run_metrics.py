"""Turns the stored records into ``metrics/*.csv`` through the scorer service.

Detection metrics are computed once per trial set over pooled scores (never averaged per item):
one row per detector x generator (that generator's spoofs against all bona fide clips) and one row
per detector with generator ``pooled`` (all spoofs); ``detection_by_label.csv`` repeats the pooled
and per-generator rows for every value of every manifest label (sex, subset, ...). Every headline
number has a speaker-cluster bootstrap confidence interval, and every row carries the scorer
fingerprint (``metrics/fingerprint.json`` holds it in full). Rows are sorted and floats printed
with fixed precision, so the same records always give the same bytes.

The tables are built in ``detection``, ``generation``, ``i2d``, ``localisation``, ``streaming``, ``attribution``,
``watermark`` and ``composite`` (with the scorer requests of ``scorer_client``); this module writes them.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math

from google.protobuf import json_format

from voxarena.orchestrator.metrics.attack import ATTACK_COLUMNS, TRANSFER_COLUMNS, attack_rows, transfer_rows
from voxarena.orchestrator.metrics.attribution import ATTRIBUTION_COLUMNS, attribution_tables
from voxarena.orchestrator.metrics.composite import composite_rows
from voxarena.orchestrator.metrics.detection import DETECTION_COLUMNS, attack_seen, detection_rows
from voxarena.orchestrator.metrics.generation import generator_rows
from voxarena.orchestrator.metrics.i2d import I2D_AGGREGATE_COLUMNS, I2D_ITERATION_COLUMNS, i2d_rows
from voxarena.orchestrator.metrics.localisation import LOCALISATION_COLUMNS, localisation_rows
from voxarena.orchestrator.metrics.streaming import STREAMING_COLUMNS, streaming_rows
from voxarena.orchestrator.metrics.watermark import SURVIVAL_COLUMNS, survival_rows
from voxarena.orchestrator.metrics.watermark_cost import cost_columns, cost_rows
from voxarena.orchestrator.run.manifest import ManifestSet
from voxarena.orchestrator.store.run_store import CLEAN, RunStore


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


def _metric_columns(scorer_info, metric_names: list[str]) -> dict[str, list[str]]:
    specs = {m.name: list(m.columns) or [m.name] for m in scorer_info.metrics}
    return {name: specs.get(name, [name]) for name in metric_names}


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
    attacks = attack_rows(store, cfg, scorer)
    if attacks:
        _write_csv(store.metrics_dir / "attack_metrics.csv", ATTACK_COLUMNS, attacks)
        _write_csv(store.metrics_dir / "attack_transfer.csv", TRANSFER_COLUMNS, transfer_rows(store, cfg, detectors))

    localisation = localisation_rows(store, cfg, items)
    if localisation:
        _write_csv(store.metrics_dir / "localisation.csv", LOCALISATION_COLUMNS, localisation)
    traced, confusion = attribution_tables(store, cfg, infos)
    if traced:
        _write_csv(store.metrics_dir / "attribution.csv", ATTRIBUTION_COLUMNS, traced)
        (store.metrics_dir / "attribution_confusion.json").write_text(
            json.dumps(confusion, indent=1, sort_keys=True) + "\n"
        )
    streaming = streaming_rows(store, cfg)
    if streaming:
        _write_csv(store.metrics_dir / "streaming.csv", STREAMING_COLUMNS, streaming)
    survival = survival_rows(store, cfg, infos)
    if survival:
        _write_csv(store.metrics_dir / "watermark_survival.csv", SURVIVAL_COLUMNS, survival)
    cost = cost_rows(
        store, cfg, infos, scorer, _metric_columns(infos["scorer"], ["pesq", "stoi", "sim", "dnsmos"]), items
    )
    if cost:
        _write_csv(store.metrics_dir / "watermark_cost.csv", cost_columns(cost), cost)

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

"""The composite scores with ranks, computed by the scorer: F_TTS over generators that speak text or
convert, F_reconstruction over pure vocoders, and the detectors' S_i (clean channel)."""

from __future__ import annotations

import math

from voxarena.orchestrator.metrics.scorer_client import check_scorer
from voxarena.orchestrator.store.run_store import CLEAN, condition_of
from voxarena.stats.composite import RECONSTRUCTION_WEIGHTS, TTS_WEIGHTS
from voxarena.v1 import scorer_pb2


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

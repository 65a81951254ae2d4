"""Attacks as run conditions (issue 16 items 2-3): an ``attack`` step searches, for every spoofed clip, the
version its target detector scores most bona fide within the budget, through the run's own detector client;
bona fide clips pass unchanged; every query is logged; every detector scores the attacked clips (transfer);
``metrics/attack_metrics.csv`` gives the success rate at the target's clean EER threshold."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from voxarena.orchestrator.run.config import ConfigError, load_config

QUERIES = 13
CONDITIONS = {"attack-dummy": [{"attack": {"target": "dummy-detector", "queries": QUERIES, "batch": 4, "snr_db": 20}}]}


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def run(tmp_path_factory, synthetic_dataset, make_config, run_arena) -> Path:
    tmp = tmp_path_factory.mktemp("attacks")
    config = make_config(
        tmp,
        synthetic_dataset,
        **{
            "dataset.max_items": 6,
            "detectors": {"dummy-detector": {}, "lfcc-gmm": {}},
            "conditions": CONDITIONS,
            # the perceptual cost uses the run's own pesq, sim and wer (and their models' first load)
            "scorer.metrics": ["rtf", "pesq", "sim", "wer"],
            "execution.deadline_seconds": 300,
        },
    )
    out = tmp / "run"
    run_arena(config, out)
    return out


def test_spoofed_clips_are_attacked_within_the_budgets_and_bona_fide_pass(run):
    degr = rows(run / "degradations.jsonl")
    assert degr and all(r["status"] == "ok" for r in degr)
    spoof = [r["steps"][0]["attack"] for r in degr if "|" in r["clip"]]  # generated clips' ids name their generator
    bona = [r["steps"][0]["attack"] for r in degr if "|" not in r["clip"]]
    assert len(spoof) == 12 and len(bona) == 6
    assert all(a["skipped"].startswith("bona fide") for a in bona)
    for a in spoof:
        assert a["target"] == "dummy-detector" and a["generator"] == "dummy-generator"
        assert 2 <= a["queries"] <= QUERIES and a["score"] >= a["original_score"]
        assert a["snr_db"] is None or a["snr_db"] >= 20 - 1e-6
        log = (run / a["log"]).read_text().splitlines()
        assert len(log) == a["queries"] and json.loads(log[0])["index"] == 0
    assert sum(a["score"] > a["original_score"] for a in spoof) >= 9  # the search finds better candidates


def test_every_detector_scores_the_attacked_clips(run):
    dets = [r for r in rows(run / "detections.jsonl") if r["condition"] == "attack-dummy"]
    assert {r["detector"] for r in dets} == {"dummy-detector", "lfcc-gmm"}
    assert len(dets) == 2 * 18 and all(r["status"] == "ok" for r in dets)


def test_attack_metrics_give_the_success_rate_at_the_clean_threshold(run):
    with open(run / "metrics" / "attack_metrics.csv", newline="") as f:
        table = {r["generator"]: r for r in csv.DictReader(f)}
    assert set(table) == {"dummy-generator", "pooled"}
    pooled = table["pooled"]
    assert pooled["condition"] == "attack-dummy" and pooled["target"] == "dummy-detector"
    assert int(pooled["n_spoof"]) == 12 and float(pooled["median_queries"]) <= QUERIES
    # Independently: the clean scores' EER threshold, and the attacked fakes above it.
    from voxarena.stats.detection import eer

    dets = [r for r in rows(run / "detections.jsonl") if r["detector"] == "dummy-detector"]
    bona = [r["score"] for r in dets if r["condition"] == "clean" and r["kind"] == "bonafide"]
    fake = [r["score"] for r in dets if r["condition"] == "clean" and r["kind"] == "spoof"]
    attacked = [r["score"] for r in dets if r["condition"] == "attack-dummy" and r["kind"] == "spoof"]
    import numpy as np

    _, threshold = eer(np.array(bona), np.array(fake))
    assert float(pooled["threshold_clean"]) == pytest.approx(threshold, rel=1e-6)
    assert float(pooled["success_rate"]) == pytest.approx(np.mean(np.array(attacked) > threshold), abs=1e-6)
    assert float(pooled["success_rate"]) >= float(pooled["accepted_clean"])


def test_the_target_must_be_a_detector_service_of_the_run(synthetic_dataset, make_config, tmp_path):
    config = make_config(tmp_path, synthetic_dataset, conditions={"a": [{"attack": {"target": "nope"}}]})
    with pytest.raises(ConfigError, match=r"conditions.a\[0\].attack.target: 'nope' is not a detector service"):
        load_config(config)
    config = make_config(
        tmp_path, synthetic_dataset, conditions={"a": [{"attack": {"target": "dummy-detector", "queries": 1}}]}
    )
    with pytest.raises(ConfigError, match="queries"):
        load_config(config)


def test_the_report_shows_the_attacks(run):
    from voxarena.orchestrator.report.build import build_report
    from voxarena.orchestrator.report.html import render_html

    rep = build_report(run)
    assert [r["generator"] for r in rep["attacks"]] == ["dummy-generator", "pooled"]
    page = render_html(rep)
    assert "<h2>Attacks</h2>" in page and 'id="attacks"' in page and 'id="attack-transfer"' in page
    assert "attack on dummy-detector (bands=8, batch=4, max_gain_db=6.0, noise=True, queries=13, snr_db=20.0)" in page


def test_the_transfer_matrix_scores_each_attack_with_every_detector(run):
    import numpy as np

    from voxarena.stats.detection import eer

    with open(run / "metrics" / "attack_transfer.csv", newline="") as f:
        table = {r["detector"]: r for r in csv.DictReader(f)}
    assert set(table) == {"dummy-detector", "lfcc-gmm"}
    with open(run / "metrics" / "attack_metrics.csv", newline="") as f:
        pooled = next(r for r in csv.DictReader(f) if r["generator"] == "pooled")
    # the target's cell is the attack's success rate
    assert table["dummy-detector"]["accepted_attacked"] == pooled["success_rate"]
    # the transfer cell, independently: lfcc-gmm's own clean EER threshold and the attacked fakes above it
    dets = [r for r in rows(run / "detections.jsonl") if r["detector"] == "lfcc-gmm"]
    pick = lambda cond, kind: np.array([r["score"] for r in dets if r["condition"] == cond and r["kind"] == kind])  # noqa: E731
    eer_clean, threshold = eer(pick("clean", "bonafide"), pick("clean", "spoof"))
    row = table["lfcc-gmm"]
    assert row["target"] == "dummy-detector" and int(row["n_spoof"]) == 12
    assert float(row["threshold_clean"]) == pytest.approx(threshold, rel=1e-6)
    assert float(row["eer_clean"]) == pytest.approx(eer_clean, abs=1e-9)
    assert float(row["accepted_attacked"]) == pytest.approx(np.mean(pick("attack-dummy", "spoof") > threshold))
    assert float(row["eer_attacked"]) == pytest.approx(
        eer(pick("attack-dummy", "bonafide"), pick("attack-dummy", "spoof"))[0], abs=1e-9
    )


def test_the_perceptual_cost_is_measured_against_the_original(run):
    """PESQ of each attacked clip against its original, checked with the pesq package directly."""
    import numpy as np
    import soundfile as sf
    from pesq import pesq

    with open(run / "metrics" / "attack_metrics.csv", newline="") as f:
        pooled = next(r for r in csv.DictReader(f) if r["generator"] == "pooled")
    gens = {r["id"]: r for r in rows(run / "generations.jsonl")}
    values = []
    for d in rows(run / "degradations.jsonl"):
        if "queries" not in d["steps"][0]["attack"]:
            continue
        attacked, rate = sf.read(run / d["audio"], dtype="float64")
        original, rate_o = sf.read(run / gens[d["clip"]]["audio"], dtype="float64")
        assert rate == rate_o == 16000 and attacked.shape == original.shape
        try:
            values.append(pesq(16000, original, attacked, "wb"))
        except Exception:  # the scorer leaves out a clip PESQ cannot measure, and so does this check
            continue
    assert values, "no attacked clip could be measured"
    assert float(pooled["pesq_vs_original"]) == pytest.approx(np.mean(values), abs=1e-4)
    assert 0 < float(pooled["sim_vs_original"]) <= 1.0 + 1e-6
    change = float(pooled["wer_attacked"]) - float(pooled["wer_original"])
    assert float(pooled["wer_change"]) == pytest.approx(change, abs=1e-9)
    page_rows = (run / "metrics" / "attack_metrics.csv").read_text()
    assert "pesq_vs_original,sim_vs_original,wer_original,wer_attacked,wer_change" in page_rows

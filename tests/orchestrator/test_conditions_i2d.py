"""Channel conditions and I2D through a real run with the test-double services: rows, ids, resume,
failure propagation, metrics tables, status and report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from voxarena.orchestrator.report.build import build_report
from voxarena.orchestrator.report.html import render_html
from voxarena.orchestrator.run.status import run_status

CONDITIONS = {
    "phone": [{"resample": 8000}, {"codec": "gsm"}],
    "noisy": [{"noise_snr_db": 5}],
    "mp3": [{"codec": "mp3", "compression": 0.9}],
}


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def run(tmp_path_factory, synthetic_dataset, make_config, run_arena) -> Path:
    tmp = tmp_path_factory.mktemp("axes")
    config = make_config(
        tmp,
        synthetic_dataset,
        **{
            "dataset.max_items": 6,
            "protocol.tasks": ["TTS", "CLONE", "CONVERT"],
            "protocol.i2d": {"iterations": 3},
            "conditions": CONDITIONS,
            "scorer.metrics": ["rtf", "psnr"],
            "scorer.bootstrap_resamples": 20,
            "generators": {"dummy-generator": {}, "dummy-cloner": {}},
        },
    )
    out = tmp / "run"
    run_arena(config, out)
    return out


def test_every_clip_is_scored_under_every_condition(run):
    dets = rows(run / "detections.jsonl")
    by_condition = {}
    for r in dets:
        by_condition.setdefault(r["condition"], []).append(r)
    # clean: 6 bona fide + 6 TTS + 3 iterations x 6 x (CLONE, CONVERT); others: the one-shot clips only
    assert len(by_condition["clean"]) == 6 + 6 + 3 * 12
    for c in CONDITIONS:
        assert len(by_condition[c]) == 6 + 6 + 12 and all(r["iteration"] == 1 for r in by_condition[c])
        assert all(r["id"].startswith(f"dummy-detector@{c}|") and r["status"] == "ok" for r in by_condition[c])
    degr = rows(run / "degradations.jsonl")
    assert len(degr) == 3 * 24 and all(r["status"] == "ok" for r in degr)
    phone = [r for r in degr if r["condition"] == "phone"]
    assert {r["sample_rate"] for r in phone} == {8000} and all(12 < r["steps"][1]["kbps"] < 14.5 for r in phone)
    for r in degr:  # stored content-addressed like every artifact
        assert (run / r["audio"]).name == r["audio_sha256"] + ".wav"


def test_detection_metrics_have_a_condition_axis(run, read_csv):
    det = read_csv(run / "metrics" / "detection_metrics.csv")
    assert {r["condition"] for r in det} == {"clean", *CONDITIONS}
    pooled = {r["condition"]: r for r in det if r["generator"] == "pooled"}
    # every condition's trial set holds the same clips: only the channel differs; I2D iterations are not in it
    assert {(r["n_bonafide"], r["n_spoof"]) for r in pooled.values()} == {("6", "18")}
    assert len({r["eer"] for r in pooled.values()}) > 1  # the channel changes what the detector sees


def test_i2d_chains_take_the_previous_iteration_as_reference(run):
    gens = {r["id"]: r for r in rows(run / "generations.jsonl")}
    item = next(r["item"] for r in gens.values() if r["task"] == "CLONE")
    first = gens[f"dummy-cloner|CLONE|{item}"]
    second, third = gens[f"dummy-cloner|CLONE|{item}|i2d2"], gens[f"dummy-cloner|CLONE|{item}|i2d3"]
    assert first["iteration"] == 1 and "reference_clip" not in first
    assert second["reference_clip"] == first["id"] and third["reference_clip"] == second["id"]
    # SIM is measured against the original reference speaker at every iteration
    assert first["speaker_reference"] == second["speaker_reference"] == third["speaker_reference"] != item
    assert len({first["audio_sha256"], second["audio_sha256"], third["audio_sha256"]}) == 3
    assert not any(r.get("iteration", 1) > 1 for r in gens.values() if r["task"] == "TTS")


def test_i2d_metrics_per_iteration_and_aggregated(run, read_csv):
    it = read_csv(run / "metrics" / "i2d_iterations.csv")
    assert {(r["task"], r["iteration"]) for r in it} == {(t, str(k)) for t in ("CLONE", "CONVERT") for k in (1, 2, 3)}
    assert {r["metric"] for r in it} == {"rtf", "psnr", "eer:dummy-detector"}
    eer = [r for r in it if r["metric"] == "eer:dummy-detector"]
    assert all(r["n"] == "6" and 0 <= float(r["value"]) <= 1 for r in eer)
    agg = read_csv(run / "metrics" / "i2d_aggregates.csv")
    assert {r["metric"] for r in agg} == {"1-rtf", "psnr", "eer:dummy-detector"}  # rtf: lower is better
    # the aggregate is recomputable from the trajectory by hand
    traj = sorted((r for r in it if r["metric"] == "psnr" and r["task"] == "CONVERT"), key=lambda r: r["iteration"])
    x = [float(r["value"]) for r in traj]
    row = next(r for r in agg if r["metric"] == "psnr" and r["task"] == "CONVERT")
    assert float(row["mean"]) == pytest.approx(sum(x) / 3, rel=1e-6)
    assert float(row["lwa"]) == pytest.approx((x[0] + 2 * x[1] + 3 * x[2]) / 6, rel=1e-6)
    assert float(row["ewa"]) == pytest.approx((x[0] + 0.5 * x[1] + 0.25 * x[2]) / 1.75, rel=1e-6)
    assert float(row["auc"]) == pytest.approx((x[0] + x[1]) / 2 + (x[1] + x[2]) / 2, rel=1e-6)
    # the headline generator table holds one-shot clips only
    gen = {r["generator"]: r for r in read_csv(run / "metrics" / "generator_metrics.csv")}
    assert gen["dummy-cloner"]["n_ok"] == "12" and gen["dummy-generator"]["n_ok"] == "6"


def test_status_and_report_show_both_axes(run):
    st = run_status(run)
    assert st["complete"], st
    services = {(r["stage"], r["service"]): r for r in st["coverage"]}
    assert services[("generation", "dummy-generator")]["expected"] == 6
    assert services[("generation", "dummy-cloner")]["expected"] == 3 * 12
    assert services[("detection", "dummy-detector")]["expected"] == 6 + 6 + 36
    assert services[("detection", "dummy-detector@phone")]["expected"] == 24
    rep = build_report(run)
    page = render_html(rep)
    assert 'id="condition-heatmap"' in page and 'id="eer-heatmap-phone"' in page
    assert 'id="i2d-aggregates"' in page and 'id="i2d-psnr"' in page and page.count('class="i2d"') == 3
    assert "codec=gsm" in page


def test_rerun_resumes_and_a_failed_iteration_fails_the_rest_of_its_chain(
    run, tmp_path, synthetic_dataset, make_config, run_arena
):
    # Resume: nothing is generated, degraded or detected again.
    before = {n: (run / n).read_text() for n in ("generations.jsonl", "detections.jsonl", "degradations.jsonl")}
    config = make_config(
        tmp_path,
        synthetic_dataset,
        **{
            "dataset.max_items": 6,
            "protocol.tasks": ["TTS", "CLONE", "CONVERT"],
            "protocol.i2d": {"iterations": 3},
            "conditions": CONDITIONS,
            "scorer.metrics": ["rtf", "psnr"],
            "scorer.bootstrap_resamples": 20,
            "generators": {"dummy-generator": {}, "dummy-cloner": {}},
        },
    )
    run_arena(config, run)
    assert {n: (run / n).read_text() for n in before} == before

    # A cloning API that refuses long references: iteration 1 (a 1 s recording) passes,
    # iteration 2 gets iteration 1's clip (one second per character of text) and is refused; the
    # rest of that chain are failed rows naming the cause, never missing rows.
    out = tmp_path / "failing"
    config = make_config(
        tmp_path,
        synthetic_dataset,
        **{
            "dataset.max_items": 3,
            "protocol.tasks": ["CLONE"],
            "protocol.i2d": {"iterations": 4},
            "protocol.max_duration": 600,
            "generators": {"dummy-cloner": {"parameters": {"max_reference_seconds": "36", "seconds_per_char": "1"}}},
        },
    )
    run_arena(config, out)
    gens = {r["id"]: r for r in rows(out / "generations.jsonl")}
    assert len(gens) == 3 * 4
    refused = 0
    for item in {r["item"] for r in gens.values()}:
        chain = [gens[f"dummy-cloner|CLONE|{item}" + ("" if k == 1 else f"|i2d{k}")] for k in (1, 2, 3, 4)]
        assert chain[0]["status"] == "ok"
        if chain[0]["duration"] > 36:
            refused += 1
            assert chain[1]["code"] == "INVALID_ARGUMENT" and "longer than 36 s" in chain[1]["reason"]
            for k in (2, 3):
                assert chain[k]["code"] == "UPSTREAM_FAILED" and chain[k - 1]["id"] in chain[k]["reason"]
    assert refused >= 1
    st = run_status(out)
    gen_cov = next(r for r in st["coverage"] if r["stage"] == "generation")
    assert gen_cov["expected"] == 12 and gen_cov["pending"] == 0 and gen_cov["failed"] == 3 * refused
    # refused by the service as a bad request (input), then two iterations with nothing to iterate on
    assert gen_cov["failure_kinds"] == {"upstream_failed": 2 * refused, "input": refused}


def test_each_degradation_is_computed_once_for_all_detectors(tmp_path, synthetic_dataset, make_config, run_arena):
    """Two detectors share one degradation per (condition, clip), a failed one too: one row each in
    degradations.jsonl, and every detector's score of a clip the channel cannot carry names why."""
    import soundfile as sf

    speech = sorted((Path(synthetic_dataset["root"]).parent / "audio").glob("*.wav"))[:2]
    sf.write(tmp_path / "silence.wav", [0.0] * 16000, 16000, subtype="PCM_16")
    table = tmp_path / "items.csv"
    table.write_text(
        "id,audio,speaker,text\n"
        + "".join(f"s{i},{p},spk{i},HELLO THERE\n" for i, p in enumerate(speech))
        + "quiet,silence.wav,spk9,HELLO AGAIN\n"
    )
    config = make_config(
        tmp_path,
        synthetic_dataset,
        **{
            # the synthetic clips live beside the shared fixture's table, outside this table's directory
            "dataset": {"kind": "table", "root": str(table), "allow_outside_root": True},
            "protocol.tasks": ["TTS"],
            "detectors": {"dummy-detector": {}, "second": {"module": "voxarena.services.testing.dummy_detector"}},
            "conditions": {"noisy": [{"noise_snr_db": 10}]},
            "scorer.bootstrap_resamples": 20,
        },
    )  # CIs are not the point
    out = tmp_path / "run"
    run_arena(config, out)
    lines = rows(out / "degradations.jsonl")
    assert len(lines) == 3 + 3 and len({r["id"] for r in lines}) == 6  # 3 bona fide + 3 TTS clips, once each
    failed = [r for r in lines if r["status"] != "ok"]
    assert [r["id"] for r in failed] == ["noisy|quiet"] and "silent" in failed[0]["reason"]
    assert (failed[0]["failure"], failed[0]["code"]) == ("input", "BAD_INPUT")
    dets = {r["id"]: r for r in rows(out / "detections.jsonl")}
    for d in ("dummy-detector", "second"):
        assert dets[f"{d}@noisy|quiet"]["status"] == "failed" and "silent" in dets[f"{d}@noisy|quiet"]["reason"]
        assert dets[f"{d}|quiet"]["status"] == "ok"  # the clean channel carries it

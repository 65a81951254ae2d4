"""Watermarks in a run (issue 30): ``generators.NAME.watermark`` marks every clip the generator makes through a
WATERMARK transform (perth-embed, the real one), the unmarked clip kept and the step recorded; a condition step
``resynthesize: GENERATOR`` re-synthesises every clip; ``metrics/watermark_survival.csv`` holds the watermark
detector's (perth-detect) detection rate at 1 % false alarms beside the best fake-voice detector's EER, checked
here against a direct computation; the report shows the heatmap. Bad references stop the run before any work."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from voxarena.codec import read_audio_file
from voxarena.orchestrator.fleet.fleet import RunError
from voxarena.orchestrator.fleet.service_config import protocol_view
from voxarena.orchestrator.run.config import ConfigError, load_config
from voxarena.stats.watermark import survival, threshold_at_far

CONDITIONS = {"gsm": [{"codec": "gsm"}], "resynth": [{"resynthesize": "dummy-generator"}]}


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _config(make_config, tmp: Path, dataset: dict, **extra) -> Path:
    overrides = {
        "dataset.max_items": 8,
        "protocol.tasks": ["TTS", "RECONSTRUCT", "CONVERT"],
        "generators": {"dummy-generator": {"watermark": "perth-embed"}, "dummy-cloner": {}},
        "detectors": {"dummy-detector": {}, "perth-detect": {}},
        "transforms": {"perth-embed": {}},
        "conditions": CONDITIONS,
        "scorer.bootstrap_resamples": 50,
        "scorer.metrics": ["rtf", "pesq", "stoi", "sim"],
        **extra,
    }
    return make_config(tmp, dataset, **overrides)


@pytest.fixture(scope="module")
def run(tmp_path_factory, synthetic_dataset, make_config, run_arena) -> Path:
    tmp = tmp_path_factory.mktemp("watermark")
    out = tmp / "run"
    run_arena(_config(make_config, tmp, synthetic_dataset), out)
    return out


def test_a_watermarked_generator_stores_both_clips_and_records_the_step(run):
    gens = {r["id"]: r for r in rows(run / "generations.jsonl")}
    assert all(r["status"] == "ok" for r in gens.values())
    marked = [r for r in gens.values() if r["generator"] == "dummy-generator"]
    assert len(marked) == 16 and all(r["watermark"]["transform"] == "perth-embed" for r in marked)
    for r in marked:
        w = r["watermark"]
        assert w["steps"] == ["perth-net watermark (1.0.1)"] and w["unmarked_sha256"] != r["audio_sha256"]
        unmarked = read_audio_file(str(run / w["unmarked_audio"]))
        audio = read_audio_file(str(run / r["audio"]))
        assert unmarked.sample_rate == audio.sample_rate == r["sample_rate"]
        assert 0 <= unmarked.samples.size - audio.samples.size < audio.sample_rate // 100
    assert all("watermark" not in r for r in gens.values() if r["generator"] == "dummy-cloner")


def test_resynthesis_is_a_condition_step(run):
    degr = [r for r in rows(run / "degradations.jsonl") if r["condition"] == "resynth"]
    assert degr and all(r["status"] == "ok" for r in degr)
    assert all(r["steps"][0]["resynthesize"] == "dummy-generator" for r in degr)


def test_the_survival_table_is_the_direct_computation(run, read_csv):
    table = read_csv(run / "metrics" / "watermark_survival.csv")
    assert {(r["generator"], r["condition"]) for r in table} == {
        (g, c) for g in ("dummy-generator", "dummy-cloner") for c in ("clean", "gsm", "resynth")
    }
    dets = [r for r in rows(run / "detections.jsonl") if r["status"] == "ok"]
    for r in table:
        assert r["detector"] == "perth-detect" and r["cm_detector"] == "dummy-detector"
        assert r["watermarked"] == ("yes" if r["generator"] == "dummy-generator" else "no")
        mine = [d for d in dets if d["detector"] == "perth-detect" and d.get("condition", "clean") == r["condition"]]
        bona = np.array([d["score"] for d in mine if d["kind"] == "bonafide"])
        clips = np.array([d["score"] for d in mine if d["generator"] == r["generator"]])
        expected = survival(bona, clips)
        assert float(r["flagged"]) == pytest.approx(expected["flagged"])
        assert float(r["eer"]) == pytest.approx(expected["eer"])
        assert float(r["flagged_ci_low"]) <= float(r["flagged"]) <= float(r["flagged_ci_high"])
        assert float(r["false_alarm"]) <= 0.01 + 1e-12
    clean = {r["generator"]: r for r in table if r["condition"] == "clean"}
    assert float(clean["dummy-generator"]["flagged"]) == 1.0  # the mark is found on every clip as made
    assert float(clean["dummy-generator"]["eer"]) == 0.0
    # (the dummy cloner's synthetic buzz fools Perth-Net into false alarms: that is measured, not asserted)


def test_the_report_shows_the_survival_heatmap(run):
    from voxarena.orchestrator.report.build import write_report

    html = write_report(run)[1].read_text()
    assert "Watermark survival" in html and "aria-label='watermark survival perth-detect'" in html
    assert "dummy-generator (marked)" in html and "What the mark costs" in html


def test_the_mark_s_cost_is_measured_against_the_unmarked_clip(run, read_csv):
    (row,) = read_csv(run / "metrics" / "watermark_cost.csv")
    assert row["generator"] == "dummy-generator" and row["watermark"] == "perth-embed" and row["n_clips"] == "16"
    # the marked clip is close to, but not, the unmarked one
    assert 0.5 < float(row["stoi"]) < 1.0 and float(row["sim.cosine" if "sim.cosine" in row else "sim"]) > 0.5
    assert 1.0 <= float(row["pesq"]) < 4.65


def test_the_threshold_keeps_false_alarms_at_or_under_the_rate():
    b = np.arange(200.0)
    assert threshold_at_far(b, 0.01) == 2.0 and np.mean(b < 2.0) == 0.01
    assert threshold_at_far(np.arange(50.0), 0.01) == 0.0  # fewer than 100 clips: none may be flagged
    ties = np.array([0.0] * 5 + [1.0] * 95)
    assert np.mean(ties < threshold_at_far(ties, 0.01)) <= 0.01


def test_a_watermark_outside_transforms_is_a_config_error(tmp_path, synthetic_dataset, make_config):
    path = _config(make_config, tmp_path, synthetic_dataset, transforms={})
    with pytest.raises(
        ConfigError, match=r"generators.dummy-generator.watermark: 'perth-embed' is not under transforms"
    ):
        load_config(path)
    path = _config(make_config, tmp_path, synthetic_dataset, conditions={"r": [{"resynthesize": "hifigan"}]})
    with pytest.raises(ConfigError, match=r"conditions.r\[0\]: resynthesize 'hifigan' is not under generators"):
        load_config(path)


def test_a_watermark_that_is_not_a_watermark_stops_the_run_before_any_work(
    tmp_path, synthetic_dataset, make_config, run_arena
):
    path = _config(
        make_config,
        tmp_path,
        synthetic_dataset,
        generators={"dummy-generator": {"watermark": "laundering"}},
        transforms={"laundering": {}},
        detectors={"dummy-detector": {}},
        conditions={},
    )
    with pytest.raises(RunError, match="generators.dummy-generator.watermark: laundering is a LAUNDERING transform"):
        run_arena(path, tmp_path / "out")
    assert not (tmp_path / "out" / "generations.jsonl").exists()


def test_configs_without_watermarks_keep_their_protocol_view(tmp_path, synthetic_dataset, make_config):
    cfg = load_config(make_config(tmp_path, synthetic_dataset))
    view = protocol_view(cfg.model_dump(mode="json"))
    assert "watermark" not in view["generators"]["dummy-generator"]  # runs from before watermarks resume


def test_a_partial_fake_splices_the_marked_output(tmp_path, speech_dir, make_config, run_arena, read_csv):
    """The vendor marks what its model makes; the forger splices that into real speech: the marked words are in
    the clip, the rest is bona fide, and the mark's cost table leaves partial fakes out."""
    config = make_config(
        tmp_path,
        speech_dir,
        **{
            "dataset.max_items": 2,
            "protocol.tasks": ["PARTIAL_VOCODED"],
            "protocol.partial": {"spans": 1, "min_words": 2, "max_words": 3, "crossfade_ms": 10},
            "generators": {"dummy-generator": {"watermark": "perth-embed"}},
            "transforms": {"perth-embed": {}},
            "scorer.metrics": ["rtf", "pesq"],
        },
    )
    run_arena(config, tmp_path / "run")
    gens = [r for r in rows(tmp_path / "run" / "generations.jsonl") if r["status"] == "ok"]
    assert len(gens) == 2
    for g in gens:
        assert g["watermark"]["transform"] == "perth-embed" and g["partial"]["spans"]
        spliced = read_audio_file(str(tmp_path / "run" / g["audio"]))
        unmarked = read_audio_file(str(tmp_path / "run" / g["watermark"]["unmarked_audio"]))
        assert spliced.samples.size > 0 and unmarked.samples.size > 0
    assert not (tmp_path / "run" / "metrics" / "watermark_cost.csv").exists()

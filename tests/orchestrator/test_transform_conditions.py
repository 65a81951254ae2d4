"""Transforms as run conditions (issue 16 item 1): a condition step names a transform service under
``transforms:`` (the laundering chain, started by its catalogue name); every clip goes through it before detection,
its steps are recorded, a refusal is a permanent input failure naming the option, a transform that does
not answer stops the run before any work, and a run started before transform steps existed still resumes.
(A transform that goes away mid-run is a failed call like any service's: transient, retried by a rerun.)"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from voxarena.orchestrator.fleet.fleet import RunError
from voxarena.orchestrator.fleet.service_config import config_differences, protocol_view
from voxarena.orchestrator.run.config import ConfigError, load_config

LAUNDERING: dict = {}  # local mode starts the catalogued service by its name
CONDITIONS = {
    "laundered": [{"transform": "laundering", "parameters": {"resample_hz": "8000", "codec": "gsm"}}],
    "laundered+noise": [
        {"transform": "laundering", "parameters": {"lowpass_hz": "3000", "reverb_rt60": "0.2"}},
        {"noise_snr_db": 20},
    ],
}


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def run(tmp_path_factory, synthetic_dataset, make_config, run_arena) -> Path:
    tmp = tmp_path_factory.mktemp("transforms")
    config = make_config(
        tmp,
        synthetic_dataset,
        **{"dataset.max_items": 4, "transforms": {"laundering": LAUNDERING}, "conditions": CONDITIONS},
    )
    out = tmp / "run"
    run_arena(config, out)
    return out


def test_every_clip_goes_through_the_transform(run):
    degr = {r["id"]: r for r in rows(run / "degradations.jsonl")}
    assert len(degr) == 2 * (4 + 4 + 4) and all(r["status"] == "ok" for r in degr.values())  # bona fide, TTS, RECON
    for r in degr.values():
        first = r["steps"][0]
        assert first["transform"] == "laundering"
        assert first["parameters"] == CONDITIONS[r["condition"]][0]["parameters"]
    phone = [r for r in degr.values() if r["condition"] == "laundered"]
    assert all(r["steps"][0]["steps"][:2] == ["resample 8000 Hz", r["steps"][0]["steps"][1]] for r in phone)
    assert all(r["steps"][0]["steps"][1].startswith("codec gsm") and r["sample_rate"] == 16000 for r in phone)
    noisy = [r for r in degr.values() if r["condition"] == "laundered+noise"]
    assert all(r["steps"][1] == {"noise_snr_db": 20.0, "noise": "white"} for r in noisy)
    dets = rows(run / "detections.jsonl")
    assert {r["condition"] for r in dets} == {"clean", "laundered", "laundered+noise"}
    assert all(r["status"] == "ok" for r in dets)
    record = json.loads((run / "run.json").read_text())
    assert record["services"]["laundering"]["role"] == "transform"
    assert record["services"]["laundering"]["info"]["kind"] == "LAUNDERING"


def test_the_same_run_again_gives_the_same_bytes(run, synthetic_dataset, make_config, run_arena, tmp_path):
    config = make_config(
        tmp_path,
        synthetic_dataset,
        **{"dataset.max_items": 4, "transforms": {"laundering": LAUNDERING}, "conditions": CONDITIONS},
    )
    run_arena(config, tmp_path / "again")
    first = {r["id"]: r["audio_sha256"] for r in rows(run / "degradations.jsonl")}
    second = {r["id"]: r["audio_sha256"] for r in rows(tmp_path / "again" / "degradations.jsonl")}
    assert first == second


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"reverb_rt60": "5"}, r"conditions.bad\[0\].parameters.reverb_rt60='5': outside \[0, 1\]"),
        ({"codec": "flac"}, r"parameters.codec='flac': not one of none, mp3, opus"),
        ({"echo": "1"}, r"parameters.echo='1': the service declares no such option \(it has: codec, compression"),
        ({"reverb_wet": "lots"}, r"parameters.reverb_wet='lots': not a number"),
    ],
)
def test_parameters_outside_the_declared_ranges_stop_the_run_before_any_work(
    synthetic_dataset, make_config, run_arena, tmp_path, parameters, message
):
    bad = {"bad": [{"gain_db": -3}, {"transform": "laundering", "parameters": parameters}]}
    config = make_config(
        tmp_path,
        synthetic_dataset,
        **{"dataset.max_items": 2, "transforms": {"laundering": LAUNDERING}, "conditions": bad},
    )
    with pytest.raises(RunError, match=message.replace("bad\\[0\\]", "bad\\[1\\]")):
        run_arena(config, tmp_path / "run")
    assert not (tmp_path / "run" / "degradations.jsonl").exists()


def test_a_clip_the_transform_refuses_is_a_permanent_input_failure(synthetic_dataset, make_config, run_arena, tmp_path):
    """Parameters fine, the clip not: a low-pass edge above half the rate is no filter, but a silent clip
    cannot take noise at an SNR (the service says so, INVALID_ARGUMENT, for each clip)."""
    root = tmp_path / "data"
    root.mkdir()
    sf.write(root / "silence.wav", np.zeros(16000, np.int16), 16000, subtype="PCM_16")
    (root / "manifest.csv").write_text("id,audio,speaker,text\ns0,silence.wav,p0,hello\ns1,silence.wav,p1,hello\n")
    bad = {"noisy": [{"transform": "laundering", "parameters": {"noise": "white"}}]}
    config = make_config(
        tmp_path,
        {"kind": "table", "root": str(root / "manifest.csv")},
        **{"protocol.tasks": ["RECONSTRUCT"], "transforms": {"laundering": LAUNDERING}, "conditions": bad},
    )
    run_arena(config, tmp_path / "run")
    degr = [r for r in rows(tmp_path / "run" / "degradations.jsonl") if r["clip"].startswith("s")]
    assert degr and all(r["status"] == "failed" and r["failure"] == "input" for r in degr)
    assert all(r["code"] == "INVALID_ARGUMENT" and "the clip is silent" in r["reason"] for r in degr)
    failed = [
        r for r in rows(tmp_path / "run" / "detections.jsonl") if r["condition"] == "noisy" and r["kind"] == "bonafide"
    ]
    assert failed and all(r["status"] == "failed" and r["code"] == "INVALID_ARGUMENT" for r in failed)


def test_a_transform_that_does_not_answer_stops_the_run_before_any_work(
    synthetic_dataset, make_config, run_arena, tmp_path
):
    away = {"laundering": {"address": "127.0.0.1:9"}}  # nothing listens there
    config = make_config(
        tmp_path,
        synthetic_dataset,
        **{
            "dataset.max_items": 2,
            "transforms": away,
            "conditions": {"laundered": CONDITIONS["laundered"]},
            "execution.startup_timeout_seconds": 3,
        },
    )
    with pytest.raises(RunError, match="laundering"):
        run_arena(config, tmp_path / "run")
    assert not (tmp_path / "run" / "generations.jsonl").exists() or not rows(tmp_path / "run" / "generations.jsonl")


def test_a_step_must_name_a_declared_transform(synthetic_dataset, make_config, tmp_path):
    config = make_config(tmp_path, synthetic_dataset, conditions={"x": [{"transform": "nope"}]})
    with pytest.raises(ConfigError, match=r"conditions.x\[0\]: transform 'nope' is not under transforms: \(none"):
        load_config(config)
    config = make_config(tmp_path, synthetic_dataset, conditions={"x": [{"gain_db": 3, "parameters": {"a": "1"}}]})
    with pytest.raises(ConfigError, match="parameters: apply to a transform step only"):
        load_config(config)
    config = make_config(tmp_path, synthetic_dataset, transforms={"dummy-detector": LAUNDERING})
    with pytest.raises(ConfigError, match="'dummy-detector' is used twice"):
        load_config(config)


def test_a_run_recorded_before_transform_steps_keeps_its_identity(synthetic_dataset, make_config, tmp_path):
    config = make_config(tmp_path, synthetic_dataset, conditions={"phone": [{"resample": 8000}, {"codec": "gsm"}]})
    now = load_config(config).model_dump(mode="json")
    before = json.loads(json.dumps(now))
    del before["transforms"]
    for steps in before["conditions"].values():
        for step in steps:
            del step["transform"], step["parameters"]
    assert config_differences(protocol_view(before), protocol_view(now)) == []


def test_the_report_names_the_transform_and_its_parameters(run):
    from voxarena.orchestrator.report.build import build_report
    from voxarena.orchestrator.report.html import render_html

    page = render_html(build_report(run))
    assert "laundering(codec=gsm, resample_hz=8000)" in page  # run.json keeps keys sorted
    assert "laundering(lowpass_hz=3000, reverb_rt60=0.2), noise=white noise_snr_db=20.0" in page

"""End-to-end runs in local mode with the test-double services: the run directory, validation of
misbehaving services, deadlines, start-up failures, and resume after a kill."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from voxarena.orchestrator.run.pipeline import RunError

REPO = Path(__file__).resolve().parents[2]


def test_local_run_writes_the_run_directory(tmp_path, synthetic_dataset, make_config, run_arena, read_csv):
    out = tmp_path / "run"
    record = run_arena(make_config(tmp_path, synthetic_dataset), out)
    for name in (
        "run.json",
        "manifest.jsonl",
        "generations.jsonl",
        "detections.jsonl",
        "metrics/detection_metrics.csv",
        "metrics/generator_metrics.csv",
    ):
        assert (out / name).exists(), name
    gens = [json.loads(line) for line in (out / "generations.jsonl").read_text().splitlines()]
    assert len(gens) == 16 and all(g["status"] == "ok" for g in gens)  # 8 items x (TTS, RECONSTRUCT)
    for g in gens:  # content-addressed audio
        assert (out / g["audio"]).name == g["audio_sha256"] + ".wav"
    dets = [json.loads(line) for line in (out / "detections.jsonl").read_text().splitlines()]
    assert len(dets) == 8 + 16 and {d["kind"] for d in dets} == {"bonafide", "spoof"}
    det = read_csv(out / "metrics" / "detection_metrics.csv")
    assert [(r["detector"], r["generator"]) for r in det] == [
        ("dummy-detector", "dummy-generator"),
        ("dummy-detector", "pooled"),
    ]
    assert {"n_bonafide", "n_spoof", "eer", "min_dcf", "act_dcf", "cllr"} <= set(det[0])
    assert det[1]["n_bonafide"] == "8" and det[1]["n_spoof"] == "16"
    assert float(det[1]["eer"]) < 0.5  # the high-band detector separates the buzz from noisy voiced audio
    gen = read_csv(out / "metrics" / "generator_metrics.csv")
    assert gen[0]["generator"] == "dummy-generator" and gen[0]["n_ok"] == "16" and float(gen[0]["rtf"]) > 0
    assert record["manifest"]["items"] == 8 and record["seeds"]["run_seed"] == 11
    assert set(record["services"]) == {"dummy-generator", "dummy-detector", "scorer"}
    assert record["services"]["dummy-generator"]["info"]["model"]["name"] == "dummy-generator"
    assert record["sessions"][0]["ended_at"]
    items = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    assert {g["seed"] for g in gens} == {it["seed"] for it in items} == {11 + i for i in range(8)}

    # A rerun on the same directory does nothing again and gives the same metrics.
    before = (out / "metrics" / "detection_metrics.csv").read_bytes()
    run_arena(make_config(tmp_path, synthetic_dataset), out)
    assert len((out / "generations.jsonl").read_text().splitlines()) == 16
    assert (out / "metrics" / "detection_metrics.csv").read_bytes() == before


def test_misbehaving_generator_is_caught_item_by_item(tmp_path, synthetic_dataset_factory, make_config, run_arena):
    from voxarena.services.testing.misbehaving_generator import MODES

    dataset = {"kind": "table", "root": str(synthetic_dataset_factory(tmp_path / "data", speakers=5, clips=3))}
    cfg = make_config(
        tmp_path,
        dataset,
        **{
            "generators": {"misbehaving-generator": {}},
            "protocol.tasks": ["TTS"],
            "protocol.seed": 0,
            "protocol.max_duration": 60,
            "dataset.max_items": len(MODES),
        },
    )
    out = tmp_path / "run"
    run_arena(cfg, out)
    gens = {g["seed"]: g for g in map(json.loads, (out / "generations.jsonl").read_text().splitlines())}
    expected = {
        "wrong_id": "request_id echo",
        "wrong_seed": "seed echo",
        "empty": "empty audio",
        "nan": "NaN",
        "stereo": "expected mono",
        "wrong_rate": "sample_rate 22050 != declared 16000",
        "too_long": "outside [0.2, 60.0]",
        "too_short": "outside [0.2, 60.0]",
        "no_timing": "timing",
        "internal": "INTERNAL",
        "invalid_argument": "INVALID_ARGUMENT",
    }
    for seed, mode in enumerate(MODES):
        g = gens[seed]
        if mode in ("ok", "unavailable_once"):
            assert g["status"] == "ok", g
            assert g["attempts"] == (2 if mode == "unavailable_once" else 1)
        else:
            assert g["status"] == "failed", (mode, g)
            assert expected[mode] in g["reason"], (mode, g["reason"])
            if mode in ("internal", "invalid_argument"):  # only UNAVAILABLE is retried (retries: 2)
                assert g["code"] == mode.upper() and g["attempts"] == 1, g
            # the service failed on its side; it refused the request; or it broke the contract
            kind = {"internal": "service_error", "invalid_argument": "input"}.get(mode, "invalid_response")
            assert g["failure"] == kind, (mode, g)
            assert g["id"].split("|")[-1] in g["reason"]  # the reason names the item
    dets = [json.loads(line) for line in (out / "detections.jsonl").read_text().splitlines()]
    assert sum(d["kind"] == "spoof" for d in dets) == 2  # only the valid clips went on to the detector


def test_deadline_is_a_recorded_failure(tmp_path, synthetic_dataset, make_config, run_arena):
    cfg = make_config(
        tmp_path,
        synthetic_dataset,
        **{
            "dataset.max_items": 1,
            "protocol.tasks": ["TTS"],
            "generators": {"dummy-generator": {"parameters": {"sleep": 3}}},
            "execution.deadline_seconds": 0.5,
        },
    )
    run_arena(cfg, tmp_path / "run")
    (g,) = [json.loads(line) for line in (tmp_path / "run" / "generations.jsonl").read_text().splitlines()]
    assert g["status"] == "failed" and g["code"] == "DEADLINE_EXCEEDED" and g["failure"] == "transient"


def test_service_that_cannot_start_is_named(tmp_path, synthetic_dataset, make_config, run_arena):
    cfg = make_config(tmp_path, synthetic_dataset, **{"generators": {"ghost": {"module": "services.no_such_module"}}})
    with pytest.raises(RunError) as e:
        run_arena(cfg, tmp_path / "run")
    assert "ghost" in str(e.value) and "No module named" in str(e.value)


def test_unknown_metric_fails_before_any_work(tmp_path, synthetic_dataset, make_config, run_arena):
    cfg = make_config(tmp_path, synthetic_dataset, **{"scorer.metrics": ["wer", "pesqq"]})
    with pytest.raises(RunError, match="unknown metric 'pesqq' \\(did you mean 'pesq'\\?\\)"):
        run_arena(cfg, tmp_path / "run")
    assert not (tmp_path / "run" / "generations.jsonl").exists()


def test_a_request_over_the_scorers_limits_fails_before_any_work(tmp_path, synthetic_dataset, make_config, run_arena):
    """The orchestrator reads ScorerInfo.limits before it asks: a batch over max_clips_per_request (256) is
    refused naming the config key, not once per MeasureClips call."""
    cfg = make_config(tmp_path, synthetic_dataset, **{"scorer.batch_size": 257})
    with pytest.raises(RunError, match=r"scorer.batch_size: 257 is over .*max_clips_per_request 256"):
        run_arena(cfg, tmp_path / "run")
    assert not (tmp_path / "run" / "generations.jsonl").exists()


def test_resume_refuses_a_changed_config(tmp_path, synthetic_dataset, make_config, run_arena):
    out = tmp_path / "run"
    run_arena(make_config(tmp_path, synthetic_dataset, **{"dataset.max_items": 2, "protocol.tasks": ["TTS"]}), out)
    changed = {"dataset.max_items": 3, "protocol.tasks": ["TTS"], "protocol.seed": 12}
    with pytest.raises(RunError, match=r"different configuration \(dataset\.max_items, protocol\.seed changed"):
        run_arena(make_config(tmp_path, synthetic_dataset, **changed), out)


def test_transport_settings_change_and_the_run_resumes(tmp_path, synthetic_dataset, make_config, run_arena, read_csv):
    out = tmp_path / "run"
    base = {"dataset.max_items": 2, "protocol.tasks": ["TTS"]}
    run_arena(make_config(tmp_path, synthetic_dataset, **base), out)
    before = read_csv(out / "metrics" / "detection_metrics.csv")
    transport = {
        **base,
        "generators.dummy-generator": {"concurrency": 5},
        "scorer.batch_size": 3,
        "execution": {"deadline_seconds": 99, "retries": 1, "backoff_seconds": 0.1, "detector_batch_size": 2},
    }
    run_arena(make_config(tmp_path, synthetic_dataset, **transport), out)
    assert read_csv(out / "metrics" / "detection_metrics.csv") == before


def _orchestrator(config: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "voxarena.orchestrator", "run", str(config), "--out", str(out), "--no-progress"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


@pytest.mark.parametrize("kill_after_lines", [3, 12])
def test_killed_run_resumes_to_identical_metrics(tmp_path, synthetic_dataset, make_config, read_csv, kill_after_lines):
    overrides = {"dataset.max_items": 10, "generators": {"dummy-generator": {"parameters": {"sleep": 0.2}}}}
    cfg = make_config(tmp_path, synthetic_dataset, **overrides)
    reference = tmp_path / "uninterrupted"
    assert _orchestrator(cfg, reference).wait(300) == 0

    out = tmp_path / "killed"
    proc = _orchestrator(cfg, out)
    gens = out / "generations.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if gens.exists() and len(gens.read_text().splitlines()) >= kill_after_lines:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (out / "metrics" / "detection_metrics.csv").exists()
    time.sleep(0.5)  # the local services die with their parent
    second = _orchestrator(cfg, out)
    assert second.wait(300) == 0, second.stderr.read().decode()[-2000:]

    assert (out / "metrics" / "detection_metrics.csv").read_bytes() == (
        reference / "metrics" / "detection_metrics.csv"
    ).read_bytes()
    strip_rtf = lambda rows: [{k: v for k, v in r.items() if not k.startswith("rtf")} for r in rows]  # noqa: E731 (wall time)
    assert strip_rtf(read_csv(out / "metrics" / "generator_metrics.csv")) == strip_rtf(
        read_csv(reference / "metrics" / "generator_metrics.csv")
    )
    ids = [json.loads(line)["id"] for line in gens.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 20
    run = json.loads((out / "run.json").read_text())
    assert len(run["sessions"]) == 2


def test_a_changed_audio_file_is_refused_naming_the_item(tmp_path, synthetic_dataset):
    import shutil

    from voxarena.codec import AudioFormatError
    from voxarena.orchestrator.store.clips import read_clip

    src = sorted((Path(synthetic_dataset["root"]).parent / "audio").glob("*.wav"))[0]
    copy = tmp_path / src.name
    shutil.copy(src, copy)
    import hashlib

    sha = hashlib.sha256(copy.read_bytes()).hexdigest()
    assert read_clip(copy, sha, "item-1").samples.size > 0
    data = bytearray(copy.read_bytes())
    data[-10] ^= 0xFF
    copy.write_bytes(bytes(data))
    other = tmp_path / "moved.wav"
    copy.rename(other)
    with pytest.raises(AudioFormatError, match="item-1: .*no longer matches its recorded sha256"):
        read_clip(other, sha, "item-1")


def test_compose_stack_reaches_services_by_name(tmp_path, synthetic_dataset, make_config, run_arena):
    """--stack compose: a service without an address is the compose service of its name, round robin."""
    cfg = make_config(tmp_path, synthetic_dataset, **{"execution.startup_timeout_seconds": 1})
    with pytest.raises(RunError) as e:
        run_arena(cfg, tmp_path / "run", stack="compose")
    for name in ("dummy-generator", "dummy-detector", "scorer"):
        assert f"{name} at dns:///{name}:50051 was not SERVING" in str(e.value)
    with pytest.raises(RunError, match="unknown stack 'k8s'"):
        run_arena(cfg, tmp_path / "run2", stack="k8s")

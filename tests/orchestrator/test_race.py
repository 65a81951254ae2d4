"""``orchestrator race`` (issue 16 item 4): a three-round race on real speech (espeak-ng and flite seen,
griffin-lim and world-vocoder the candidates, lfcc-gmm retrained every round) finishes, adds the most
evasive generator each round, and, killed during a round's training and again during an evaluation,
resumes to the uninterrupted race's numbers byte for byte."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from voxarena.orchestrator.race.report import most_evasive
from voxarena.orchestrator.race.rounds import RaceError, load_race

ORCHESTRATOR = [sys.executable, "-m", "voxarena.orchestrator"]


def write_race(tmp: Path, speech: Path, **race) -> Path:
    common = {"prompts": str(speech / "prompts" / "librispeech-test-clean.trans.txt"), "max_per_speaker": 1}
    root = str(speech / "LibriSpeech")
    train = {
        "name": "race-train",
        "dataset": {
            "kind": "librispeech",
            "root": root,
            "subsets": ["train-clean-100"],
            "prompt_offset": 1000,
            "max_items": 8,
            **common,
        },
        "protocol": {"seed": 1000, "tasks": ["TTS", "RECONSTRUCT"]},
        "generators": {"espeak-ng": {}, "flite": {}},
        "scorer": {"metrics": ["rtf"]},
    }
    evaluation = {
        "name": "race-eval",
        "dataset": {"kind": "librispeech", "root": root, "subsets": ["test-clean"], "max_items": 4, **common},
        "protocol": {"seed": 7, "tasks": ["TTS", "RECONSTRUCT"]},
        "generators": {"espeak-ng": {}, "flite": {}, "griffin-lim": {}, "world-vocoder": {}},
        "detectors": {"lfcc-gmm": {}},
        # every round attacks its own retrained detector anew
        "conditions": {"attack-gmm": [{"attack": {"target": "lfcc-gmm", "queries": 4, "batch": 3, "snr_db": 30}}]},
        "scorer": {"metrics": ["rtf"], "bootstrap_resamples": 20},
    }
    (tmp / "train.yaml").write_text(yaml.safe_dump(train))
    (tmp / "eval.yaml").write_text(yaml.safe_dump(evaluation))
    spec = {
        "name": "test-race",
        "training": "train.yaml",
        "evaluation": "eval.yaml",
        "rounds": 3,
        "retrain": ["lfcc-gmm"],
        **race,
    }
    (tmp / "race.yaml").write_text(yaml.safe_dump(spec))
    return tmp / "race.yaml"


def race(race_file: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*ORCHESTRATOR, "race", str(race_file), "--out", str(out), "--no-progress"],
        capture_output=True,
        text=True,
        timeout=900,
    )


def rounds_of(out: Path) -> list[dict]:
    return json.loads((out / "race.json").read_text())["rounds"]


@pytest.fixture(scope="module")
def race_file(tmp_path_factory, speech_dir) -> Path:
    return write_race(tmp_path_factory.mktemp("race"), speech_dir)


@pytest.fixture(scope="module")
def uninterrupted(race_file: Path) -> Path:
    out = race_file.parent / "uninterrupted"
    done = race(race_file, out)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


@pytest.mark.slow
def test_race_rounds_add_the_most_evasive_generator(uninterrupted: Path):
    rounds = rounds_of(uninterrupted)
    assert [r["round"] for r in rounds] == [0, 1, 2]
    assert rounds[0]["trained_on"] == ["espeak-ng", "flite"] and rounds[0]["added"] is None
    for before, after in zip(rounds, rounds[1:]):
        assert after["added"] == before["next"]
        assert after["trained_on"] == before["trained_on"] + [after["added"]]
        # the pick is the candidate the retrained detector did worst on in the round before
        metrics = uninterrupted / before["run"] / "metrics" / "detection_metrics.csv"
        from voxarena.orchestrator.race.report import generator_eers

        candidates = sorted({"griffin-lim", "world-vocoder"} - set(before["trained_on"]))
        assert before["next"] == most_evasive(generator_eers(metrics), ["lfcc-gmm"], candidates, "clean")
    # every round's detector is the round's weights: the run recorded the sha256 the race trained
    for r in rounds:
        run = json.loads((uninterrupted / r["run"] / "run.json").read_text())
        info = json.dumps(run["services"]["lfcc-gmm"])
        assert all(sha in info for sha in r["weights"]["lfcc-gmm"]["files"].values()), r["round"]
        meta = json.loads((uninterrupted / r["weights"]["lfcc-gmm"]["dir"] / "metadata.json").read_text())
        assert meta["seen_generators"] == sorted(r["trained_on"])
    csv_text = (uninterrupted / "race_metrics.csv").read_text()
    assert csv_text.startswith("round,detector,retrained,condition,group,generator,eer")
    assert ",clean,added,mean," in csv_text and ",clean,unseen,mean," in csv_text
    attacks = (uninterrupted / "race_attacks.csv").read_text().splitlines()
    assert attacks[0] == "round,condition,target,accepted_clean,success_rate,eer_clean,eer_attacked"
    assert [line.split(",")[:3] for line in attacks[1:]] == [[str(k), "attack-gmm", "lfcc-gmm"] for k in range(3)]
    html = (uninterrupted / "race.html").read_text()
    assert "<svg" in html and "added in round 1" in html and "Attacks per round" in html
    assert all((uninterrupted / r["run"] / "report.html").exists() for r in rounds)


def _kill_when(race_file: Path, out: Path, ready) -> None:
    """Start the race and SIGKILL it (the orchestrator; its local services die with it) once ``ready()``."""
    proc = subprocess.Popen(
        [*ORCHESTRATOR, "race", str(race_file), "--out", str(out), "--no-progress"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    deadline = time.monotonic() + 600
    while not ready() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert proc.poll() is None, "the race ended before the kill point"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.mark.slow
def test_a_killed_race_resumes_to_the_same_numbers(race_file: Path, uninterrupted: Path):
    out = race_file.parent / "killed"
    # killed while round 1 trains (its LOAO folds are being fitted), then while round 2 evaluates
    _kill_when(race_file, out, lambda: (out / "round-1" / "loao" / "lfcc-gmm").exists())
    _kill_when(race_file, out, lambda: (out / "round-2" / "run" / "detections.jsonl").exists())
    done = race(race_file, out)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "complete, kept" in done.stderr  # the rounds done before the kill were not redone
    for name in ("race_metrics.csv", "race_attacks.csv"):
        assert (out / name).read_bytes() == (uninterrupted / name).read_bytes(), name
    assert rounds_of(out) == rounds_of(uninterrupted)
    for r in rounds_of(out):
        for name in ("detection_metrics.csv", "detection_by_label.csv"):
            mine = (out / r["run"] / "metrics" / name).read_bytes()
            assert mine == (uninterrupted / r["run"] / "metrics" / name).read_bytes(), (r["round"], name)


def test_race_file_errors_name_the_key(tmp_path: Path, speech_dir: Path):
    with pytest.raises(RaceError, match="retrain: 'aasist' is not a detector service"):
        load_race(write_race(tmp_path, speech_dir, retrain=["aasist"]))
    with pytest.raises(RaceError, match="rounds: 4 rounds add 3 generators, but eval.yaml has 2"):
        load_race(write_race(tmp_path, speech_dir, rounds=4))
    with pytest.raises(RaceError, match="pick_condition: 'gsm' is not a condition"):
        load_race(write_race(tmp_path, speech_dir, pick_condition="gsm"))
    with pytest.raises(RaceError, match="round: unknown key"):
        load_race(write_race(tmp_path, speech_dir, round=2))


def test_most_evasive_is_the_highest_mean_eer_ties_by_name():
    eers = {
        ("a", "g1", "clean"): {"eer": 0.2},
        ("b", "g1", "clean"): {"eer": 0.4},
        ("a", "g2", "clean"): {"eer": 0.3},
        ("b", "g2", "clean"): {"eer": 0.3},
        ("a", "g3", "clean"): {"eer": 0.9},  # no EER for b: not a candidate
    }
    assert most_evasive(eers, ["a", "b"], ["g3", "g2", "g1"], "clean") == "g1"
    assert most_evasive(eers, ["a"], ["g1", "g2", "g3"], "clean") == "g3"
    assert most_evasive(eers, ["a", "b"], ["g3"], "clean") is None

"""``orchestrator status``: coverage per stage and service, pending work of a cut-short run, grouped
failure reasons, exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from voxarena.orchestrator.run.config import load_config
from voxarena.orchestrator.run.pipeline import Arena
from voxarena.orchestrator.run.status import NotARunDirectory, run_status

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, speech_dir) -> Path:
    tmp = tmp_path_factory.mktemp("status")
    cfg = {
        "name": "st",
        "dataset": {
            "root": str(speech_dir / "LibriSpeech"),
            "subsets": ["test-clean"],
            "max_items": 4,
            "prompts": str(speech_dir / "prompts" / "librispeech-test-clean.trans.txt"),
        },
        "protocol": {"seed": 3, "tasks": ["TTS", "RECONSTRUCT"]},
        "generators": {"dummy-generator": {}, "misbehaving-generator": {"parameters": {"modes": "ok,internal"}}},
        "detectors": {"dummy-detector": {}},
        "scorer": {"metrics": ["rtf"], "bootstrap_resamples": 0},
        "execution": {"retries": 0},
    }
    path = tmp / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    Arena(load_config(path), tmp / "run", progress=False).run()
    return tmp / "run"


def test_coverage_of_a_finished_run(finished_run):
    st = run_status(finished_run)
    by = {(r["stage"], r["service"]): r for r in st["coverage"]}
    assert by[("generation", "dummy-generator")] == {
        **by[("generation", "dummy-generator")],
        "expected": 8,
        "done": 8,
        "failed": 0,
        "pending": 0,
    }
    bad = by[("generation", "misbehaving-generator")]  # TTS only: 4 items, modes alternate ok / internal
    assert bad["expected"] == 4 and bad["done"] + bad["failed"] == 4 and bad["failed"] >= 1
    assert all("INTERNAL" in reason for reason in bad["failure_reasons"])
    det = by[("detection", "dummy-detector")]
    assert det["expected"] == 4 + 8 + bad["done"] and det["pending"] == 0
    assert by[("measurement", "scorer")]["expected"] == 8 + bad["done"]
    assert st["metrics_written"] and st["failed"] == bad["failed"]


def test_a_cut_short_run_shows_pending_work_and_exits_3(finished_run, tmp_path):
    import shutil

    cut = tmp_path / "cut"
    shutil.copytree(finished_run, cut)
    lines = (cut / "detections.jsonl").read_text().splitlines()
    (cut / "detections.jsonl").write_text("\n".join(lines[:5]) + "\n")
    st = run_status(cut)
    det = next(r for r in st["coverage"] if r["stage"] == "detection")
    assert det["pending"] == det["expected"] - 5 and not st["complete"]
    out = subprocess.run(
        [sys.executable, "-m", "voxarena.orchestrator", "status", str(cut)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # Exit 3: a rerun has work to do (here: the pending detections).
    assert out.returncode == 3 and "incomplete:" in out.stdout and "pending" in out.stdout
    js = subprocess.run(
        [sys.executable, "-m", "voxarena.orchestrator", "status", str(cut), "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(js.stdout)["coverage"][0]["stage"] == "generation"


def test_not_a_run_directory(tmp_path):
    with pytest.raises(NotARunDirectory, match="not a run directory"):
        run_status(tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "voxarena.orchestrator", "status", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2 and "not a run directory" in " ".join(out.stderr.split())

"""The real arena in small: piper-vits and espeak-ng against lfcc-gmm with the real scorer, run
once straight through and once killed mid-run and resumed: the metrics must be identical."""

from __future__ import annotations

import csv
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]


def config(tmp_path: Path, speech_dir: Path) -> Path:
    cfg = yaml.safe_load(
        (REPO / "configs" / "demo.yaml")
        .read_text()
        .replace("${VOXARENA_SPEECH:-../../shared/data/speech}", str(speech_dir))
    )
    cfg["dataset"]["max_per_speaker"] = 1
    cfg["dataset"]["max_items"] = 8
    path = tmp_path / "demo-small.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def start(cfg: Path, out: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "voxarena.orchestrator", "run", str(cfg), "--out", str(out), "--no-progress"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_real_arena_and_resume_after_kill(tmp_path, speech_dir):
    cfg = config(tmp_path, speech_dir)
    straight = tmp_path / "straight"
    proc = start(cfg, straight)
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err.decode()[-3000:]
    assert "EER" in out.decode()  # the summary matrix

    all_det = rows(straight / "metrics" / "detection_metrics.csv")
    assert {r["condition"] for r in all_det} == {"clean", "gsm-8k", "noise-10db"}  # the demo's channels
    det = {(r["detector"], r["generator"]): r for r in all_det if r["condition"] == "clean"}
    assert set(det) == {("lfcc-gmm", "piper-vits"), ("lfcc-gmm", "espeak-ng"), ("lfcc-gmm", "pooled")}
    assert float(det[("lfcc-gmm", "espeak-ng")]["eer"]) < 0.25  # a seen attack
    assert det[("lfcc-gmm", "pooled")]["n_spoof"] == "16"
    gen = {r["generator"]: r for r in rows(straight / "metrics" / "generator_metrics.csv")}
    for g in ("piper-vits", "espeak-ng"):
        assert gen[g]["n_ok"] == "8"
        assert float(gen[g]["wer"]) < 0.5, gen[g]
        assert 0 < float(gen[g]["sim"]) < 1 and float(gen[g]["rtf"]) > 0

    killed = tmp_path / "killed"
    proc = start(cfg, killed)
    gens = killed / "generations.jsonl"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and not (gens.exists() and len(gens.read_text().splitlines()) >= 5):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    time.sleep(1)
    proc = start(cfg, killed)
    _, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err.decode()[-3000:]
    assert (killed / "metrics" / "detection_metrics.csv").read_bytes() == (
        straight / "metrics" / "detection_metrics.csv"
    ).read_bytes()
    no_rtf = lambda rs: [{k: v for k, v in r.items() if not k.startswith("rtf")} for r in rs]  # noqa: E731 (wall-clock)
    assert no_rtf(rows(killed / "metrics" / "generator_metrics.csv")) == no_rtf(
        rows(straight / "metrics" / "generator_metrics.csv")
    )

"""The nightly job (local stack): the first night pins the baseline, the next compares and passes,
a regressed night fails with a Markdown summary, only the newest KEEP runs are kept, and the leaderboard
is rebuilt over the kept nights after each."""

from __future__ import annotations

import csv
import os
import subprocess
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]


def night(config: Path, nightly: Path, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["compose/nightly/nightly.sh", str(config)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "STACK": "local", "NIGHTLY_DIR": str(nightly), "KEEP": "2", **env},
    )


def test_nightly_pins_compares_and_prunes(tmp_path, speech_dir):
    cfg = {
        "name": "nightly",
        "dataset": {"root": str(speech_dir / "LibriSpeech"), "subsets": ["test-clean"], "max_items": 4},
        "protocol": {"seed": 1, "tasks": ["RECONSTRUCT"]},
        "generators": {"dummy-generator": {}},
        "detectors": {"dummy-detector": {}},
        "scorer": {"metrics": ["rtf"], "bootstrap_resamples": 50},
    }
    config = tmp_path / "nightly.yaml"
    config.write_text(yaml.safe_dump(cfg))
    nightly = tmp_path / "nightly"
    first = night(config, nightly)
    assert first.returncode == 0 and "pinned" in first.stdout, first.stdout + first.stderr
    second = night(config, nightly)
    assert second.returncode == 0 and "regression check: PASS" in second.stdout, second.stdout + second.stderr
    assert "2 runs in the series" in second.stdout
    assert 'id="matrix"' in (nightly / "leaderboard" / "index.html").read_text()
    # A worse baseline-relative EER with a disjoint CI: pretend the baseline was much better.
    path = nightly / "baseline" / "metrics" / "detection_metrics.csv"
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r.update({"eer": "-1", "eer_ci_low": "-1.1", "eer_ci_high": "-0.9"})
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    third = night(config, nightly)
    assert third.returncode == 1 and "REGRESSION" in third.stdout
    dated = sorted(p for p in nightly.iterdir() if p.name.startswith("20"))
    assert len(dated) == 2 and (dated[-1] / "regression.md").exists() and (nightly / "baseline").is_dir()

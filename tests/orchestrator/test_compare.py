"""compare-check refuses runs of different protocols and says why; compare-timing matches scopes
and keeps the first request apart."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from voxarena.orchestrator.metrics.compare import (
    IncomparableRuns,
    check_comparable,
    compare_timing,
    protocol_differences,
)
from voxarena.orchestrator.run.config import load_config
from voxarena.orchestrator.run.pipeline import Arena

REPO = Path(__file__).resolve().parents[2]


def arena(tmp: Path, speech_dir: Path, name: str, seed: int) -> Path:
    cfg = {
        "name": name,
        "dataset": {
            "root": str(speech_dir / "LibriSpeech"),
            "subsets": ["test-clean"],
            "max_items": 4,
            "prompts": str(speech_dir / "prompts" / "librispeech-test-clean.trans.txt"),
        },
        "protocol": {"seed": seed, "tasks": ["TTS"]},
        "generators": {"dummy-generator": {}},
        "detectors": {"dummy-detector": {}},
        "scorer": {"metrics": ["rtf"], "bootstrap_resamples": 0},
    }
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    Arena(load_config(path), tmp / name, progress=False).run()
    return tmp / name


@pytest.fixture(scope="module")
def runs(tmp_path_factory, speech_dir):
    tmp = tmp_path_factory.mktemp("compare")
    return arena(tmp, speech_dir, "a", 1), arena(tmp, speech_dir, "b", 1), arena(tmp, speech_dir, "c", 2)


def test_same_protocol_is_comparable(runs):
    a, b, _ = runs
    assert protocol_differences(a, b) == []
    check_comparable(a, b)
    out = subprocess.run(
        [sys.executable, "-m", "voxarena.orchestrator", "compare-check", str(a), str(b)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0 and "comparable" in out.stdout


def test_different_protocol_is_refused_with_reasons(runs, tmp_path):
    a, _, c = runs
    with pytest.raises(IncomparableRuns) as e:
        check_comparable(a, c)
    assert any(d.startswith("manifest differs") for d in e.value.differences)  # item seeds follow the run seed
    assert "run seed differs (1 vs 2)" in e.value.differences
    # A service whose weights changed is named.
    record = json.loads((c / "run.json").read_text())
    record["services"]["dummy-detector"]["info"]["model"]["version"] = "9.9.9"
    (c / "run.json").write_text(json.dumps(record))
    assert "dummy-detector: version differs ('1.0.0' vs '9.9.9')" in protocol_differences(a, c)
    out = subprocess.run(
        [sys.executable, "-m", "voxarena.orchestrator", "compare-check", str(a), str(c)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 1 and "run seed differs" in out.stderr


def test_timing_matches_scopes_and_keeps_the_first_request_apart(runs):
    a, b, _ = runs
    rows = {r["service"]: r for r in compare_timing(a, b)}
    gen = rows["dummy-generator"]
    assert gen["comparable"] and gen["n_a"] == gen["n_b"] == 4
    walls = [json.loads(line)["timing"]["wall_seconds"] for line in (a / "generations.jsonl").read_text().splitlines()]
    first = sorted(
        (json.loads(line)["timing"]["start"], json.loads(line)["timing"]["wall_seconds"])
        for line in (a / "generations.jsonl").read_text().splitlines()
    )
    assert gen["first_a"] == first[0][1] and len(walls) == 4
    assert gen["median_rest_a"] == pytest.approx(sorted(w for _, w in first[1:])[1])
    # A scope that changed is not compared.
    record_rows = [json.loads(line) for line in (b / "generations.jsonl").read_text().splitlines()]
    for r in record_rows:
        r["timing"]["scope"] = "something else"
    (b / "generations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in record_rows))
    changed = [r for r in compare_timing(a, b) if r["service"] == "dummy-generator"]
    assert len(changed) == 2 and not any(r["comparable"] for r in changed)


def _edit_csv(path: Path, key: tuple[str, str], changes: dict) -> None:
    import csv

    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        if (r["detector"], r["generator"]) == key:
            r.update({k: str(v) for k, v in changes.items()})
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)


def test_regression_gate(runs, tmp_path):
    import shutil

    from voxarena.orchestrator.metrics.regression import compare_runs, load_thresholds, markdown

    a, b, _ = runs
    base, cur = tmp_path / "base", tmp_path / "cur"
    shutil.copytree(a, base)
    shutil.copytree(b, cur)
    key = ("dummy-detector", "dummy-generator")
    _edit_csv(base / "metrics" / "detection_metrics.csv", key, {"eer": 0.10, "eer_ci_low": 0.05, "eer_ci_high": 0.15})
    _edit_csv(cur / "metrics" / "detection_metrics.csv", key, {"eer": 0.11, "eer_ci_low": 0.06, "eer_ci_high": 0.16})
    assert compare_runs(base, cur, load_thresholds(None))["regressions"] == []  # within threshold
    _edit_csv(cur / "metrics" / "detection_metrics.csv", key, {"eer": 0.20, "eer_ci_low": 0.12, "eer_ci_high": 0.28})
    result = compare_runs(base, cur, load_thresholds(None))
    row = next(r for r in result["rows"] if r["row"] == "dummy-detector vs dummy-generator" and r["metric"] == "eer")
    assert row["verdict"] == "unconfirmed (CIs overlap)" and not result["regressions"]  # past threshold, CIs overlap
    _edit_csv(cur / "metrics" / "detection_metrics.csv", key, {"eer": 0.30, "eer_ci_low": 0.22, "eer_ci_high": 0.38})
    result = compare_runs(base, cur, load_thresholds(None))
    assert [(r["row"], r["metric"]) for r in result["regressions"]] == [("dummy-detector vs dummy-generator", "eer")]
    assert "REGRESSION" in markdown(result) and "FAIL" in markdown(result)
    out = subprocess.run(
        [sys.executable, "-m", "voxarena.orchestrator", "compare", str(base), str(cur)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 1 and "| detection | dummy-detector vs dummy-generator | eer |" in out.stdout
    loose = tmp_path / "t.yaml"
    loose.write_text("detection: {eer: 0.5}\n")
    out = subprocess.run(
        [sys.executable, "-m", "voxarena.orchestrator", "compare", str(base), str(cur), "--thresholds", str(loose)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0 and "PASS" in out.stdout
    bad = tmp_path / "bad.yaml"
    bad.write_text("detectoin: {eer: 0.5}\n")
    out = subprocess.run(
        [sys.executable, "-m", "voxarena.orchestrator", "compare", str(base), str(cur), "--thresholds", str(bad)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2 and "unknown section 'detectoin'" in out.stderr


def test_regression_gate_refuses_another_protocol(runs):
    a, _, c = runs
    out = subprocess.run(
        [sys.executable, "-m", "voxarena.orchestrator", "compare", str(a), str(c)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2 and "run seed differs" in out.stderr

"""``orchestrator report``: report.json + one static report.html, loaded in a real headless browser
(Debian chromium): it renders the heatmap, logs no console message; incomplete runs are refused."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from voxarena.orchestrator.report.build import ReportError, build_report, det_curve, write_report
from voxarena.orchestrator.report.tables import PALETTE
from voxarena.orchestrator.run.config import load_config
from voxarena.orchestrator.run.pipeline import Arena

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def run(tmp_path_factory, speech_dir) -> Path:
    tmp = tmp_path_factory.mktemp("report")
    cfg = {
        "name": "rep",
        "dataset": {"root": str(speech_dir / "LibriSpeech"), "subsets": ["test-clean", "test-other"], "max_items": 10},
        "protocol": {"seed": 4, "tasks": ["RECONSTRUCT"]},
        "generators": {"dummy-generator": {}},
        "detectors": {"dummy-detector": {}},
        "scorer": {"metrics": ["rtf", "psnr"], "bootstrap_resamples": 50},
    }
    path = tmp / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    Arena(load_config(path), tmp / "run", progress=False).run()
    return tmp / "run"


def test_det_curve_by_hand():
    # bona fide 2, 3; spoof 1, 2.5: thresholds sweep from accept-all to reject-all
    assert det_curve([2, 3], [1, 2.5]) == [(1.0, 0.0), (0.5, 0.0), (0.5, 0.5), (0.0, 0.5), (0.0, 1.0)]


def test_report_json_has_every_part(run):
    rep = build_report(run)
    assert rep["complete"] and rep["detectors"] == ["dummy-detector"] and rep["generators"] == ["dummy-generator"]
    assert {r["generator"] for r in rep["detection"]} == {"dummy-generator", "pooled"}
    assert rep["generation"][0]["generator"] == "dummy-generator" and "psnr_ci_low" in rep["generation"][0]
    assert {r["label"] for r in rep["detection_by_label"]} >= {"sex", "subset"}
    by_sex = {r["value"]: r for r in rep["generation_by_label"] if r["label"] == "sex"}
    assert set(by_sex) == {"F", "M"} and sum(int(r["n_ok"]) for r in by_sex.values()) == 10
    assert all(r["psnr"] not in ("", "nan") for r in by_sex.values())
    assert rep["det_curves"]["dummy-detector"][0] == [1.0, 0.0]
    assert rep["provenance"]["services"]["dummy-detector"]["licence"] == "Apache-2.0"
    assert len(rep["provenance"]["manifest"]["sha256"]) == 64 and rep["provenance"]["scorer_fingerprint"]


def test_page_loads_in_a_real_browser(run, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "Debian chromium is needed for this test (make setup installs it)"
    out = subprocess.run(
        [sys.executable, "-m", "voxarena.orchestrator", "report", str(run)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    page = (run / "report.html").as_uri()
    flags = [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--enable-logging=stderr",
        "--v=0",
        f"--user-data-dir={tmp_path / 'profile'}",
    ]
    dom = subprocess.run([chromium, *flags, "--dump-dom", page], capture_output=True, text=True, timeout=120)
    assert 'id="eer-heatmap"' in dom.stdout and 'id="det-curves"' in dom.stdout and "<polyline" in dom.stdout
    assert ":CONSOLE" not in dom.stderr, [line for line in dom.stderr.splitlines() if ":CONSOLE" in line]
    shot = tmp_path / "report.png"
    subprocess.run(
        [chromium, *flags, "--window-size=1200,900", f"--screenshot={shot}", page],
        capture_output=True,
        timeout=120,
        check=True,
    )
    import numpy as np
    from PIL import Image

    pixels = {tuple(p) for p in np.asarray(Image.open(shot).convert("RGB")).reshape(-1, 3).tolist()}
    palette = {tuple(int(c[i : i + 2], 16) for i in (1, 3, 5)) for c in PALETTE}
    assert pixels & palette, "the heatmap's colours are not on the screen"


def test_incomplete_run_is_refused_unless_asked(run, tmp_path):
    cut = tmp_path / "cut"
    shutil.copytree(run, cut)
    lines = (cut / "detections.jsonl").read_text().splitlines()
    (cut / "detections.jsonl").write_text("\n".join(lines[:3]) + "\n")
    with pytest.raises(ReportError, match="incomplete run.*pending"):
        write_report(cut)
    out = subprocess.run(
        [sys.executable, "-m", "voxarena.orchestrator", "report", str(cut)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 1 and "--allow-incomplete" in out.stderr
    write_report(cut, allow_incomplete=True)
    assert 'id="incomplete"' in (cut / "report.html").read_text()
    assert json.loads((cut / "report.json").read_text())["complete"] is False

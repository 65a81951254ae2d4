"""`orchestrator leaderboard`: three runs of one protocol and one of another, made with the test services.
The series and the run listed apart, ranks that refuse a cell with failed rows, each cell's history with the
service change recorded between runs and the changes the CIs confirm (checked against the CSVs directly),
the half-life order, and the site in a real headless browser (DOM and a screenshot)."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from voxarena.orchestrator.report.leaderboard import POOLED, Cell, Leaderboard, RunEntry, build_leaderboard, confirmed
from voxarena.orchestrator.run.config import load_config
from voxarena.orchestrator.run.pipeline import Arena

REPO = Path(__file__).resolve().parents[2]


def _run(tmp: Path, speech_dir: Path, name: str, generators: dict, seed: int = 5) -> Path:
    cfg = {
        "name": name,
        "dataset": {"root": str(speech_dir / "LibriSpeech"), "subsets": ["test-clean", "test-other"], "max_items": 8},
        "protocol": {"seed": seed, "tasks": ["TTS", "RECONSTRUCT", "CLONE"]},
        "generators": generators,
        "detectors": {"dummy-detector": {}, "whole-detector": {}},
        "scorer": {"metrics": [], "bootstrap_resamples": 200},
    }
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    Arena(load_config(path), tmp / name, progress=False).run()
    return tmp / name


@pytest.fixture(scope="module")
def runs(tmp_path_factory, speech_dir) -> list[Path]:
    tmp = tmp_path_factory.mktemp("leaderboard")
    first = _run(tmp, speech_dir, "night-1", {"dummy-generator": {}})
    second = _run(tmp, speech_dir, "night-2", {"dummy-generator": {}, "dummy-cloner": {}})
    # night 3: a generator that fails half its items joins (its cells are not fully measured), and the
    # dummy detector's service is recorded as a new version (the test services have one version to serve).
    third = _run(
        tmp,
        speech_dir,
        "night-3",
        {"dummy-generator": {}, "dummy-cloner": {}, "misbehaving-generator": {"parameters": {"modes": "ok,nan"}}},
    )
    record = json.loads((third / "run.json").read_text())
    record["services"]["dummy-detector"]["info"]["model"]["version"] = "1.1.0"
    (third / "run.json").write_text(json.dumps(record))
    other = _run(tmp, speech_dir, "other-seed", {"dummy-generator": {}}, seed=6)
    # the other-seed run is the oldest here: its start is moved back, so night-3 stays the newest
    record = json.loads((other / "run.json").read_text())
    record["started_at"] = "2000-01-01T00:00:00Z"
    (other / "run.json").write_text(json.dumps(record))
    return [first, second, third, other]


def _csv(run: Path) -> dict[tuple[str, str], dict]:
    with open(run / "metrics" / "detection_metrics.csv", newline="") as f:
        return {(r["detector"], r["generator"]): r for r in csv.DictReader(f) if r["condition"] == "clean"}


def test_series_ranks_refusals_history_and_confirmed_changes(runs):
    board = build_leaderboard(runs)
    assert [r.name for r in board.series] == ["night-1", "night-2", "night-3"]
    [(apart, why)] = board.apart
    assert apart.name == "other-seed" and any("run seed differs" in w for w in why)
    latest = board.latest
    assert set(latest.generators) == {"dummy-generator", "dummy-cloner", "misbehaving-generator"}
    bad = latest.cells[("dummy-detector", "misbehaving-generator")]
    assert not bad.measured and bad.n_spoof < bad.expected_spoof == 8
    assert "misbehaving-generator" not in board.generator_ranks()[0]
    ranked, _, refused = board.detector_ranks()
    assert ranked == {} and refused["dummy-detector"] == "not ranked: 1 of 3 cells not fully measured"
    assert set(board.column_ranks("misbehaving-generator")) == set()
    column = board.column_ranks("dummy-generator")
    rows = _csv(runs[2])
    eers = {d: float(rows[(d, "dummy-generator")]["eer"]) for d in ("dummy-detector", "whole-detector")}
    best = min(eers, key=eers.get)
    assert column[best] == 1
    history = board.history("dummy-detector", "dummy-generator")
    assert [h["run"].name for h in history] == ["night-1", "night-2", "night-3"]
    assert history[2]["changes"] == ["dummy-detector version: 1.0.0 -> 1.1.0"] and history[1]["changes"] == []
    for older, newer, h in ((runs[0], runs[1], history[1]), (runs[1], runs[2], history[2])):
        a, b = _csv(older)[("dummy-detector", "dummy-generator")], _csv(newer)[("dummy-detector", "dummy-generator")]
        apart_cis = float(a["eer_ci_high"]) < float(b["eer_ci_low"]) or float(b["eer_ci_high"]) < float(a["eer_ci_low"])
        assert h["confirmed"] == apart_cis
        assert h["cell"].eer == float(b["eer"])
    joined = board.joined()
    assert joined["dummy-generator"] < joined["dummy-cloner"] < joined["misbehaving-generator"]


def test_the_site_renders_in_a_real_browser(runs, tmp_path):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "Debian chromium is needed for this test (make setup installs it)"
    site = tmp_path / "site"
    out = subprocess.run(
        [sys.executable, "-m", "voxarena.orchestrator", "leaderboard", *map(str, runs), "--out", str(site)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "3 runs in the series, 1 listed apart" in out.stdout
    flags = ["--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr"]
    flags.append(f"--user-data-dir={tmp_path / 'profile'}")
    dom = subprocess.run([chromium, *flags, "--dump-dom", (site / "index.html").as_uri()], capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    page = dom.stdout
    assert 'id="matrix"' in page and 'id="half-life-dummy-detector"' in page and "<circle" in page
    assert page.count('class="c unranked"') == 4  # the misbehaving generator's row and the pooled row it is in
    assert 'data-generator="dummy-generator" data-rank="1"' in page
    assert "dummy-detector version: 1.0.0 -&gt; 1.1.0" in page and "run seed differs" in page
    assert ":CONSOLE" not in dom.stderr
    cell = subprocess.run([chromium, *flags, "--dump-dom", (site / "cells" / "dummy-detector__dummy-generator.html")
                           .as_uri()], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert 'id="history"' in cell.stdout and cell.stdout.count("<circle") == 3
    shot = tmp_path / "leaderboard.png"
    subprocess.run([chromium, *flags, "--window-size=1200,1400", f"--screenshot={shot}", (site / "index.html")
                    .as_uri()], capture_output=True, timeout=120, check=True)  # fmt: skip
    import numpy as np
    from PIL import Image

    pixels = np.asarray(Image.open(shot).convert("RGB")).reshape(-1, 3)
    assert (np.abs(pixels.astype(int) - [0xD7, 0x30, 0x27]).sum(axis=1) < 30).any(), "no chart point on screen"


def test_nothing_to_rank_is_a_clear_error(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "voxarena.orchestrator", "leaderboard", str(tmp_path), "--out", str(tmp_path / "s")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 1 and "not a run directory" in out.stderr


def _cell(eer: float, low: float, high: float, n_spoof: int = 10) -> Cell:
    return Cell(eer, low, high, n_spoof, 10, 20, 20, 0)


def _entry(name: str, started: str, cells: dict, generators: list[str]) -> RunEntry:
    entry = RunEntry(Path(name), name, started, {"services": {}}, generators, ["d"])
    entry.cells = cells
    return entry


def test_a_change_is_confirmed_only_with_both_cells_measured_and_their_cis_apart():
    a, b = _cell(0.10, 0.05, 0.15), _cell(0.30, 0.20, 0.40)
    assert confirmed(a, b) and confirmed(b, a)
    assert not confirmed(a, _cell(0.18, 0.14, 0.25))  # the intervals touch
    assert not confirmed(a, _cell(0.30, 0.20, 0.40, n_spoof=9))  # one clip short: not measured, not confirmed
    runs = [
        _entry("n1", "2026-01-01", {("d", "g"): a, ("d", POOLED): a}, ["g"]),
        _entry("n2", "2026-01-02", {("d", "g"): b, ("d", "h"): b, ("d", POOLED): b}, ["g", "h"]),
    ]
    board = Leaderboard(runs, [])
    [_, second] = board.history("d", "g")
    assert second["confirmed"]
    [_, pooled] = board.history("d", POOLED)  # another pool of generators: never a confirmed change
    assert not pooled["confirmed"] and pooled["changes"] == ["pooled over other generators: + h"]


def test_a_service_asked_for_other_parameters_is_a_change():
    old = _entry("n1", "2026-01-01", {("d", "g"): _cell(0.1, 0.05, 0.15)}, ["g"])
    new = _entry("n2", "2026-01-02", {("d", "g"): _cell(0.1, 0.05, 0.15)}, ["g"])
    old.record["config"] = {"generators": {"g": {"parameters": {"noise_scale": "0"}, "voice": ""}}}
    new.record["config"] = {"generators": {"g": {"parameters": {"noise_scale": "0.667"}, "voice": ""}}}
    old.record["services"] = new.record["services"] = {"g": {"info": {"model": {"name": "g", "version": "1"}}}}
    [_, second] = Leaderboard([old, new], []).history("d", "g")
    assert second["changes"] == ["g parameters: {'noise_scale': '0'} -> {'noise_scale': '0.667'}"]

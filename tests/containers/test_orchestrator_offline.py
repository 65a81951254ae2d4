"""The orchestrator image runs every offline command, with no scorer module, no service and no network:
ASVspoof score files in (``metrics detection``, ``metrics export-asvspoof``), the SoK composites
(``composite tts | reconstruction | detectors``), and a finished run's ``status``, ``report``,
``compare``, ``compare-check`` and ``compare-timing``. Each answer is checked against hand-computed
values or the host's answer to the same command (typer's runner, the same code in the test venv).

The files are made by the tests; the run is a small one on the host with the test-double services.
The pytest base directory is mounted at its own path, so the paths a run records resolve inside the
container. Needs the image (``make images``); marked ``container``."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from voxarena.orchestrator.cli.app import app

pytestmark = [pytest.mark.container, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
IMAGE = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]["orchestrator"]["image"]
SOK = REPO / "tests" / "scorers" / "data"
host = CliRunner()


def docker(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    if shutil.which("docker") is None:
        pytest.fail("docker is not installed: container tests need Docker and the images (make images)")
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def orchestrator(tmp_path_factory):
    """``orchestrator(*args) -> CompletedProcess``: the image's ``orchestrator`` command, run as this
    user, read-only but for the mounted pytest base directory, with no network."""
    if docker("image", "inspect", IMAGE).returncode != 0:
        pytest.fail(f"{IMAGE} is not built (make images)")
    base = tmp_path_factory.getbasetemp().resolve()

    def run(*args: str) -> subprocess.CompletedProcess:
        return docker(
            "run",
            "--rm",
            "--network",
            "none",
            "--read-only",
            "--tmpfs",
            "/tmp",
            "--user",
            f"{os.getuid()}:{os.getgid()}",
            "-v",
            f"{base}:{base}",
            "-w",
            str(base),
            IMAGE,
            *map(str, args),
        )

    return run


def ok(out: subprocess.CompletedProcess) -> str:
    assert out.returncode == 0, f"exit {out.returncode}\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}"
    return out.stdout


def on_host(*args) -> str:
    result = host.invoke(app, [str(a) for a in args])
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_image_has_the_statistics_cores_dependencies_and_no_torch(orchestrator):
    out = docker(
        "run",
        "--rm",
        "--entrypoint",
        "python",
        IMAGE,
        "-c",
        "import importlib.util as u; print(u.find_spec('scipy') is not None, u.find_spec('torch') is None)",
    )
    assert ok(out).split() == ["True", "True"], out.stdout


def test_metrics_detection_from_asvspoof_files(orchestrator, tmp_path):
    # bona fide .9 .8 .3, spoof .5 .2 .1 .4: EER between 1/3 missed and 1/4 accepted; minCllr needs scipy (PAV)
    trials = [("b1", 0.9), ("b2", 0.8), ("b3", 0.3), ("s1", 0.5), ("s2", 0.2), ("s3", 0.1), ("s4", 0.4)]
    scores, keys = tmp_path / "scores.tsv", tmp_path / "keys.tsv"
    scores.write_text("filename\tcm-score\n" + "".join(f"{n}\t{s}\n" for n, s in trials))
    keys.write_text(
        "filename\tcm-label\n" + "".join(f"{n}\t{'bonafide' if n[0] == 'b' else 'spoof'}\n" for n, _ in trials)
    )
    got = json.loads(ok(orchestrator("metrics", "detection", "--scores", scores, "--keys", keys)))
    assert got["eer"] == pytest.approx((1 / 3 + 0.25) / 2) and (got["n_bonafide"], got["n_spoof"]) == (3, 4)
    assert got["min_dcf"] == pytest.approx(0.5) and got["act_dcf"] == pytest.approx(1.0)
    cllr = 0.5 * (
        sum(math.log2(1 + math.exp(-x)) for x in (0.9, 0.8, 0.3)) / 3
        + sum(math.log2(1 + math.exp(x)) for x in (0.5, 0.2, 0.1, 0.4)) / 4
    )
    assert got["cllr"] == pytest.approx(cllr)
    assert got == pytest.approx(json.loads(on_host("metrics", "detection", "--scores", scores, "--keys", keys)))
    # a bad file is refused by name, as on the host
    keys.write_text("filename\tcm-label\nb1\tbonafide\n")
    refused = orchestrator("metrics", "detection", "--scores", scores, "--keys", keys)
    assert refused.returncode == 2 and "not in the keys" in refused.stdout + refused.stderr


@pytest.mark.parametrize(
    "kind, table", [("tts", "sok_table4_tts.csv"), ("reconstruction", "sok_table5_reconstruction.csv")]
)
def test_generator_composites_of_the_sok_tables(orchestrator, tmp_path, read_csv, kind, table):
    csv_path = tmp_path / table
    shutil.copy(SOK / table, csv_path)
    got = json.loads(ok(orchestrator("composite", kind, csv_path)))
    assert got == pytest.approx(json.loads(on_host("composite", kind, csv_path)))
    paper = {r["system"]: float(r["paper_overall"]) for r in read_csv(csv_path)}  # the paper's own overall score
    assert sorted(got, key=got.get) == sorted(paper, key=paper.get)


def test_detector_composite_by_hand(orchestrator, tmp_path):
    pairs, params = tmp_path / "pairs.csv", tmp_path / "params.csv"
    pairs.write_text(
        "detector,generator,eer,cllr,min_dcf\nA,g1,0.1,0.5,0.2\nA,g2,0.3,0.9,0.4\nB,g1,0.2,0.7,0.3\nB,g2,0.5,1.3,0.6\n"
    )
    params.write_text("detector,params_m\nA,100\nB,1\n")
    # normalised over all pairs: A (0, .5), B (.25, 1); log params: A 1, B 0
    got = json.loads(ok(orchestrator("composite", "detectors", pairs, "--params", params)))
    assert got == pytest.approx({"A": 0.8 * 0.25 + 0.2, "B": 0.8 * 0.625})


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, synthetic_dataset, make_config, run_arena) -> Path:
    tmp = tmp_path_factory.mktemp("offline-run")
    config = make_config(
        tmp,
        synthetic_dataset,
        **{
            "dataset.max_items": 6,
            "protocol.tasks": ["TTS", "CLONE"],
            "generators": {"dummy-generator": {}, "dummy-cloner": {}},
            "scorer.metrics": ["rtf"],
            "scorer.bootstrap_resamples": 20,
        },
    )
    out = tmp / "run"
    run_arena(config, out)
    return out


def test_export_asvspoof_and_score_the_export(orchestrator, run_dir, read_csv):
    ok(orchestrator("metrics", "export-asvspoof", run_dir, "--out", run_dir.parent / "image-export"))
    on_host("metrics", "export-asvspoof", run_dir, "--out", run_dir.parent / "host-export")
    image_files = sorted(p.name for p in (run_dir.parent / "image-export").iterdir())
    assert image_files == ["dummy-detector.scores.tsv", "keys.tsv"]
    for name in image_files:
        assert (run_dir.parent / "image-export" / name).read_bytes() == (
            run_dir.parent / "host-export" / name
        ).read_bytes()
    # The export holds the one-shot clean trials: its EER is the run's pooled row, computed by the scorer.
    got = json.loads(
        ok(
            orchestrator(
                "metrics",
                "detection",
                "--scores",
                run_dir.parent / "image-export" / image_files[0],
                "--keys",
                run_dir.parent / "image-export" / "keys.tsv",
            )
        )
    )
    pooled = next(
        r
        for r in read_csv(run_dir / "metrics" / "detection_metrics.csv")
        if r["generator"] == "pooled" and r["condition"] == "clean"
    )
    assert got["eer"] == pytest.approx(float(pooled["eer"]), abs=1e-9)
    assert (got["n_bonafide"], got["n_spoof"]) == (int(pooled["n_bonafide"]), int(pooled["n_spoof"]))


def test_composite_of_a_runs_generator_metrics(orchestrator, run_dir, read_csv):
    table = run_dir / "metrics" / "generator_metrics.csv"
    got = json.loads(ok(orchestrator("composite", "tts", table, "--weights", "rtf=1")))
    rtf = {r["generator"]: float(r["rtf"]) for r in read_csv(table)}
    # two systems on one metric: the faster gets 1, the other eps (0.1)
    assert set(got) == {"dummy-generator", "dummy-cloner"}
    assert got[min(rtf, key=rtf.get)] == pytest.approx(1.0) and got[max(rtf, key=rtf.get)] == pytest.approx(0.1)


def test_status_report_and_comparisons_of_a_run(orchestrator, run_dir):
    status = json.loads(ok(orchestrator("status", run_dir, "--json")))
    assert status["complete"] and status == json.loads(on_host("status", run_dir, "--json"))
    ok(orchestrator("report", run_dir))
    report = json.loads((run_dir / "report.json").read_text())
    assert (
        set(report["generators"]) == {"dummy-generator", "dummy-cloner"}
        and (run_dir / "report.html").stat().st_size > 0
    )
    assert "comparable" in ok(orchestrator("compare-check", run_dir, run_dir))
    ok(orchestrator("compare", run_dir, run_dir))  # a run against itself: no regression, exit 0
    timing = json.loads(ok(orchestrator("compare-timing", run_dir, run_dir, "--json")))
    assert timing["rows"] == json.loads(on_host("compare-timing", run_dir, run_dir, "--json"))["rows"]
    assert ok(orchestrator("datasets", "list")).strip()

"""The fault campaign (issue 13's Done-when; ``benchmarks/fault_campaign.py``), short: three SIGKILLs on
the orchestrator and the services at random points of a small run, then the conformance checker's bad
inputs on every service. Nothing is lost, duplicated, crashed, hung or answered INTERNAL, and the metrics
equal an uninterrupted run's. The campaign's own counters are checked to see what they should: a row
taken out, a row written twice, a changed metric, an INTERNAL answer."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from voxarena.sdk.testing import InProcessServer
from voxarena.services.testing import raw_faulty_services

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "fault_campaign.py"
ALL_HOLD = [
    "items lost 0",
    "items duplicated 0",
    "final metrics equal to an uninterrupted run: yes",
    "services crashed 0",
    "services hung 0",
    "INTERNAL for client mistakes 0",
]


@pytest.fixture(scope="module")
def campaign():
    spec = importlib.util.spec_from_file_location("fault_campaign", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def short_campaign(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    work = tmp_path_factory.mktemp("faults") / "work"
    argv = [sys.executable, str(SCRIPT), "--kills", "3", "--seed", "7", "--items", "4", "--keep", str(work)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=900, cwd=REPO), work


@pytest.mark.slow
def test_a_short_campaign_loses_nothing_and_every_service_survives_the_bad_inputs(short_campaign):
    result, _ = short_campaign
    lines = result.stdout.splitlines()
    assert lines[-6:] == ALL_HOLD and result.returncode == 0, result.stdout + result.stderr
    kills = [line for line in lines if line.startswith("kill ")]
    assert len(kills) == 3 and sum(": orchestrator at" in k for k in kills) == 2, kills
    sent = next(line for line in lines if line.startswith("bad inputs sent: "))
    for service in ("dummy-generator", "dummy-detector", "scorer"):  # the corpus reached every service
        assert int(sent.split(f"{service} ")[1].split(",")[0].split(")")[0]) >= 4, sent


@pytest.mark.slow
def test_the_counters_see_a_lost_row_a_duplicate_and_a_changed_metric(short_campaign, campaign, tmp_path):
    _, work = short_campaign
    reference, run = work / "reference", tmp_path / "run"
    shutil.copytree(work / "campaign", run)
    assert campaign.lost_and_duplicated(run)[:2] == (0, 0)
    assert campaign.differences(campaign.metric_files(reference), campaign.metric_files(run)) == []

    detections = (run / "detections.jsonl").read_text().splitlines(keepends=True)
    (run / "detections.jsonl").write_text("".join(detections[1:] + detections[2:3]))  # one gone, one twice
    assert campaign.lost_and_duplicated(run)[:2] == (1, 1)

    metrics = run / "metrics" / "detection_metrics.csv"
    header, first, *rest = metrics.read_text().splitlines(keepends=True)
    eer = header.split(",").index("eer")
    cells = first.split(",")
    cells[eer] = "0.5" if cells[eer] != "0.5" else "0.25"
    metrics.write_text("".join([header, ",".join(cells), *rest]))
    assert campaign.differences(campaign.metric_files(reference), campaign.metric_files(run)) == [
        "detection_metrics.csv"
    ]
    timing = json.loads((run / "metrics" / "coverage.json").read_text())
    assert timing["complete"] is True  # the comparison covers the JSON files too: coverage stays equal


def test_the_bad_input_corpus_counts_an_internal_answer(campaign):
    built = raw_faulty_services.build_server("detector", "internal_on_undecodable", "127.0.0.1:0")
    with InProcessServer(built).start() as served:
        corpus = campaign.HostileInputs(served.address)
        corpus.run()
    kinds = [kind for kind, _ in corpus.hostile.problems()]
    assert kinds == ["internal"], corpus.hostile.problems()
    assert len(corpus.hostile.answers) >= 10  # every bad input of the detector checks was sent

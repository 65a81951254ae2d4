"""``voxarena-conformance`` (voxarena-sdk's console script): the same options, checks, report and exit
codes as ``orchestrator conformance``, which calls the same ``run_conformance``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from voxarena.conformance import cli
from voxarena.services.testing.faulty_generator import FaultyGenerator

REPO = Path(__file__).resolve().parents[2]


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=300)


def test_the_console_script_takes_the_orchestrator_commands_options():
    import typer.main

    from voxarena.orchestrator.cli.app import app

    command = typer.main.get_command(app).commands["conformance"]
    orchestrator = {p.name for p in command.params}
    sdk = {a.dest for a in cli.parser()._actions if a.dest != "help"}
    assert sdk == orchestrator
    script = Path(sys.executable).with_name("voxarena-conformance")
    assert script.exists(), "voxarena-sdk's console script is not installed in this venv"
    helped = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0 and "--probe-audio" in helped.stdout


def test_a_conforming_service_passes_with_the_orchestrators_report(in_process_model, tmp_path):
    address = in_process_model(FaultyGenerator("none"))
    ours, theirs = tmp_path / "sdk.json", tmp_path / "orchestrator.json"
    sdk = run("-m", "voxarena.conformance", address, "--json", str(ours), "--timeout", "60")
    orchestrator = run("-m", "voxarena.orchestrator", "conformance", address, "--json", str(theirs), "--timeout", "60")
    assert sdk.returncode == 0, sdk.stdout + sdk.stderr
    assert orchestrator.returncode == 0, orchestrator.stdout + orchestrator.stderr
    a, b = json.loads(ours.read_text()), json.loads(theirs.read_text())
    assert set(a) == set(b) == {"address", "summary", "checks"}
    assert a["summary"] == b["summary"] and a["summary"]["FAIL"] == 0 and a["summary"]["PASS"] > 30
    assert [(c["name"], c["status"]) for c in a["checks"]] == [(c["name"], c["status"]) for c in b["checks"]]
    lines = sdk.stdout.splitlines()
    assert lines[0] == f"conformance of {address}" and lines[1].split() == ["check", "rule", "result", "detail"]
    summary = f"conformance: {a['summary']['PASS']} PASS, 0 FAIL, 0 WARN, {a['summary']['SKIP']} SKIP"
    assert lines[-1] == summary and summary in orchestrator.stdout
    assert any(line.startswith("answers (CLONE)") and " PASS " in line for line in lines)


def test_a_failure_exits_1_and_says_what_was_sent_and_what_came_back(in_process_model, tmp_path):
    report = tmp_path / "report.json"
    broken = run(
        "-m", "voxarena.conformance", in_process_model(FaultyGenerator("clone_crashes")), "--json", str(report)
    )
    assert broken.returncode == 1, broken.stdout + broken.stderr
    data = json.loads(report.read_text())
    crash = next(c for c in data["checks"] if c["status"] == "FAIL")
    assert crash["name"] == "answers (CLONE)" and crash["sent"].startswith("CLONE text=")
    assert crash["got"].startswith("INTERNAL: ") and data["summary"]["FAIL"] == 1
    assert any(line.startswith("answers (CLONE)") and " FAIL " in line for line in broken.stdout.splitlines())


def test_nobody_listening_fails_and_a_bad_option_exits_2(tmp_path):
    nobody = run("-m", "voxarena.conformance", "localhost:1", "--timeout", "5")
    assert nobody.returncode == 1 and "no gRPC server at localhost:1" in nobody.stdout
    half = run("-m", "voxarena.conformance", "localhost:1", "--tls-ca", "ca.pem", "--tls-cert", "me.pem")
    assert half.returncode == 2 and half.stderr.startswith("error: ") and "needs both cert and key" in half.stderr
    missing = run("-m", "voxarena.conformance", "localhost:1", "--probe-audio", str(tmp_path / "none.wav"))
    assert missing.returncode == 2 and f"--probe-audio {tmp_path / 'none.wav'}" in missing.stderr

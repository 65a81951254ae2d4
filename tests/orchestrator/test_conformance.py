"""``orchestrator conformance``: passes for services that honour the contract, fails with reasons
for one that breaks it on purpose, and says so in its exit code."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from orchestrator.conformance import run_conformance
from orchestrator.local_services import LocalService

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def service(tmp_path):
    started = []

    def start(name: str, module: str | None = None) -> str:
        svc = LocalService(name, module, tmp_path / f"{name}.log")
        svc.start()
        started.append(svc)
        return svc.wait_ready(60)

    yield start
    for svc in started:
        svc.stop()


@pytest.mark.parametrize("name", ["dummy-generator", "dummy-detector"])
def test_conforming_services_pass(service, name):
    checks = run_conformance(service(name), timeout=60)
    failed = [c for c in checks if c.status == "FAIL"]
    assert not failed, failed
    names = {c.name for c in checks if c.status == "PASS"}
    assert {"health SERVING", "reflection", "GetInfo fields", "echoes request_id", "timing fields",
            "deterministic as declared", "empty request_id rejected", "bad audio rejected (NaN)",
            "oversize message rejected"} <= names
    if name == "dummy-generator":
        assert {"echoes seed", "empty text rejected", "unsupported task rejected"} <= names


def test_broken_service_fails_with_reasons(service):
    checks = {c.name: c for c in run_conformance(service("misbehaving-generator"), timeout=60)}
    assert checks["GetInfo fields"].status == "FAIL" and "licence" in checks["GetInfo fields"].detail
    assert checks["timing fields"].status == "FAIL" and "start/end missing" in checks["timing fields"].detail
    assert checks["empty text rejected"].status == "FAIL"
    assert "expected INVALID_ARGUMENT, the call succeeded" in checks["empty text rejected"].detail


def test_cli_exit_codes(service):
    good, bad = service("dummy-detector"), service("misbehaving-generator")
    ok = subprocess.run([sys.executable, "-m", "orchestrator", "conformance", good], cwd=REPO, capture_output=True,
                        text=True, timeout=300)
    assert ok.returncode == 0 and "0 FAIL" in ok.stdout
    broken = subprocess.run([sys.executable, "-m", "orchestrator", "conformance", bad], cwd=REPO, capture_output=True,
                            text=True, timeout=300)
    assert broken.returncode == 1 and "FAIL" in broken.stdout
    nobody = subprocess.run([sys.executable, "-m", "orchestrator", "conformance", "localhost:1", "--timeout", "5"],
                            cwd=REPO, capture_output=True, text=True, timeout=300)
    assert nobody.returncode == 1 and "no gRPC server at localhost:1" in nobody.stdout


@pytest.mark.parametrize("module", ["services.template.generator", "services.template.detector"])
def test_the_templates_a_vendor_copies_conform(service, module):
    checks = run_conformance(service(module.rsplit(".", 1)[1], module), timeout=60)
    assert not [c for c in checks if c.status == "FAIL"], checks


def test_the_scorer_conforms(service):
    checks = {c.name: c for c in run_conformance(service("scorer"), timeout=120)}
    assert not [c for c in checks.values() if c.status == "FAIL"], checks
    assert checks["EER of known trials"].status == "PASS" and checks["unknown metric rejected"].status == "PASS"

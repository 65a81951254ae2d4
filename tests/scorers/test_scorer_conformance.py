"""Conformance catches a scorer that answers a client mistake INTERNAL or lets one bad clip fail its
batch (issue 13 items 1 and 3), and passes the real one (the control)."""

from __future__ import annotations

import pytest

from voxarena.conformance import STILL_SERVING, run_conformance
from voxarena.sdk.testing import InProcessServer
from voxarena.services.testing.faulty_scorer import FAULTS, build_server

CAUGHT_BY = {
    "confidence_unchecked": ("bootstrap confidence 1.5 refused", "INTERNAL"),
    "batch_fails_on_bad_clip": ("bad clip of a batch fails alone", "INVALID_ARGUMENT"),
}


@pytest.fixture
def scorer():
    servers: list[InProcessServer] = []

    def start(fault: str) -> str:
        servers.append(InProcessServer(build_server(fault)).start())
        return servers[-1].address

    yield start
    for served in servers:
        served.stop()


def test_every_fault_has_a_case():
    assert set(CAUGHT_BY) == set(FAULTS) - {"none"}


def test_the_control_passes(scorer):
    checks = {c.name: c for c in run_conformance(scorer("none"), timeout=30)}
    assert not [c for c in checks.values() if c.status == "FAIL"], checks
    for name in ("bootstrap confidence 1.5 refused", "bad clip of a batch fails alone", STILL_SERVING):
        assert checks[name].status == "PASS"


@pytest.mark.parametrize("fault", sorted(CAUGHT_BY))
def test_the_fault_is_caught(scorer, fault):
    name, text = CAUGHT_BY[fault]
    checks = run_conformance(scorer(fault), timeout=30)
    failed = [c for c in checks if c.status == "FAIL"]
    assert [c.name for c in failed] == [name], failed
    assert text in failed[0].got and failed[0].sent

"""The contract's rules are written once, in the .proto comments, and conformance tests exactly them.

- ``contract_rules.py`` is what ``proto/extract_rules.py`` makes of the .proto files (``make proto``);
- every check maps to a rule and every rule is tested by a check (conformance run on a generator, a
  cloner, a detector and a transform in process; the scorer's rules by their patterns);
- a MUST broken is a FAIL, a SHOULD broken a WARN, and ``--strict`` fails on a WARN;
- a server written from the .proto alone with stock grpcio (the raw services: no SDK) passes with no FAIL.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from voxarena.conformance import run_conformance
from voxarena.conformance.cli import exit_code
from voxarena.conformance.contract_rules import RULES
from voxarena.conformance.rules import BY_ROLE, COMMON, UnknownCheck, rule_of
from voxarena.conformance.session import Check
from voxarena.sdk.testing import InProcessServer, serve_in_process
from voxarena.services.testing import raw_faulty_services
from voxarena.services.testing.dummy_cloner import DummyCloner
from voxarena.services.testing.dummy_detector import DummyDetector
from voxarena.services.testing.dummy_generator import DummyGenerator
from voxarena.services.testing.dummy_tracer import DummyTracer
from voxarena.services.testing.faulty_generator import FaultyGenerator
from voxarena.services.transforms.channel.model import ChannelModel

REPO = Path(__file__).resolve().parents[2]


class RatedDetector(DummyDetector):
    """A detector that declares the rates it accepts (DetectorInfo.sample_rates)."""

    sample_rates = (16000,)


def test_the_rules_table_is_what_the_proto_files_state():
    checked = subprocess.run(
        [sys.executable, str(REPO / "proto" / "extract_rules.py"), "--check"], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stderr
    assert {grade for grade, _, _ in RULES.values()} == {"MUST", "SHOULD"}
    for rule_id, (_, text, where) in RULES.items():
        file, line = where.split(":")
        source = (REPO / "proto" / "voxarena" / "v1" / file).read_text().splitlines()[int(line) - 1]
        assert f"[{rule_id}]" in source and text.startswith(source.split("] ", 1)[1].strip()), (rule_id, source)


def test_every_mapped_rule_exists_and_every_rule_is_mapped():
    mapped = {rule_id for table in (COMMON, *BY_ROLE.values()) for _, rule_id in table}
    assert mapped == set(RULES), (mapped - set(RULES), set(RULES) - mapped)


def test_a_check_with_no_rule_is_a_bug_named_as_such():
    with pytest.raises(UnknownCheck, match="'made-up check'"):
        rule_of("generator", "made-up check")


def _served(model):
    return serve_in_process(model)


@pytest.fixture(scope="module")
def reports():
    """role -> the checks of conforming services of that role (the scorer apart: its own test)."""
    models = {
        "generator": [DummyGenerator(), DummyCloner()],
        "detector": [DummyDetector(), RatedDetector(), DummyTracer()],
    }
    models["transform"] = [ChannelModel()]
    out: dict[str, list[Check]] = {}
    for role, instances in models.items():
        for model in instances:
            with serve_in_process(model) as served:
                out.setdefault(role, []).extend(run_conformance(served.address, timeout=60))
    return out


def test_every_check_names_its_rule_and_conforming_services_break_none(reports):
    for role, checks in reports.items():
        assert all(c.rule is not None and c.rule.id in RULES for c in checks), role
        assert [c for c in checks if c.status in ("FAIL", "WARN")] == [], role


def test_every_rule_but_the_scorers_is_tested_by_a_check(reports):
    tested = {c.rule.id for checks in reports.values() for c in checks if c.rule and c.status != "SKIP"}
    scorer = {rule_id for _, rule_id in BY_ROLE["scorer"]}
    assert set(RULES) - scorer - tested == set(), set(RULES) - scorer - tested


def test_a_must_broken_fails_and_a_should_broken_warns():
    with _served(FaultyGenerator("silent")) as served:
        checks = run_conformance(served.address, timeout=60)
    silent = [c for c in checks if c.name.startswith("audio not silent")]
    assert silent and {c.status for c in silent} == {"FAIL"} and silent[0].rule.id == "generator.not-silent"
    assert exit_code(checks) == 1
    raw = InProcessServer(raw_faulty_services.build_server("detector", "internal_on_undecodable", "127.0.0.1:0"))
    with raw.start() as served:
        checks = run_conformance(served.address, timeout=60)
    warned = [c for c in checks if c.status == "WARN"]
    assert [c.rule.id for c in warned] == ["request.undecodable"] and "INTERNAL" in warned[0].got
    assert exit_code(checks) == 0 and exit_code(checks, strict=True) == 1


@pytest.mark.parametrize("role", ["generator", "detector"])
def test_a_server_from_the_proto_alone_passes_every_must(role):
    """The raw services: stock grpcio, every rule of the .proto followed by hand, no SDK."""
    with InProcessServer(raw_faulty_services.build_server(role, "none", "127.0.0.1:0")).start() as served:
        checks = run_conformance(served.address, timeout=60)
    assert [c for c in checks if c.status == "FAIL"] == []
    assert exit_code(checks) == 0
    assert all(re.fullmatch(r"[a-z]+\.[a-z-]+", c.rule.id) for c in checks if c.rule)

"""Failed rows: one constructor, one enum of kinds, the codes rows have always carried."""

from __future__ import annotations

import grpc
import pytest

from voxarena.orchestrator.fleet.clients import CallFailed
from voxarena.orchestrator.store.failures import (
    Failure,
    call_failed_row,
    failed_row,
    failure_kind,
    item_error_row,
    settled,
)
from voxarena.orchestrator.store.records import GenerationRecord, Row

BASE = GenerationRecord(id="g|TTS|u1", status="pending", generator="g", task="TTS", item="u1", seed=7)


@pytest.mark.parametrize(
    "code,kind",
    [
        (grpc.StatusCode.UNAVAILABLE, Failure.TRANSIENT),
        (grpc.StatusCode.DEADLINE_EXCEEDED, Failure.TRANSIENT),
        (grpc.StatusCode.INTERNAL, Failure.SERVICE_ERROR),
        (grpc.StatusCode.UNKNOWN, Failure.SERVICE_ERROR),
        (grpc.StatusCode.INVALID_ARGUMENT, Failure.INPUT),
        (grpc.StatusCode.UNIMPLEMENTED, Failure.INPUT),
    ],
)
def test_a_failed_call_keeps_its_status_name_and_gets_its_kind(code, kind):
    row = call_failed_row(BASE, CallFailed(code, "boom", 3), attempts=3)
    assert row.to_dict() == {
        **BASE.to_dict(),
        "status": "failed",
        "failure": kind.value,
        "code": code.name,
        "attempts": 3,
        "reason": f"g|TTS|u1: {code.name}: boom",
    }


def test_kinds_without_a_status_have_their_recorded_codes():
    assert failed_row(BASE, Failure.INPUT, "r").code == "BAD_INPUT"
    assert failed_row(BASE, Failure.INVALID_RESPONSE, "r").code == "INVALID_RESPONSE"
    assert failed_row(BASE, Failure.UPSTREAM_FAILED, "r").code == "UPSTREAM_FAILED"
    assert BASE.status == "pending"  # the base is left as it was
    with pytest.raises(ValueError, match="g\\|TTS\\|u1: a transient failure needs its status code"):
        failed_row(BASE, Failure.TRANSIENT, "r")


def test_a_detectors_item_error_by_its_numeric_code():
    row = item_error_row(BASE, 3, "g|TTS|u1: audio is 700.0 s")  # 3 = INVALID_ARGUMENT
    assert (row.code, row.failure, row.reason) == ("ITEM_3", "input", "g|TTS|u1: audio is 700.0 s")
    assert item_error_row(BASE, 13, "x").failure == "service_error"  # 13 = INTERNAL


def _failed(**fields: str) -> Row:
    return Row(id="x", status="failed", **fields)


def test_rows_from_before_kinds_get_theirs_from_their_code():
    assert failure_kind(_failed(code="BAD_INPUT")) == "input"
    assert failure_kind(_failed(code="DEADLINE_EXCEEDED")) == "transient"
    assert failure_kind(_failed(code="ITEM_13")) == "service_error"
    assert failure_kind(_failed(code="UPSTREAM_FAILED")) == "upstream_failed"
    assert failure_kind(_failed(reason="no code at all")) == "unrecorded"
    assert failure_kind(_failed(code="INTERNAL", failure="transient")) == "transient"  # the recorded kind wins


def test_resume_redoes_nothing_recorded_unless_failures_are_retried():
    ok, failed = Row(id="x", status="ok"), failed_row(BASE, Failure.INPUT, "r")
    assert settled(ok, False) and settled(ok, True)
    assert settled(failed, False) and not settled(failed, True)
    assert not settled(None, False)

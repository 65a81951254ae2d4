"""A failed row: the one way any stage records that a piece of work did not succeed.

Every failure is a row (never a missing one) with its ``reason`` naming the item, the ``code`` it has
always carried (a gRPC status name, ``ITEM_<n>`` for a detector's per-clip error, ``BAD_INPUT``,
``INVALID_RESPONSE`` or ``UPSTREAM_FAILED``) and its kind, ``failure``, from one enum, so resume,
``status`` and the report can treat kinds alike.
"""

from __future__ import annotations

import dataclasses
from enum import Enum
from typing import Any, TypeGuard, TypeVar

import grpc

from voxarena.orchestrator.errors import CallFailed
from voxarena.orchestrator.store.records import FAILED, Row

R = TypeVar("R", bound=Row)


class Failure(str, Enum):
    """What kind of failure a row records."""

    TRANSIENT = "transient"  # the service was unavailable or too slow; the same call may pass later
    SERVICE_ERROR = "service_error"  # the service failed on its side (INTERNAL, UNKNOWN, ...)
    INVALID_RESPONSE = "invalid_response"  # an answer that breaks the contract (echo, audio, timing, ...)
    INPUT = "input"  # the input could not be made (unreadable or changed file, no text, a channel that
    #                  cannot carry the clip) or the service refused it as a bad or unsupported request
    UPSTREAM_FAILED = "upstream_failed"  # the work it builds on failed (an I2D chain's earlier iteration)


# Status codes worth another try later (a plain rerun retries them), and those that mean "this request is not
# acceptable" (kept on a rerun unless --retry-failed).
_TRANSIENT = {
    grpc.StatusCode.UNAVAILABLE,
    grpc.StatusCode.DEADLINE_EXCEEDED,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.ABORTED,
    grpc.StatusCode.CANCELLED,
}
_REFUSED = {
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.OUT_OF_RANGE,
    grpc.StatusCode.UNIMPLEMENTED,
    grpc.StatusCode.FAILED_PRECONDITION,
}
_CODE_OF = {
    Failure.INPUT: "BAD_INPUT",
    Failure.INVALID_RESPONSE: "INVALID_RESPONSE",
    Failure.UPSTREAM_FAILED: "UPSTREAM_FAILED",
}
_BY_NUMBER = {code.value[0]: code for code in grpc.StatusCode}


def failure_of_status(code: grpc.StatusCode) -> Failure:
    """The kind of a failed call, by its status code."""
    if code in _TRANSIENT:
        return Failure.TRANSIENT
    if code in _REFUSED:
        return Failure.INPUT
    return Failure.SERVICE_ERROR


def failed_row(base: R, failure: Failure, reason: str, code: str | None = None, **fields: Any) -> R:
    """``base`` (the row's identity: id, service, item, ...) and ``fields``, recorded as failed (a new
    record: ``base`` is left as it is).

    ``code`` defaults to the one the kind has always been recorded with (``BAD_INPUT`` for an input,
    ``INVALID_RESPONSE``, ``UPSTREAM_FAILED``); a failed call passes its status name.
    """
    if code is None:
        if failure not in _CODE_OF:
            raise ValueError(f"{base.id}: a {failure.value} failure needs its status code")
        code = _CODE_OF[failure]
    return dataclasses.replace(base, **fields, status=FAILED, failure=failure.value, code=code, reason=reason)


def call_failed_row(base: R, error: CallFailed, **fields: Any) -> R:
    """A row for a call that failed for good: the reason names the row, the code is the status name."""
    return failed_row(base, failure_of_status(error.code), f"{base.id}: {error}", error.code.name, **fields)


def item_error_row(base: R, code: int, message: str) -> R:
    """A row for one clip a detector refused inside a batch (``ItemError``: a numeric status code)."""
    status = _BY_NUMBER.get(code, grpc.StatusCode.UNKNOWN)
    return failed_row(base, failure_of_status(status), message, f"ITEM_{code}")


def failure_kind(row: Row) -> str:
    """A failed row's kind; rows written before kinds were recorded get theirs from the code they carry."""
    if row.failure:
        return row.failure
    code = row.code or ""
    for failure, recorded in _CODE_OF.items():
        if code == recorded:
            return failure.value
    if code.startswith("ITEM_") and code[5:].isdigit():
        return failure_of_status(_BY_NUMBER.get(int(code[5:]), grpc.StatusCode.UNKNOWN)).value
    if code in grpc.StatusCode.__members__:
        return failure_of_status(grpc.StatusCode[code]).value
    return "unrecorded"


def is_transient(row: Row) -> bool:
    """A failed row that another try may turn into a result (the service was away, busy or too slow)."""
    return not row.ok and failure_kind(row) == Failure.TRANSIENT.value


def settled(row: R | None, retry_failed: bool) -> TypeGuard[R]:
    """Resume: a recorded row is not redone, unless it failed transiently (always retried) or failed
    for good and ``--retry-failed`` asks for every failure to be retried."""
    if row is None:
        return False
    if row.ok:
        return True
    return not retry_failed and not is_transient(row)

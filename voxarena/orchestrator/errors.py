"""The orchestrator's errors that every room raises or records, at the bottom of its rooms' order (they import
no room): a run that cannot start or go on (``RunError``, the base of the run directory's, the lock's and
the race's errors) and a gRPC call that failed for good (``CallFailed``, raised by the clients of the
service fleet and recorded by the run store as a failed row)."""

from __future__ import annotations

import grpc


class RunError(RuntimeError):
    """The run cannot start or continue (bad directory, changed inputs, a service that will not start)."""


class CallFailed(RuntimeError):
    """A call failed for good: carries the status code and the attempts made."""

    def __init__(self, code: grpc.StatusCode, details: str, attempts: int) -> None:
        super().__init__(f"{code.name}: {details}")
        self.code, self.details, self.attempts = code, details, attempts

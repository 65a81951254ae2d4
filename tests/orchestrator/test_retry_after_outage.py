"""``call_with_retry`` with an outage, on a scripted method and a scripted outage (no server): UNAVAILABLE
is retried ``retries`` times, then the outage is asked whether the service is back; if it is, the call
starts over with a fresh retry budget; RESOURCE_EXHAUSTED (busy) is retried ``retries`` times and never
waited out; any other status fails at once without asking it.

test_clients.py checks the retry rule against a real server and test_incomplete_runs.py a service
going away mid-run; these pin the attempt counts of the rule above in milliseconds (the mutation
target ``clients``'s selection). Expected counts are worked out from the rule, call by call.
"""

from __future__ import annotations

import grpc
import pytest

from voxarena.orchestrator.fleet.clients import CallFailed, call_with_retry


class Status(grpc.RpcError):
    def __init__(self, code: grpc.StatusCode) -> None:
        self._code = code

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return f"scripted {self._code.name}"


class Method:
    """Fails with the scripted codes in order, then answers "ok"; counts its calls."""

    def __init__(self, *codes: grpc.StatusCode, forever: grpc.StatusCode | None = None) -> None:
        self.codes, self.forever, self.calls = list(codes), forever, 0

    def __call__(self, request: object, timeout: float) -> str:
        self.calls += 1
        if self.codes:
            raise Status(self.codes.pop(0))
        if self.forever is not None:
            raise Status(self.forever)
        return "ok"


class Outage:
    """Answers the scripted verdicts in order (then False); counts how often it is asked."""

    def __init__(self, *verdicts: bool) -> None:
        self.verdicts, self.asked = list(verdicts), 0

    def wait_until_back(self) -> bool:
        self.asked += 1
        return self.verdicts.pop(0) if self.verdicts else False


U = grpc.StatusCode.UNAVAILABLE


def call(method: Method, retries: int, outage: Outage | None) -> tuple[str, int]:
    return call_with_retry(method, object(), deadline=1.0, retries=retries, backoff=0.0, outage=outage)  # type: ignore[arg-type]


def test_a_service_back_after_an_outage_is_called_again_with_a_fresh_budget():
    # retries 2: calls 1-3 UNAVAILABLE (two retries), the outage says back, call 4 answers.
    method, outage = Method(U, U, U), Outage(True)
    assert call(method, 2, outage) == ("ok", 4) and outage.asked == 1
    # Back once, then never: 3 calls, back, 3 more (the budget is two retries again), given up: 6.
    method, outage = Method(forever=U), Outage(True, False)
    with pytest.raises(CallFailed) as e:
        call(method, 2, outage)
    assert (e.value.code, e.value.attempts, method.calls, outage.asked) == (U, 6, 6, 2)


def test_without_an_outage_or_with_one_given_up_the_retries_are_all():
    method = Method(forever=U)
    with pytest.raises(CallFailed) as e:
        call(method, 3, None)
    assert (e.value.attempts, method.calls) == (4, 4)
    method, outage = Method(forever=U), Outage(False)
    with pytest.raises(CallFailed) as e:
        call(method, 0, outage)
    assert (e.value.attempts, outage.asked) == (1, 1)


@pytest.mark.parametrize(
    "code",
    [
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.INTERNAL,
        grpc.StatusCode.DEADLINE_EXCEEDED,
        grpc.StatusCode.UNIMPLEMENTED,
    ],
)
def test_any_other_status_fails_at_once_and_never_waits_for_the_service(code):
    method, outage = Method(code), Outage(True)
    with pytest.raises(CallFailed) as e:
        call(method, 3, outage)
    assert (e.value.code, e.value.attempts, e.value.details, outage.asked) == (code, 1, f"scripted {code.name}", 0)


def test_a_busy_service_is_retried_within_the_budget_and_never_waited_out_as_an_outage():
    busy = grpc.StatusCode.RESOURCE_EXHAUSTED
    # retries 2: calls 1-2 busy, call 3 answers.
    method, outage = Method(busy, busy), Outage(True)
    assert call(method, 2, outage) == ("ok", 3) and outage.asked == 0
    # Busy throughout: 1 + 2 retries, then failed (transient) without asking the outage.
    method, outage = Method(forever=busy), Outage(True)
    with pytest.raises(CallFailed) as e:
        call(method, 2, outage)
    assert (e.value.code, e.value.attempts, method.calls, outage.asked) == (busy, 3, 3, 0)

"""The fault campaign's bad inputs (``fault_campaign.py``): every hostile request of the conformance checker
(``voxarena.conformance``: the checks it makes through ``Session.expect_error``, each followed by a health
check), with the code each was answered with and how long it took."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import grpc

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from voxarena.conformance.session import Conformance, Session  # noqa: E402

UNANSWERED = ("reachable", "health SERVING")  # the corpus's first checks: a service that does not answer
CALL_SECONDS = 30.0  # deadline of every call, the bad inputs' included: a call that reaches it hung


class HostileSession(Session):
    """The conformance session, keeping the code each bad input was answered with and how long it took."""

    answers: list[tuple[str, str, float]]

    def expect_error(
        self, name: str, call: Callable[[], object], sent: str, codes: tuple[grpc.StatusCode, ...]
    ) -> None:
        n = len(self.checks)
        t0 = time.monotonic()
        super().expect_error(name, call, sent, codes)
        got = self.checks[n].got  # "CODE: 'details'", or "a normal response ..." when it succeeded
        self.answers.append((name, got.split(":", 1)[0] if ":" in got else "OK", time.monotonic() - t0))

    def problems(self) -> list[tuple[str, str]]:
        """(kind, what): ``internal`` answers, ``hung`` calls (their deadline) or a service that did not
        answer, ``crashed`` (not SERVING after a bad input); ``note``: another wrong code, for the record."""
        fails = {c.name for c in self.checks if c.status == "FAIL"}
        out = []
        for name, code, secs in self.answers:
            kind = {"INTERNAL": "internal", "DEADLINE_EXCEEDED": "hung"}.get(code, "note" if name in fails else "")
            if kind:
                out.append((kind, f"'{name}' answered {code} in {secs:.1f} s"))
        out += [("hung", f"{c.name}: {c.detail}") for c in self.checks if c.name in UNANSWERED and c.status == "FAIL"]
        return out + [("crashed", f"not SERVING {after}") for after in self.not_serving_after]


class HostileInputs(Conformance):
    def __init__(self, address: str) -> None:
        super().__init__(address, CALL_SECONDS)
        s = self.session
        self.hostile = HostileSession(s.address, s.channel, s.timeout, s.probes, open_channel=s.open_channel)
        self.hostile.answers = []
        self.session = self.hostile  # what Conformance.run checks with

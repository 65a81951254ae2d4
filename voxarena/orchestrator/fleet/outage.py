"""A service that went away mid-run: wait for it to come back before failing its calls.

A call that is still UNAVAILABLE after its retries hands over to the service's ``Outage``: the first
such call polls the service's grpc.health.v1 with exponential backoff (from ``execution.backoff_seconds``
up to ``MAX_POLL_SECONDS`` between polls) for up to ``execution.outage_seconds``; every other call of
that service that finds it UNAVAILABLE meanwhile waits for the same verdict instead of failing (its
queue is paused), and all of them are sent again once it is SERVING. When the window passes without
it, the calls fail as transient rows (a rerun retries them) and so does every later UNAVAILABLE call
of that service in this run, at once: one outage costs the run one window, not one per row.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

MAX_POLL_SECONDS = 10.0


class Outage:
    def __init__(self, is_serving: Callable[[float], bool], window: float, backoff: float) -> None:
        """``is_serving(timeout)``: one health check; ``window``: seconds to wait in all (0: do not wait)."""
        self.is_serving, self.window, self.backoff = is_serving, window, backoff
        self._cond = threading.Condition()
        self._polling = False
        self.gave_up = False
        self.outages = 0  # outages this service came back from

    def wait_until_back(self) -> bool:
        """True once the service is SERVING again (send the call again); False when the window passed."""
        with self._cond:
            if self.gave_up or self.window <= 0:
                return False
            if self._polling:  # another call is already polling: wait for its verdict
                self._cond.wait_for(lambda: not self._polling)
                return not self.gave_up
            self._polling = True
        back = self._poll()
        with self._cond:
            self._polling = False
            self.gave_up = not back
            self.outages += back
            self._cond.notify_all()
        return back

    def _poll(self) -> bool:
        end = time.monotonic() + self.window
        pause = self.backoff
        while True:
            remaining = end - time.monotonic()
            if remaining <= 0:
                return False
            if self.is_serving(min(remaining, MAX_POLL_SECONDS)):
                return True
            time.sleep(max(0.0, min(pause, end - time.monotonic())))
            pause = min(2 * pause, MAX_POLL_SECONDS)

"""Admission of work calls: at most ``concurrency`` in flight, at most ``max_queue`` waiting for a slot,
RESOURCE_EXHAUSTED at once beyond that; health checks and GetInfo are never held back.

Why not grpcio's own knobs: its sync server runs every call, ``grpc.health.v1`` Check included, on one
thread pool and queues calls without bound once the pool's threads are busy, so four slow Griffin-Lim
calls on a four-thread pool left every health check waiting behind them until the prober gave up;
``maximum_concurrent_rpcs`` refuses health checks as readily as model calls. Here a semaphore admits the
work calls (every method of the registered services but GetInfo), and the pool has
``concurrency + max_queue + SPARE_THREADS`` threads: admitted and waiting calls together hold at most
``concurrency + max_queue`` of them, a refused call gives its thread back in microseconds, so a health
check or GetInfo always finds a free one. (A second server on the same port for health is not an
option: one port, one server.)

A waiting call checks every ``POLL_SECONDS`` that its client still wants it, and gives up with CANCELLED
when the client cancelled it or its deadline passed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import grpc

from .errors import Busy, Cancelled

# Threads beyond the admitted and waiting calls: health checks, GetInfo, reflection, refused calls.
SPARE_THREADS = 4
POLL_SECONDS = 0.05
DEFAULT_CONCURRENCY = 4
DEFAULT_MAX_QUEUE = 16
UNGOVERNED_METHODS = frozenset({"GetInfo"})


class Admission:
    """The slots of one server's work calls."""

    def __init__(self, concurrency: int, max_queue: int, services: tuple[str, ...] = ()) -> None:
        if concurrency < 1:
            raise ValueError(f"concurrency {concurrency} must be at least 1")
        if max_queue < 0:
            raise ValueError(f"max_queue {max_queue} must not be negative")
        self.concurrency, self.max_queue = concurrency, max_queue
        self.services = frozenset(services)
        self._slots = threading.Semaphore(concurrency)
        self._lock = threading.Lock()
        self._waiting = 0
        self._running = 0
        self.rejected = 0  # calls refused RESOURCE_EXHAUSTED so far (the queue was full)

    @property
    def threads(self) -> int:
        """The server's thread pool size: every admitted and waiting call, plus spare threads."""
        return self.concurrency + self.max_queue + SPARE_THREADS

    @property
    def waiting(self) -> int:
        """Calls waiting for a slot now."""
        return self._waiting

    @property
    def running(self) -> int:
        """Calls holding a slot now."""
        return self._running

    def governs(self, method: str) -> bool:
        """Whether ``method`` (``/package.Service/Method``) is a work call that needs a slot."""
        service, _, name = method.lstrip("/").rpartition("/")
        return service in self.services and name not in UNGOVERNED_METHODS

    @contextmanager
    def slot(self, context: grpc.ServicerContext) -> Iterator[None]:
        """Holds one slot for the body; Busy (RESOURCE_EXHAUSTED) when the queue is full too, Cancelled
        when the client stops waiting first."""
        if not self._slots.acquire(blocking=False):
            self._wait(context)
        with self._lock:
            self._running += 1
        try:
            yield
        finally:
            with self._lock:
                self._running -= 1
            self._slots.release()

    def _wait(self, context: grpc.ServicerContext) -> None:
        with self._lock:
            if self._waiting >= self.max_queue:
                self.rejected += 1
                raise Busy(
                    f"busy: {self.concurrency} calls in flight and {self._waiting} waiting "
                    f"(concurrency {self.concurrency}, max_queue {self.max_queue}); try again later"
                )
            self._waiting += 1
        try:
            while not self._slots.acquire(timeout=POLL_SECONDS):
                if not _wanted(context):
                    raise Cancelled("cancelled or past its deadline while waiting for a free slot; not started")
        finally:
            with self._lock:
                self._waiting -= 1
        if not _wanted(context):  # the slot came free too late for this call: pass it on
            self._slots.release()
            raise Cancelled("cancelled or past its deadline while waiting for a free slot; not started")


def _wanted(context: grpc.ServicerContext) -> bool:
    """Whether the client still waits for the call. The deadline is read too: grpc marks a call whose
    deadline passed inactive only once its timer has fired, which can be later."""
    remaining = context.time_remaining()
    return bool(context.is_active()) and (remaining is None or remaining > 0)

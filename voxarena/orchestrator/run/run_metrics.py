"""The orchestrator's Prometheus metrics: the current run's progress and failures, read at scrape time.

``orchestrator run|race --metrics-port N`` (or ``$VOXARENA_METRICS_PORT``; the compose stack sets 9464)
serves ``/metrics`` for the life of the process (``serve``); each run's progress (``RunProgress``) makes
itself the current one while it works (``watching``). A scrape shows:

- ``voxarena_run_info{run}``: the run being worked on (1), absent between runs;
- ``voxarena_run_done{stage}`` / ``voxarena_run_expected{stage}``: rows done and expected per stage
  (generate, detect, measure, stream), the same numbers as the progress bars and lines;
- ``voxarena_run_failures{kind}``: rows failed so far by kind (input, service, transient, ...).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.core import GaugeMetricFamily

Snapshot = Callable[[], dict[str, tuple[int, int]]]
Failures = Callable[[], dict[str, int]]

_lock = threading.Lock()
_current: tuple[str, Snapshot, Failures] | None = None


class _RunCollector:
    def collect(self) -> Iterator[GaugeMetricFamily]:
        with _lock:
            current = _current
        info = GaugeMetricFamily("voxarena_run_info", "The run being worked on", labels=["run"])
        done = GaugeMetricFamily("voxarena_run_done", "Rows done per stage", labels=["stage"])
        expected = GaugeMetricFamily("voxarena_run_expected", "Rows expected per stage", labels=["stage"])
        failures = GaugeMetricFamily("voxarena_run_failures", "Rows failed so far by kind", labels=["kind"])
        if current is not None:
            name, snapshot, failed = current
            info.add_metric([name], 1)
            for stage, (n_done, n_expected) in snapshot().items():
                done.add_metric([stage], n_done)
                expected.add_metric([stage], n_expected)
            for kind, n in failed().items():
                failures.add_metric([kind], n)
        yield from (info, done, expected, failures)


def serve(port: int) -> int:
    """Serve ``/metrics`` on ``port`` (0: a free one) for the rest of the process; returns the bound port."""
    registry = CollectorRegistry()
    registry.register(_RunCollector())
    server, _thread = start_http_server(port, registry=registry)
    return int(server.server_address[1])


@contextmanager
def watching(run: str, snapshot: Snapshot, failures: Failures) -> Iterator[None]:
    """Make ``run`` the one the metrics show while the block runs."""
    global _current
    with _lock:
        _current = (run, snapshot, failures)
    try:
        yield
    finally:
        with _lock:
            _current = None

"""Prometheus metrics of a service (``prometheus-client``), on ``/metrics`` of a port of their own.

Off unless asked: ``--metrics-port N`` (or ``$VOXARENA_METRICS_PORT``) on any model service or the scorer;
the compose stack turns it on (port 9464 in every container). Each server has its own registry, so several
servers in one process (tests) never mix their counts. What a scrape shows:

================================================  ===========================================================
``voxarena_requests_total{method,code}``          finished calls by full gRPC method and status code name
``voxarena_request_duration_seconds{method}``     their wall time (histogram, 5 ms to 10 min)
``voxarena_calls_in_flight``                      work calls holding an admission slot now
``voxarena_calls_queued``                         work calls waiting for a slot now
``voxarena_calls_rejected_total``                 work calls refused RESOURCE_EXHAUSTED (slots and queue full)
``voxarena_call_slots``                           the admission slots (``--concurrency``)
``voxarena_model_load_seconds``                   how long the model took to load (absent until loaded)
``voxarena_model_ready``                          1 once loaded and SERVING, else 0
``voxarena_service_info{service,role,version}``   what is serving
================================================  ===========================================================

plus the client library's process metrics (CPU seconds, resident memory, open files). A service adds its
own on ``registry`` (the scorer: time and outcome per metric). The call counts come from the interceptor's
per-call line (``interceptors.CallLog``), so a scrape and the log always agree.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Info, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.process_collector import ProcessCollector

if TYPE_CHECKING:
    from .admission import Admission

ENV_METRICS_PORT = "VOXARENA_METRICS_PORT"
COMPOSE_METRICS_PORT = 9464  # the port every container of the compose stack serves /metrics on
BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600)


class _AdmissionCollector:
    """In-flight, queued and rejected work calls, read from the admission at scrape time."""

    def __init__(self, admission: Admission) -> None:
        self.admission = admission

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        a = self.admission
        yield GaugeMetricFamily("voxarena_calls_in_flight", "Work calls holding an admission slot", value=a.running)
        yield GaugeMetricFamily("voxarena_calls_queued", "Work calls waiting for an admission slot", value=a.waiting)
        yield GaugeMetricFamily("voxarena_call_slots", "Admission slots (--concurrency)", value=a.concurrency)
        yield CounterMetricFamily(
            "voxarena_calls_rejected", "Work calls refused RESOURCE_EXHAUSTED: slots and queue full", value=a.rejected
        )


class ServiceMetrics:
    """One server's metrics and their registry."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        ProcessCollector(registry=self.registry)
        self.requests = Counter(
            "voxarena_requests", "Finished calls by method and status code", ["method", "code"], registry=self.registry
        )
        self.duration = Histogram(
            "voxarena_request_duration_seconds",
            "Wall time of finished calls",
            ["method"],
            buckets=BUCKETS,
            registry=self.registry,
        )
        self.ready = Gauge("voxarena_model_ready", "1 once the model is loaded and serving", registry=self.registry)
        self._load = Gauge("voxarena_model_load_seconds", "Seconds the model took to load", registry=self.registry)
        self._load_set = False
        self._info = Info("voxarena_service", "What this service serves", registry=self.registry)
        self._http: Any = None  # the HTTP server of serve()

    def describe_service(self, service: str, role: str, version: str) -> None:
        self._info.info({"service": service, "role": role, "version": version})

    def watch(self, admission: Admission | None) -> None:
        if admission is not None:
            self.registry.register(_AdmissionCollector(admission))

    def observe_call(self, method: str, code: str, seconds: float) -> None:
        self.requests.labels(method, code).inc()
        self.duration.labels(method).observe(seconds)

    def loaded(self, seconds: float) -> None:
        self._load.set(seconds)
        self.ready.set(1)

    def serve(self, port: int, host: str = "0.0.0.0") -> int:
        """Serve ``/metrics`` on ``port`` (0: a free one) in a thread; returns the bound port."""
        server, _thread = start_http_server(port, addr=host, registry=self.registry)
        self._http = server
        return int(server.server_address[1])

    def stop(self) -> None:
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
            self._http = None


def metrics_port_argument(text: str | None) -> int | None:
    """``--metrics-port`` / ``$VOXARENA_METRICS_PORT``: None (off) for empty; else a port 0-65535."""
    text = (text if text is not None else os.environ.get(ENV_METRICS_PORT, "")).strip()
    if not text:
        return None
    try:
        port = int(text)
    except ValueError:
        raise ValueError(f"metrics port {text!r} is not an integer (--metrics-port or ${ENV_METRICS_PORT})") from None
    if not 0 <= port <= 65535:
        raise ValueError(f"metrics port {port} is outside 0-65535 (--metrics-port or ${ENV_METRICS_PORT})")
    return port

"""The compose stack's ``monitoring`` profile: Prometheus scraping every service's ``/metrics``.

Every container of ``docker-compose.yml`` serves Prometheus metrics on ``METRICS_PORT`` (``x-model``'s
``VOXARENA_METRICS_PORT``; ``voxarena.sdk.metrics``). ``docker-compose --profile monitoring up -d`` adds a
``prometheus`` container (Debian's package, in an image built locally like every other:
``compose/monitoring/prometheus.Dockerfile``) that finds each catalogue service by DNS on the stack's network
(every replica of a ``--scale``d service: ``dns_sd_configs`` type A) and scrapes it every 5 s; its web UI and
API are on http://127.0.0.1:9090 of the host only. ``compose/monitoring/grafana-dashboard.json`` is a dashboard
for those who run Grafana (point a Prometheus data source at that address). ``make generate`` writes the
Prometheus configuration from the catalogue (``render_prometheus``).
"""

from __future__ import annotations

import yaml

from voxarena.catalogue import Service

from .header import yaml_header

METRICS_PORT = 9464
PROMETHEUS_FILE = "compose/monitoring/prometheus.yml"
PROMETHEUS_IMAGE = "voxarena/prometheus:latest"
PROMETHEUS_DOCKERFILE = "compose/monitoring/prometheus.Dockerfile"
SCRAPE_SECONDS = 5

PROMETHEUS_ENTRY = f"""
  # Prometheus (profile "monitoring"): scrapes every service's /metrics; http://127.0.0.1:9090 on the host.
  prometheus:
    <<: *hardened
    image: {PROMETHEUS_IMAGE}
    profiles: [monitoring]
    restart: unless-stopped
    read_only: true
    tmpfs: ["/tmp:size=512m"]
    user: "10001:10001"
    networks: [arena, monitoring]
    ports: ["127.0.0.1:9090:9090"]
    cpus: 0.5
    mem_limit: 1g
    volumes: ["./{PROMETHEUS_FILE}:/etc/voxarena/prometheus.yml:ro"]
"""


def render_prometheus(services: tuple[Service, ...]) -> str:
    """The text of compose/monitoring/prometheus.yml: one DNS-discovered job over every catalogue service (the
    orchestrator too: a `docker-compose run --use-aliases orchestrator run ...` is found while it runs)."""
    config = {
        "global": {"scrape_interval": f"{SCRAPE_SECONDS}s", "evaluation_interval": f"{SCRAPE_SECONDS}s"},
        "scrape_configs": [
            {
                "job_name": "voxarena",
                "dns_sd_configs": [
                    {"names": [s.name for s in services], "type": "A", "port": METRICS_PORT, "refresh_interval": "15s"}
                ],
                # The service's name as a label of its own (the target address is IP:PORT of a replica).
                "relabel_configs": [{"source_labels": ["__meta_dns_name"], "target_label": "service"}],
            }
        ],
    }
    body = yaml.safe_dump(config, sort_keys=False, default_flow_style=False, width=120)
    return yaml_header("voxarena/deploy/monitoring.py") + body

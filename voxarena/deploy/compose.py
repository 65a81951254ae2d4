"""``docker-compose.yml`` and its mTLS overlay, written from the service catalogue (``make generate``).

The text around the services (the header, the ``x-hardened`` and ``x-model`` anchors, the orchestrator and
the network) is a template here, kept as YAML with its comments; each catalogue row becomes one service
entry: its image, its compose profile, its volumes and the limits where they differ from ``x-model``'s.
The Swarm stack and the Kubernetes tree are then made from the parsed result, so how a container runs is
said once, in this file.
"""

from __future__ import annotations

import json

from voxarena.catalogue import Service

from .header import yaml_header
from .monitoring import METRICS_PORT, PROMETHEUS_ENTRY

COMPOSE_FILE = "docker-compose.yml"
MTLS_FILE = "compose/tls/docker-compose.mtls.yml"
RUN_CONFIG = "configs/compose-smoke.yaml"  # the compose stack's example run (compose/README.md)

COMPOSE_HEAD = f"""\
# VoxArena stack: every reference generator and detector and the scorer, one image each.
#   make images                      # base image (debootstrap, no registry), wheelhouse, every image
#                                    # (how each is built: voxarena/catalogue.py, compose/build_images.py)
#   docker-compose up -d             # (or `docker compose up -d`): waits on grpc.health.v1 healthchecks
#   docker-compose run --rm orchestrator run {RUN_CONFIG}
# Services sit on an internal network with no egress; only the orchestrator container reaches them
# (by service name: `dns:///NAME:50051`, round robin over `--scale NAME=N` replicas).
# Profiles: "nonfree" (mbrola: voices licensed non-commercial, sale forbidden), "torch"
# (hf-audio-classifier, hf-tts: mount your checkpoint at /model via VOXARENA_HF_MODEL_DIR,
# VOXARENA_HF_TTS_MODEL_DIR), "monitoring" (Prometheus scraping every service's /metrics on port
# {METRICS_PORT}: `docker-compose --profile monitoring up -d`, then http://127.0.0.1:9090;
# voxarena/deploy/monitoring.py).
version: "3.8"

# Hardening shared by every container (the services and the orchestrator): no Linux capabilities, no
# privilege gain through setuid binaries, a bounded number of processes.
x-hardened: &hardened
  cap_drop: [ALL]
  security_opt: ["no-new-privileges:true"]
  pids_limit: 256

x-model: &model
  <<: *hardened
  restart: unless-stopped
  environment:
    VOXARENA_METRICS_PORT: "{METRICS_PORT}"  # Prometheus metrics (voxarena/sdk/metrics.py)
  read_only: true
  tmpfs: ["/tmp:size=512m"]
  user: "10001:10001"
  networks: [arena]
  cpus: 1.0
  mem_limit: 3g
  # Each probe is a fresh Python process in `docker exec`: about 0.18 CPU seconds in the container since it
  # imports grpc and the health stubs only (0.4 s while it imported the whole SDK, numpy included), plus
  # Docker's own exec. With thirty-odd services, probes every 15 s took a fifth of this 2-core machine (half
  # of it before the lighter import) and slowed the container tests; every 5 s they once took most of it and,
  # under other load, left every service "unhealthy". The orchestrator waits on grpc.health.v1 itself.
  healthcheck:
    test: ["CMD", "python", "-m", "voxarena.sdk.healthcheck"]
    interval: 30s
    timeout: 10s
    start_period: 120s
    retries: 3

services:
"""

# Said once above the first service of a role.
ROLE_COMMENTS = {"transform": "Transforms (TransformService): a run's `transform:` condition steps reach them by name."}

ORCHESTRATOR = """
  # The only client of the services; `docker-compose run --rm orchestrator ...`.
  {name}:
    <<: *hardened
    image: {image}
{profiles}    networks: [arena]
    # Writes ./runs as this user: export VOXARENA_UID=$(id -u) VOXARENA_GID=$(id -g) to get files you own.
    # The default is the images' unprivileged user, which needs a ./runs it may write.
    user: "${{VOXARENA_UID:-10001}}:${{VOXARENA_GID:-10001}}"
    read_only: true
    tmpfs: ["/tmp"]
    cpus: 2.0
    mem_limit: 4g
    working_dir: /work
    volumes:
      - ./configs:/work/configs:ro
      - ./runs:/work/runs
      - ${{VOXARENA_SPEECH:-../shared/data/speech}}:/data/speech:ro
    environment:
      VOXARENA_SPEECH: /data/speech
      VOXARENA_STACK: compose         # services without an address are the compose services
      VOXARENA_METRICS_PORT: "{metrics_port}"  # `run` and `race` serve their progress to Prometheus
"""

COMPOSE_TAIL = """
networks:
  arena:
    internal: true
  monitoring: {}                     # Prometheus's way to the host's 127.0.0.1:9090
"""

MTLS_HEAD = f"""\
# Mutual TLS for the whole stack, without editing docker-compose.yml:
#   make certs            # compose/tls/certs: a private CA, the services' and the orchestrator's certificates
#   docker-compose -f docker-compose.yml -f {MTLS_FILE} up -d
#   docker-compose -f docker-compose.yml -f {MTLS_FILE} run --rm orchestrator run {RUN_CONFIG}
# Every service serves TLS with the shared service certificate and demands a client certificate signed by
# the CA; the orchestrator presents its own (VOXARENA_CLIENT_TLS_*, used for every compose service that
# has no tls: of its own in the run config). The healthchecks speak mTLS too (voxarena.sdk.healthcheck).
# Bearer tokens: set VOXARENA_TOKEN in a service's environment and token_env in the run config.
version: "3.8"

x-mtls: &mtls
  environment:
    VOXARENA_TLS_CERT: /tls/server.pem
    VOXARENA_TLS_KEY: /tls/server.key
    VOXARENA_TLS_CLIENT_CA: /tls/ca.pem
  volumes: ["./compose/tls/certs:/tls:ro"]

services:
"""

MTLS_ORCHESTRATOR = """\
  {name}:
    environment:
      VOXARENA_CLIENT_TLS_CA: /tls/ca.pem
      VOXARENA_CLIENT_TLS_CERT: /tls/client.pem
      VOXARENA_CLIENT_TLS_KEY: /tls/client.key
    volumes: ["./compose/tls/certs:/tls:ro"]
"""


class CatalogueError(ValueError):
    """A catalogue row the deployment files cannot be written from; names the service and why."""


def _flow(items: tuple[str, ...] | list[str]) -> str:
    """A YAML flow list; JSON strings are valid YAML and quote what needs quoting."""
    return "[" + ", ".join(json.dumps(i) for i in items) + "]"


def _profiles(svc: Service, indent: str = "    ") -> str:
    return f"{indent}profiles: [{svc.compose_profile}]\n" if svc.compose_profile else ""


def model_entry(svc: Service) -> str:
    """One model service: ``x-model`` plus what the row says differently."""
    lines = [f"  {svc.name}:", "    <<: *model", f"    image: {svc.image}"]
    if svc.compose_profile:
        lines.append(f"    profiles: [{svc.compose_profile}]")
    if svc.volumes:
        lines.append(f"    volumes: {_flow(svc.volumes)}")
    if svc.mem_limit is not None:
        lines.append(f"    mem_limit: {svc.mem_limit}")
    if svc.cpus is not None:
        lines.append(f"    cpus: {svc.cpus}")
    return "\n".join(lines) + "\n"


def orchestrators(services: tuple[Service, ...]) -> Service:
    found = [s for s in services if s.role == "orchestrator"]
    if len(found) != 1:
        raise CatalogueError(f"the catalogue has {len(found)} orchestrator rows; the stack needs exactly one")
    return found[0]


def render_compose(services: tuple[Service, ...]) -> str:
    """The text of docker-compose.yml."""
    out = [yaml_header("voxarena/deploy/compose.py"), COMPOSE_HEAD]
    seen_roles: set[str] = set()
    for svc in services:
        if svc.role == "orchestrator":
            continue
        if svc.role in ROLE_COMMENTS and svc.role not in seen_roles:
            out.append(f"  # {ROLE_COMMENTS[svc.role]}\n")
        seen_roles.add(svc.role)
        out.append(model_entry(svc))
    orchestrator = orchestrators(services)
    if orchestrator.volumes or orchestrator.cpus is not None or orchestrator.mem_limit is not None:
        raise CatalogueError(f"{orchestrator.name}: its volumes and limits are the compose template's, not a row's")
    out.append(PROMETHEUS_ENTRY)
    out.append(
        ORCHESTRATOR.format(
            name=orchestrator.name,
            image=orchestrator.image,
            profiles=_profiles(orchestrator),
            metrics_port=METRICS_PORT,
        )
    )
    out.append(COMPOSE_TAIL)
    return "".join(out)


def render_mtls(services: tuple[Service, ...]) -> str:
    """The text of the mTLS overlay: every model service serves mTLS, the orchestrator presents its own."""
    out = [yaml_header("voxarena/deploy/compose.py"), MTLS_HEAD]
    out += [f"  {s.name}: *mtls\n" for s in services if s.role != "orchestrator"]
    out.append(MTLS_ORCHESTRATOR.format(name=orchestrators(services).name))
    return "".join(out)

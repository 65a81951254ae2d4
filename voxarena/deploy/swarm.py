"""The Docker Swarm stack file, ``compose/swarm.yml``, made from ``docker-compose.yml``'s services
(``make generate``), so the two cannot drift.

``docker stack deploy`` refuses some keys of the compose file and ignores others (measured with Docker 20.10
and its 28.2 client): it refuses ``profiles``, ``pids_limit``, ``cpus`` and ``mem_limit`` (limits go under
``deploy.resources``, ``pids`` from file version 3.9), ignores ``restart`` (swarm restarts by
``deploy.restart_policy``) and ``security_opt`` (a 20.10 swarm service cannot set no-new-privileges), and drops
the short ``tmpfs`` syntax without a word (a ``type: tmpfs`` mount is kept). Every service key is therefore
either kept, translated or dropped here by name, and a key this module does not know is an error naming the
service and the key: a new setting in docker-compose.yml must be given a swarm meaning before it ships.

The stack holds the catalogue's services that start by default (``voxarena.catalogue``: no compose profile);
the opt-in profiles (nonfree, torch) and the orchestrator (a client: ``compose/swarm-orchestrator.yml``) are left
out. Each service has ``endpoint_mode: dnsrr``: the service name resolves to every replica's address, so the
orchestrator's round-robin channel (``dns:///NAME:50051``) sees each one; swarm's default virtual IP is one
address, and one long-lived HTTP/2 connection to it would keep every call on one replica. Networks become
attachable overlays, ``internal`` kept (no egress), so a one-off orchestrator container can join them.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from voxarena.catalogue import Service

from .compose import COMPOSE_FILE, RUN_CONFIG
from .header import yaml_header

STACK_FILE = "compose/swarm.yml"
STACK_VERSION = "3.9"  # the first compose file version whose deploy.resources.limits has pids

KEPT = ("image", "command", "user", "read_only", "cap_drop", "environment", "working_dir", "healthcheck", "networks")
# Keys swarm cannot honour, and why; the README's Swarm section says what that costs.
DROPPED = {"security_opt": "a swarm service on Docker 20.10 (API 1.41) cannot set no-new-privileges"}
LIMITS = {"cpus": "cpus", "mem_limit": "memory", "pids_limit": "pids"}  # compose key -> deploy.resources.limits key
RESTART = {"always": "any", "unless-stopped": "any", "on-failure": "on-failure", "no": "none"}
SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
# Compose only marks an unhealthy container; swarm kills it and starts another, so a health probe that is
# merely slow on a loaded node (a fresh Python process each time) must not count as a dead replica: seen
# here, replicas replaced mid-run with compose's 5 s timeout and 3 retries.
SWARM_HEALTH = {"interval": "10s", "timeout": "30s", "retries": 5}

HEADER = f"""\
# VoxArena on Docker Swarm: docker-compose.yml's default services, translated key by key.
# Deploy (images are local: `make images` on every node; --resolve-image never asks no registry):
#   docker stack deploy --resolve-image never -c compose/swarm.yml voxarena
#   docker-compose -f docker-compose.yml -f compose/swarm-orchestrator.yml run --rm orchestrator \\
#     run {RUN_CONFIG}       # the orchestrator as in docker-compose.yml, on the stack's network
# What differs from docker-compose.yml: compose/README.md, "Docker Swarm".
"""


class _Dumper(yaml.SafeDumper):
    """Writes every service in full: no YAML anchors where services share a value."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


class StackError(ValueError):
    """docker-compose.yml holds something this module cannot give a swarm meaning; names service and key."""


def _bytes(size: str, where: str) -> int:
    m = re.fullmatch(r"(\d+)([kmg]?)", size.strip().lower())
    if m is None:
        raise StackError(f"{where}: size {size!r} is not a number with an optional k/m/g unit")
    return int(m.group(1)) * SIZE_UNITS[m.group(2)]


def _tmpfs_mount(spec: str, where: str) -> dict[str, Any]:
    """``/tmp:size=512m`` as the long ``type: tmpfs`` mount, the syntax a stack keeps."""
    target, _, options = spec.partition(":")
    mount: dict[str, Any] = {"type": "tmpfs", "target": target}
    for option in filter(None, options.split(",")):
        key, _, value = option.partition("=")
        if key != "size":
            raise StackError(f"{where}: tmpfs option {key!r} has no swarm equivalent here (only size)")
        mount["tmpfs"] = {"size": _bytes(value, where)}
    return mount


def swarm_service(name: str, service: dict[str, Any]) -> dict[str, Any]:
    """One compose service as a swarm stack service: kept keys, then ``deploy`` (replicas, dnsrr, restart
    policy, limits) and ``tmpfs`` as mounts."""
    out = {k: service[k] for k in KEPT if k in service}
    if "healthcheck" in out:
        out["healthcheck"] = {**out["healthcheck"], **SWARM_HEALTH}
    deploy: dict[str, Any] = {"replicas": 1, "endpoint_mode": "dnsrr"}
    limits: dict[str, Any] = {}
    for key, value in service.items():
        where = f"{COMPOSE_FILE}: services.{name}.{key}"
        if key in KEPT or key in DROPPED:
            continue
        if key in LIMITS:
            limits[LIMITS[key]] = str(value) if key == "cpus" else value  # the stack schema wants cpus as a string
        elif key == "restart":
            if value not in RESTART:
                raise StackError(f"{where}: {value!r} is not one of {sorted(RESTART)}")
            deploy["restart_policy"] = {"condition": RESTART[value]}
        elif key == "tmpfs":
            out["volumes"] = [_tmpfs_mount(spec, where) for spec in ([value] if isinstance(value, str) else value)]
        else:
            raise StackError(f"{where}: no swarm translation for {key!r}; add one to voxarena/deploy/swarm.py")
    if limits:
        deploy["resources"] = {"limits": limits}
    out["deploy"] = deploy
    return out


def stack(compose: dict[str, Any], catalogue: tuple[Service, ...]) -> dict[str, Any]:
    """The stack file's content: every catalogue service without a compose profile, and the networks as
    attachable overlays."""
    services = compose.get("services", {})
    out: dict[str, Any] = {}
    for s in catalogue:
        if s.compose_profile is not None:
            continue
        if s.name not in services:
            raise StackError(f"{COMPOSE_FILE}: services.{s.name} is in the catalogue but not in the file")
        out[s.name] = swarm_service(s.name, services[s.name])
    used = {n for entry in out.values() for n in entry.get("networks", [])}
    networks = {
        name: {"driver": "overlay", "attachable": True, **({"internal": True} if (net or {}).get("internal") else {})}
        for name, net in compose.get("networks", {}).items()
        if name in used  # the stack's services' networks (not the monitoring profile's)
    }
    return {"version": STACK_VERSION, "services": out, "networks": networks}


def render(compose: dict[str, Any], catalogue: tuple[Service, ...]) -> str:
    """The text of compose/swarm.yml from the parsed docker-compose.yml."""
    content = stack(compose, catalogue)
    body = yaml.dump(content, Dumper=_Dumper, sort_keys=False, width=120, default_flow_style=None)
    return yaml_header("voxarena/deploy/compose.py", "voxarena/deploy/swarm.py") + HEADER + body

"""The services of a run: start or reach them, wait until they serve, ask their GetInfo, stop them.

A service with ``address`` is used as it runs; one without is started as a local process on a free
loopback port (``--stack local``) or is the compose service of its name (``--stack compose``). Each
gets a client with the run's deadline and retry policy; its GetInfo is what run.json records and what
a resume checks against (same model name, version and weights).
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from google.protobuf import json_format
from google.protobuf.message import Message

from voxarena.transport import PLAINTEXT, ClientSecurity, TransportConfigError
from voxarena.v1 import detector_pb2, generator_pb2, scorer_pb2

from .clients import (
    CallFailed,
    DetectorClient,
    GeneratorClient,
    ScorerClient,
    ServiceClient,
    ServiceStartError,
    wait_for_serving,
)
from .config import RunConfig, ServiceConfig, TlsConfig
from .local_services import LocalService

STACKS = ("local", "compose")
# The orchestrator container's client certificate for an mTLS compose stack.
CLIENT_TLS_ENV = {"ca": "VOXARENA_CLIENT_TLS_CA", "cert": "VOXARENA_CLIENT_TLS_CERT", "key": "VOXARENA_CLIENT_TLS_KEY"}
COMPOSE_PORT = 50051
_CLIENTS: dict[str, type[ServiceClient]] = {
    "generator": GeneratorClient,
    "detector": DetectorClient,
    "scorer": ScorerClient,
}
_Info = TypeVar("_Info", generator_pb2.GeneratorInfo, detector_pb2.DetectorInfo, scorer_pb2.ScorerInfo)


class RunError(RuntimeError):
    """The run cannot start or continue (bad directory, changed inputs, a service that will not start)."""


@dataclass
class Service:
    name: str
    role: str  # "generator", "detector" or "scorer"
    cfg: ServiceConfig
    local: LocalService | None = None
    address: str | None = None
    client: ServiceClient | None = None
    info: Message | None = None  # the role's *Info message from GetInfo
    security: ClientSecurity = PLAINTEXT

    def target(self) -> str:
        """The address it serves on (a local one's is known once it announced its port)."""
        if self.address is None:
            raise RunError(f"{self.name}: no address yet (a local service is reachable once it announced its port)")
        return self.address

    def call(self, method: str, request: Message) -> tuple[Any, int]:
        """(response, attempts) of one RPC through its client (``ServiceClient.call``)."""
        if self.client is None:
            raise RunError(f"{self.name}: {method} called before the fleet connected to it")
        return self.client.call(method, request)

    def role_info(self, kind: type[_Info]) -> _Info:
        """Its GetInfo answer, which must be a ``kind`` (the message of its role)."""
        if not isinstance(self.info, kind):
            got = "no GetInfo answer yet" if self.info is None else f"a {type(self.info).__name__}"
            raise RunError(f"{self.name}: needs a {kind.__name__}, has {got}")
        return self.info

    def declared_rate(self) -> int:
        """The rate a generator declares for the voice asked for (a voice may differ from the model)."""
        info = self.role_info(generator_pb2.GeneratorInfo)
        voices = list(info.voices)
        wanted = self.cfg.voice or (voices[0].name if voices else "")
        for v in voices:
            if v.name == wanted and v.sample_rate:
                return v.sample_rate
        return info.model.native_sample_rate

    def record(self) -> dict[str, Any]:
        """What run.json says of the service: role, how it was reached, and its GetInfo."""
        return {
            "role": self.role,
            "mode": "local" if self.local else "remote",
            "address": self.address if not self.local else "local",
            "info": json_format.MessageToDict(self.info, preserving_proto_field_name=True),
        }


class ServiceFleet:
    def __init__(self, cfg: RunConfig, logs_dir: Path, stack: str = "local") -> None:
        if stack not in STACKS:
            raise RunError(f"unknown stack {stack!r}; use one of {', '.join(STACKS)}")
        self.cfg, self.logs_dir, self.stack = cfg, logs_dir, stack
        self.services: dict[str, Service] = {}

    def __getitem__(self, name: str) -> Service:
        return self.services[name]

    def names(self, role: str) -> list[str]:
        """The services of ``role``, in config order."""
        return [n for n, s in self.services.items() if s.role == role]

    @property
    def scorer(self) -> Service:
        return self.services["scorer"]

    def declared_tasks(self) -> dict[str, set[str]]:
        """generator -> the tasks its GetInfo declares."""
        return {
            n: {generator_pb2.Task.Name(t) for t in self.services[n].role_info(generator_pb2.GeneratorInfo).tasks}
            for n in self.names("generator")
        }

    def records(self) -> dict[str, dict[str, Any]]:
        return {n: s.record() for n, s in self.services.items()}

    # ---------------------------------------------------------------- lifecycle
    def start(self) -> None:
        """Start the local ones, wait until all serve, connect and ask each its GetInfo; on any
        failure stop them all and raise RunError naming every service that failed."""
        entries = [(n, "generator", c) for n, c in self.cfg.generators.items()]
        entries += [(n, "detector", c) for n, c in self.cfg.detector_services().items()]
        entries.append(("scorer", "scorer", self.cfg.scorer))
        for name, role, c in entries:
            self.services[name] = self._launch(name, role, c)
        errors = self._wait_serving()
        if errors:
            self.stop()
            raise RunError("\n".join(errors))
        ex = self.cfg.execution
        for svc in self.services.values():
            svc.client = _CLIENTS[svc.role](
                svc.name, svc.target(), ex.deadline_seconds, ex.retries, ex.backoff_seconds, svc.security
            )
            try:
                svc.info = svc.client.info()
            except CallFailed as e:
                self.stop()
                raise RunError(f"{svc.name}: GetInfo failed: {e}") from None

    def _launch(self, name: str, role: str, c: ServiceConfig) -> Service:
        address = c.address
        if address is None and self.stack == "compose":
            # The compose service of the same name; dns:/// lets gRPC round-robin over its replicas.
            address = f"dns:///{name}:{COMPOSE_PORT}"
        svc = Service(name=name, role=role, cfg=c, address=address, security=self._security(name, c))
        if address is None:
            svc.local = LocalService(name, c.module, self.logs_dir / f"{name}.log", c.args)
            svc.local.start()
        return svc

    def _security(self, name: str, c: ServiceConfig) -> ClientSecurity:
        """The service's transport: its own ``tls``/``token_env``, else for compose services the stack's
        client certificate (``VOXARENA_CLIENT_TLS_*``, set by compose/tls/docker-compose.mtls.yml)."""
        tls = c.tls
        if tls is None and c.address is None and self.stack == "compose" and os.environ.get(CLIENT_TLS_ENV["ca"]):
            tls = TlsConfig(**{k: os.environ.get(v) or None for k, v in CLIENT_TLS_ENV.items()}, server_name=name)
        if tls is None:
            return PLAINTEXT
        try:
            return ClientSecurity.from_settings(tls.ca, tls.cert, tls.key, c.token_env, tls.server_name, tls=True)
        except TransportConfigError as e:
            raise RunError(f"{name}: {e}") from None

    def _wait_serving(self) -> list[str]:
        timeout = self.cfg.execution.startup_timeout_seconds
        errors = []
        for svc in self.services.values():
            try:
                if svc.local:
                    svc.address = svc.local.wait_ready(timeout)
                else:
                    wait_for_serving(svc.target(), svc.name, timeout, security=svc.security)
            except ServiceStartError as e:
                errors.append(str(e))
        return errors

    def stop(self) -> dict[str, float]:
        """Stop the local services and close every client; returns each local service's CPU seconds."""
        cpu = {}
        for svc in self.services.values():
            if svc.local:
                svc.local.stop()
                if svc.local.cpu_seconds is not None:
                    cpu[svc.name] = svc.local.cpu_seconds
            if svc.client:
                svc.client.close()
        return cpu

    # ---------------------------------------------------------------- checks before any work
    def check_metrics(self, metrics: list[str]) -> None:
        """Every configured metric must be one the scorer offers: fail before any work, naming it."""
        offered = [m.name for m in self.scorer.role_info(scorer_pb2.ScorerInfo).metrics]
        for name in metrics:
            if name not in offered:
                close = difflib.get_close_matches(name, offered, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise RunError(
                    f"scorer.metrics: unknown metric {name!r}{hint}; the scorer offers: {', '.join(offered)}"
                )

    def check_unchanged(self, previous: dict[str, Any] | None) -> None:
        """On resume, each service must be the same model as before (name, version, weights)."""
        for name, rec in (previous or {}).get("services", {}).items():
            if name not in self.services:
                continue
            old, new = rec["info"].get("model", {}), self.services[name].record()["info"].get("model", {})
            for key in ("name", "version", "weights_sha256"):
                if old.get(key) != new.get(key):
                    raise RunError(
                        f"{name}: {key} changed since this run started "
                        f"({old.get(key)!r} -> {new.get(key)!r}); results would mix two models: use a new --out"
                    )

"""The services of a run: start or reach them, wait until they serve, ask their GetInfo, stop them.

A service with ``address`` is used as it runs; one with ``image`` is launched as a hardened container
(``containers``, whatever the stack); one with neither is started as a local process on a free
loopback port (``--stack local``) or is the compose service of its name (``--stack compose``). Each
gets a client with the run's deadline and retry policy; its GetInfo (and an image's id) is what
run.json records and what a resume checks against (same model name, version, weights and image).
A config may call a service by another name than the one its GetInfo gives: that is a warning, kept
in run.json, not an error (a vendor's black box is often named by the run, not by its maker).
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from google.protobuf import json_format
from google.protobuf.message import Message

from voxarena.orchestrator.errors import CallFailed, RunError
from voxarena.orchestrator.fleet.clients import (
    DetectorClient,
    GeneratorClient,
    ScorerClient,
    ServiceClient,
    ServiceStartError,
    TransformClient,
    wait_for_serving,
)
from voxarena.orchestrator.fleet.local_services import LocalService
from voxarena.orchestrator.metrics.compare import identity_changes
from voxarena.orchestrator.run.config import RunConfig, ServiceConfig, TlsConfig
from voxarena.transport import PLAINTEXT, ClientSecurity, TransportConfigError
from voxarena.v1 import detector_pb2, generator_pb2, scorer_pb2, transform_pb2

if TYPE_CHECKING:
    from voxarena.orchestrator.fleet.containers import ImageIdentity, ImageService, Launcher

STACKS = ("local", "compose")
# The orchestrator container's client certificate for an mTLS compose stack.
CLIENT_TLS_ENV = {"ca": "VOXARENA_CLIENT_TLS_CA", "cert": "VOXARENA_CLIENT_TLS_CERT", "key": "VOXARENA_CLIENT_TLS_KEY"}
COMPOSE_PORT = 50051
_CLIENTS: dict[str, type[ServiceClient]] = {
    "generator": GeneratorClient,
    "detector": DetectorClient,
    "scorer": ScorerClient,
    "transform": TransformClient,
}
_Info = TypeVar(
    "_Info", generator_pb2.GeneratorInfo, detector_pb2.DetectorInfo, scorer_pb2.ScorerInfo, transform_pb2.TransformInfo
)


@dataclass
class Service:
    name: str
    role: str  # "generator", "detector", "scorer" or "transform"
    cfg: ServiceConfig
    local: LocalService | None = None
    container: ImageService | None = None  # an image entry's container
    address: str | None = None
    client: ServiceClient | None = None
    info: Message | None = None  # the role's *Info message from GetInfo
    security: ClientSecurity = PLAINTEXT
    warnings: list[str] = field(default_factory=list)

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

    @property
    def mode(self) -> str:
        return "local" if self.local else "image" if self.container else "remote"

    def record(self) -> dict[str, Any]:
        """What run.json says of the service: role, how it was reached, its GetInfo, an image's
        identity and container, and the warnings about it."""
        out = {
            "role": self.role,
            "mode": self.mode,
            "address": self.address if not self.local else "local",
            "info": json_format.MessageToDict(self.info, preserving_proto_field_name=True),
        }
        if self.container:
            out["image"] = self.container.record()
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out

    def check_name(self) -> None:
        """A generator or detector whose GetInfo names another model than the config: a warning."""
        model = getattr(self.info, "model", None)
        if self.role != "scorer" and model is not None and model.name and model.name != self.name:
            self.warnings.append(
                f"{self.name}: the service calls its model {model.name!r}; this run calls it {self.name!r} "
                f"(tables and reports say {self.name!r}; a detector's seen-attack list is matched on {model.name!r})"
            )


class ServiceFleet:
    def __init__(self, cfg: RunConfig, logs_dir: Path, stack: str = "local") -> None:
        if stack not in STACKS:
            raise RunError(f"unknown stack {stack!r}; use one of {', '.join(STACKS)}")
        self.cfg, self.logs_dir, self.stack = cfg, logs_dir, stack
        self.services: dict[str, Service] = {}
        self.launcher: Launcher | None = None  # the Docker side, once an image entry is launched

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
        """Start the local ones and the images, wait until all serve, connect and ask each its GetInfo;
        on any failure (Ctrl-C included) stop them all; a RunError names every service that failed."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        entries: list[tuple[str, str, ServiceConfig]] = [(n, "generator", c) for n, c in self.cfg.generators.items()]
        entries += [(n, "detector", c) for n, c in self.cfg.detector_services().items()]
        entries += [(n, "transform", c) for n, c in self.cfg.transforms.items()]
        entries.append(("scorer", "scorer", self.cfg.scorer))
        images = self._resolve_images(entries)  # every image checked before anything starts
        for name, role, c in entries:
            self.services[name] = self._launch(name, role, c, images.get(name))
        errors = self._wait_serving()
        if errors:
            raise RunError("\n".join(errors))
        ex = self.cfg.execution
        for svc in self.services.values():
            svc.client = _CLIENTS[svc.role](
                svc.name,
                svc.target(),
                ex.deadline_seconds,
                ex.retries,
                ex.backoff_seconds,
                svc.security,
                ex.outage_seconds,
            )
            try:
                svc.info = svc.client.info()
            except CallFailed as e:
                raise RunError(f"{svc.name}: GetInfo failed: {e}") from None
            svc.check_name()

    def _resolve_images(self, entries: list[tuple[str, str, ServiceConfig]]) -> dict[str, ImageIdentity]:
        """name -> the identity of its image, for the image entries (none: Docker is not touched)."""
        wanted = [(n, r, c) for n, r, c in entries if c.image is not None]
        if not wanted:
            return {}
        from voxarena.orchestrator.fleet.containers import ContainerError, Launcher

        try:
            self.launcher = Launcher(self.logs_dir)
            return {
                n: self.launcher.resolve(_where(n, r), c.image or "", c.container_settings().pull) for n, r, c in wanted
            }
        except ContainerError as e:
            named = ", ".join(f"{_where(n, r)} ({c.image})" for n, r, c in wanted)
            raise RunError(f"{e}" if self.launcher else f"{named}: {e}") from None

    def _launch(self, name: str, role: str, c: ServiceConfig, image: ImageIdentity | None) -> Service:
        address = c.address
        if address is None and image is None and self.stack == "compose":
            # The compose service of the same name; dns:/// lets gRPC round-robin over its replicas.
            address = f"dns:///{name}:{COMPOSE_PORT}"
        svc = Service(name=name, role=role, cfg=c, address=address, security=self._security(name, c))
        if image is not None and self.launcher is not None:
            svc.container = self.launcher.launch(name, role, image, c.container_settings())
        elif address is None:
            svc.local = LocalService(name, c.module, self.logs_dir / f"{name}.log", c.args)
            svc.local.start()
        return svc

    def _security(self, name: str, c: ServiceConfig) -> ClientSecurity:
        """The service's transport: its own ``tls``/``token_env``, else for compose services the stack's
        client certificate (``VOXARENA_CLIENT_TLS_*``, set by compose/tls/docker-compose.mtls.yml)."""
        tls = c.tls
        compose_service = c.address is None and c.image is None and self.stack == "compose"
        if tls is None and compose_service and os.environ.get(CLIENT_TLS_ENV["ca"]):
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
                elif svc.container:
                    svc.address = svc.container.wait_ready(timeout, svc.security)
                else:
                    wait_for_serving(svc.target(), svc.name, timeout, security=svc.security)
            except ServiceStartError as e:
                errors.append(str(e))
        return errors

    def stop(self) -> dict[str, float]:
        """Stop the local services, stop and remove the containers (and the fleet's network), close
        every client; returns the CPU seconds of each service it started. Safe to call twice."""
        cpu = {}
        for svc in self.services.values():
            if svc.client:
                svc.client.close()
            started = svc.local or svc.container
            if started:
                started.stop()
                if started.cpu_seconds is not None:
                    cpu[svc.name] = started.cpu_seconds
        if self.launcher is not None:
            self.launcher.close()
        return cpu

    def warnings(self) -> list[str]:
        return [w for s in self.services.values() for w in s.warnings]

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

    def check_scorer_limits(self) -> None:
        """The run's scorer requests must lie inside the scorer's declared ScorerInfo.limits (a batch of
        clips, the bootstrap's resamples): fail before any work, naming the config key, not once per call.
        A scorer that declares no limits (one that predates them) is asked as before."""
        info = self.scorer.role_info(scorer_pb2.ScorerInfo)
        if not info.HasField("limits"):
            return
        limits, cfg = info.limits, self.cfg.scorer
        asked = (
            ("scorer.batch_size", cfg.batch_size, limits.max_clips_per_request, "max_clips_per_request"),
            (
                "scorer.bootstrap_resamples",
                cfg.bootstrap_resamples,
                limits.max_bootstrap_resamples,
                "max_bootstrap_resamples",
            ),
        )
        for key, value, limit, declared in asked:
            if limit and value > limit:
                where = f"the scorer's ScorerInfo.limits.{declared}"
                raise RunError(f"{key}: {value} is over {where} {limit}; set it to at most {limit}")

    def check_transform_steps(self) -> None:
        """Every transform step's parameters must be options its service declares, inside their ranges
        (TransformInfo.ranges): fail before any work, naming the step, not once per clip."""
        for condition, steps in self.cfg.conditions.items():
            for k, step in enumerate(steps):
                if step.transform is None:
                    continue
                info = self.services[step.transform].role_info(transform_pb2.TransformInfo)
                ranges = {r.name: r for r in info.ranges}
                for key, value in step.parameters.items():
                    problem = _outside(ranges.get(key), value, sorted(ranges))
                    if problem:
                        raise RunError(f"conditions.{condition}[{k}].parameters.{key}={value!r}: {problem}")

    def check_resynthesis_steps(self) -> None:
        """A condition's resynthesize step must name a generator that declares RECONSTRUCT."""
        for condition, steps in self.cfg.conditions.items():
            for k, step in enumerate(steps):
                if step.resynthesize is None:
                    continue
                info = self.services[step.resynthesize].role_info(generator_pb2.GeneratorInfo)
                if generator_pb2.RECONSTRUCT not in info.tasks:
                    raise RunError(
                        f"conditions.{condition}[{k}].resynthesize: {step.resynthesize} does not declare RECONSTRUCT"
                    )

    def check_watermarks(self) -> None:
        """A generator's ``watermark`` must name a transform of kind WATERMARK: fail before any work."""
        for name, gen in self.cfg.generators.items():
            if gen.watermark is None:
                continue
            kind = self.services[gen.watermark].role_info(transform_pb2.TransformInfo).kind
            if kind != transform_pb2.WATERMARK:
                raise RunError(
                    f"generators.{name}.watermark: {gen.watermark} is a {transform_pb2.TransformKind.Name(kind)} "
                    "transform, not a WATERMARK one"
                )

    def check_unchanged(self, previous: dict[str, Any] | None) -> None:
        """On resume, each service must be the same model as before (``compare.model_identity``: name,
        version, weights, calibration) and, when launched from an image both times, the same image (its id)."""
        for name, rec in (previous or {}).get("services", {}).items():
            if name not in self.services:
                continue
            now = self.services[name].record()
            changes = identity_changes(rec["info"], now["info"])
            old_id, new_id = (rec.get("image") or {}).get("id"), (now.get("image") or {}).get("id")
            if old_id and new_id:
                changes.append(("image id", old_id, new_id))
            for key, was, is_ in changes:
                if was != is_:
                    raise RunError(
                        f"{name}: {key} changed since this run started "
                        f"({was!r} -> {is_!r}); results would mix two models: use a new --out"
                    )


def _outside(bound: transform_pb2.OptionRange | None, value: str, known: list[str]) -> str:
    """Why ``value`` is not one the option accepts, or "" when it is."""
    if bound is None:
        return f"the service declares no such option (it has: {', '.join(known) or 'none'})"
    if bound.choices:
        return "" if value in bound.choices else f"not one of {', '.join(bound.choices)}"
    try:
        number = float(value)
    except ValueError:
        return "not a number"
    ok = bound.min_value <= number <= bound.max_value
    return "" if ok else f"outside [{bound.min_value:g}, {bound.max_value:g}]"


def _where(name: str, role: str) -> str:
    """An entry's place in the config: generators.NAME, detectors.NAME or scorer."""
    return "scorer" if role == "scorer" else f"{role}s.{name}"

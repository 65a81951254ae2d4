"""Launch by image: a run config entry with ``image:`` becomes a hardened container that the orchestrator
starts with the Docker SDK, waits for (grpc.health.v1 SERVING), records (image id and digests) and
removes at the end of the run, on failure and on Ctrl-C.

Every container gets the compose services' settings (docker-compose.yml, ``x-hardened`` and
``x-model``: user 10001:10001, read-only root file system, a 512 MB tmpfs on /tmp, every capability
dropped, no-new-privileges, 256 pids, 1 CPU, 3 GB) and no swap. An entry's ``container:`` may change
the limits, the (never root) user, the environment and a model directory mounted read-only at
/model; not the hardening.

No egress: the fleet's containers share one *internal* bridge network of their own (like the compose
stack's ``arena``). Docker 20.10 publishes no port of a container whose network is internal (``-p``
is accepted and silently dropped), and ``--network none`` leaves no way in at all, so the
orchestrator dials the container's address on that network: the host holds the bridge's gateway
address and reaches it; the container reaches nothing beyond the bridge but the host itself (as on
the compose network). So the orchestrator runs on the Docker host: not in a container, not against a
remote daemon.

No image is ever pulled unless its entry says ``pull: true``. The image is run by id, so what ran is
what run.json records even if the tag moves meanwhile. The containers and the network carry the
labels of ``container_reaper`` (one owner id per fleet): ``Launcher.close`` removes whatever is left
of them, and a reaper process removes them if the orchestrator itself is killed.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors
import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from voxarena.orchestrator import ctrl_c
from voxarena.orchestrator.fleet.clients import ServiceStartError, channel
from voxarena.orchestrator.fleet.container_reaper import LAUNCHED_BY, LAUNCHER, OWNER, remove_owned
from voxarena.orchestrator.fleet.service_config import MODEL_DIR_MOUNT, ContainerConfig
from voxarena.transport import PLAINTEXT, ClientSecurity

TMPFS = {"/tmp": "size=512m"}  # the compose services' tmpfs
STOP_GRACE_SECONDS = 10  # SIGTERM, then SIGKILL (the SDK's servers stop at once on SIGTERM)
LOG_LINES = 20  # a failed start shows this many of the container's last log lines


class ContainerError(ServiceStartError):
    """An image entry that cannot be launched or never serves; the message names the entry and image."""


@dataclass(frozen=True)
class ImageIdentity:
    """What an entry ran: the reference it named, the image id (sha256 of the image's config: the same
    image has the same id on every machine) and its registry digests (only once pulled or pushed)."""

    ref: str
    id: str
    repo_digests: tuple[str, ...] = ()

    def record(self) -> dict[str, Any]:
        return {"ref": self.ref, "id": self.id, "repo_digests": list(self.repo_digests)}


def hardening(c: ContainerConfig) -> dict[str, Any]:
    """The host settings every launched container gets, as ``containers.run`` keywords."""
    return {
        "user": c.user,
        "read_only": True,
        "tmpfs": dict(TMPFS),
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges:true"],
        "privileged": False,
        "pids_limit": c.pids,
        "nano_cpus": round(c.cpus * 1e9),
        "mem_limit": c.memory,
        "memswap_limit": c.memory,  # the same as the memory limit: no swap
    }


def container_spec(
    name: str, role: str, image: ImageIdentity, c: ContainerConfig, network: str, owner: str
) -> dict[str, Any]:
    """The ``client.containers.run`` keywords of one entry: its image by id, on the fleet's internal
    network with no published port, hardened, labelled with the fleet's owner id."""
    return {
        "image": image.id,
        "name": f"voxarena-{name}-{owner[:8]}",
        "detach": True,
        "network": network,
        "environment": dict(c.env),
        "volumes": {c.model_dir: {"bind": MODEL_DIR_MOUNT, "mode": "ro"}} if c.model_dir else {},
        "labels": {
            LAUNCHED_BY: LAUNCHER,
            OWNER: owner,
            "voxarena.service": name,
            "voxarena.role": role,
            "voxarena.image": image.ref,
        },
        **hardening(c),
    }


def _explain(e: Exception) -> str:
    return str(getattr(e, "explanation", None) or e)


class Launcher:
    """The Docker side of one fleet: the client, the owner id, the internal network and the reaper."""

    def __init__(self, logs_dir: Path) -> None:
        try:
            self.client = docker.from_env()
            self.client.ping()
        except docker.errors.DockerException as e:
            raise ContainerError(f"no Docker daemon to launch images with: {_explain(e)}") from None
        self.owner = uuid.uuid4().hex
        self.logs_dir = logs_dir
        self.network = f"voxarena-{self.owner[:12]}"
        self._started = False
        self._reaper: subprocess.Popen[bytes] | None = None

    def resolve(self, where: str, ref: str, pull: bool) -> ImageIdentity:
        """The image ``ref`` names, present locally; pulled first only if ``pull``. ``where``: the entry."""
        try:
            image = self.client.images.get(ref)
        except docker.errors.ImageNotFound:
            if not pull:
                raise ContainerError(
                    f"{where}.image: {ref} is not present locally (docker images); build it or `docker load` it, "
                    "or set container.pull: true to pull it from its registry (never done unless asked)"
                ) from None
            try:
                image = self.client.images.pull(ref)
            except docker.errors.DockerException as e:
                raise ContainerError(f"{where}.image: pulling {ref} failed: {_explain(e)}") from None
        except docker.errors.DockerException as e:
            raise ContainerError(f"{where}.image: {ref}: {_explain(e)}") from None
        return ImageIdentity(ref, image.id, tuple(image.attrs.get("RepoDigests") or ()))

    def launch(self, name: str, role: str, image: ImageIdentity, c: ContainerConfig) -> ImageService:
        if not self._started:
            self._start()
        svc = ImageService(self, name, role, image, c)
        svc.start()
        return svc

    def _start(self) -> None:
        """The reaper first (so nothing made after it can outlive us), then the internal network."""
        self._reaper = subprocess.Popen(
            [sys.executable, "-m", "voxarena.orchestrator.fleet.container_reaper", self.owner],
            stdin=subprocess.PIPE,
            start_new_session=True,
        )
        self._started = True
        try:
            self.client.networks.create(
                self.network, driver="bridge", internal=True, labels={LAUNCHED_BY: LAUNCHER, OWNER: self.owner}
            )
        except docker.errors.DockerException as e:
            raise ContainerError(f"the internal network {self.network} could not be made: {_explain(e)}") from None

    def close(self) -> list[str]:
        """Remove whatever is left of this fleet (a container whose start was interrupted, the network)
        and let the reaper go; returns what it had to remove."""
        removed: list[str] = []
        if self._started:
            try:
                removed = remove_owned(self.client, self.owner)
            except docker.errors.DockerException:
                pass  # the reaper tries again as it leaves
        if self._reaper is not None and self._reaper.stdin is not None:
            self._reaper.stdin.close()
            try:
                self._reaper.wait(30)
            except subprocess.TimeoutExpired:
                pass  # it finishes on its own; it holds nothing of ours
            self._reaper = None
        return removed


class ImageService:
    """One entry's container: started, waited for, described for run.json, stopped and removed."""

    def __init__(self, launcher: Launcher, name: str, role: str, image: ImageIdentity, c: ContainerConfig) -> None:
        self.launcher, self.name, self.role, self.image, self.settings = launcher, name, role, image, c
        self.log_path = launcher.logs_dir / f"{name}.log"
        self.container: Any = None
        self.container_name = ""
        self.address: str | None = None
        self.start_to_serving: float | None = None
        self.cpu_seconds: float | None = None

    @property
    def label(self) -> str:
        return f"{self.name} (image {self.image.ref}, {self.image.id[:19]})"

    def spec(self) -> dict[str, Any]:
        return container_spec(
            self.name, self.role, self.image, self.settings, self.launcher.network, self.launcher.owner
        )

    def start(self) -> None:
        spec = self.spec()
        self.container_name = spec["name"]
        self.started = time.monotonic()
        try:
            self.container = self.launcher.client.containers.run(**spec)
        except docker.errors.DockerException as e:
            raise ContainerError(f"{self.label}: the container did not start: {_explain(e)}") from None

    def wait_ready(self, timeout: float, security: ClientSecurity = PLAINTEXT) -> str:
        """Poll grpc.health.v1 on the container's address until SERVING; fail at once, with its last log
        lines, if the container exits, and after ``timeout`` seconds if it never serves."""
        deadline = time.monotonic() + timeout
        last, ch = "no address yet", None
        try:
            while True:
                ctrl_c.check()
                self.container.reload()
                state = self.container.attrs["State"]
                if state["Status"] in ("exited", "dead"):
                    oom = f" (out of memory: limit {self.settings.memory})" if state.get("OOMKilled") else ""
                    raise ContainerError(
                        f"{self.label}: the container exited with code {state.get('ExitCode')}{oom} before "
                        f"SERVING; its last log lines:\n{self.log_tail()}"
                    )
                if time.monotonic() > deadline:
                    raise ContainerError(
                        f"{self.label}: not SERVING within {timeout:.0f} s (last: {last}); its last log lines:\n"
                        f"{self.log_tail()}"
                    )
                ip = self.container.attrs["NetworkSettings"]["Networks"].get(self.launcher.network, {}).get("IPAddress")
                if ip and ch is None:
                    self.address = f"{ip}:{self.settings.port}"
                    ch = channel(self.address, security)
                if ch is not None:
                    last = _health(ch)
                    if last == "SERVING":
                        self.start_to_serving = time.monotonic() - self.started
                        return f"{ip}:{self.settings.port}"
                time.sleep(0.1)
        finally:
            if ch is not None:
                ch.close()

    def log_tail(self, n: int = LOG_LINES) -> str:
        try:
            return self.container.logs(tail=n).decode(errors="replace").rstrip() or "(it wrote nothing)"
        except docker.errors.DockerException as e:
            return f"(no logs: {_explain(e)})"

    def stop(self, grace: int = STOP_GRACE_SECONDS) -> None:
        """Stop (SIGTERM, then SIGKILL after ``grace``) and remove the container, keeping its CPU time
        and its whole log (``logs/NAME.log``, as a local service's)."""
        if self.container is None:
            return
        container, self.container = self.container, None
        try:
            stats = container.stats(stream=False, one_shot=True)
            self.cpu_seconds = stats["cpu_stats"]["cpu_usage"]["total_usage"] / 1e9
        except (docker.errors.DockerException, KeyError, TypeError):
            pass
        try:
            container.stop(timeout=int(grace))  # the API takes whole seconds (a float is refused)
        except docker.errors.DockerException:
            pass  # removed by force below
        try:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self.log_path.write_bytes(container.logs())
        except (docker.errors.DockerException, OSError):
            pass
        try:
            container.remove(force=True)
        except docker.errors.DockerException:
            pass  # Launcher.close (and the reaper) remove it by its label

    def record(self) -> dict[str, Any]:
        """What run.json says of the container: the image's identity, how it ran, how long it took to serve."""
        spec = self.spec()
        return {
            **self.image.record(),
            "container": {
                "name": self.container_name,
                "network": f"{self.launcher.network} (internal)",
                "env": sorted(self.settings.env),
                "model_dir": self.settings.model_dir,
                "cpus": self.settings.cpus,
                **{k: spec[k] for k in ("user", "read_only", "cap_drop", "security_opt", "pids_limit", "mem_limit")},
            },
            "start_to_serving_seconds": None if self.start_to_serving is None else round(self.start_to_serving, 3),
        }


def _health(ch: grpc.Channel) -> str:
    """The service's grpc.health.v1 status, or the call's error."""
    try:
        resp = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(service=""), timeout=2.0)
        return str(health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status))
    except grpc.RpcError as e:
        return f"{e.code().name}: {e.details()}"

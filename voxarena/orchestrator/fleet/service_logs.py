"""Where a service of a run writes its log, and the lines of it that name a request.

run.json records how each service was reached (``Service.record``: ``mode`` local, image or remote, and
its ``address``) and the run's ``stack``. From that:

- local: ``RUN/logs/NAME.log``, the process's stderr;
- image (a container the run launched from its config): ``RUN/logs/NAME.log`` once the run stopped it
  (its whole log is kept there), before that the container itself (``docker logs CONTAINER``);
- remote at ``dns:///NAME:50051`` on the compose stack: the deployment's service NAME. run.json cannot
  tell a compose project from a swarm stack from a kubernetes namespace (each runs ``--stack compose``),
  so the caller says which (``PLATFORMS``; ``auto``: kubernetes inside a pod, else compose). Compose: the
  containers labelled with the service (``docker-compose logs NAME``); swarm: the service
  ``voxarena_NAME`` (``docker service logs``); kubernetes: ``kubectl logs``, printed, never run;
- remote at any other address: its log is wherever it runs, which the run does not know.

The docker SDK is imported only when a container's log is read. A request is named by its id where a
log line has it as a whole word: ``call method=... request_id=A,B code=...`` (the SDK's line for every
finished call; a batch joins its items' ids with commas), an error message ``ID: ...`` or a traceback's
first line; the lines after an error line that continue it (a traceback) come with it.
"""

from __future__ import annotations

import os
import re
import shlex
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Any

PLATFORMS = ("auto", "compose", "swarm", "kubernetes")
COMPOSE_SERVICE_LABEL = "com.docker.compose.service"
SWARM_STACK = "voxarena"  # compose/swarm.yml: `docker stack deploy -c compose/swarm.yml voxarena`
K8S_NAMESPACE = "voxarena"  # deploy/k8s/base/namespace.yaml
K8S_NAME_LABEL = "app.kubernetes.io/name"
COMPOSE_PORT = 50051
# A new log record: Python logging's asctime, or gRPC core's "E1205 ..." prefix. Other lines continue one.
_RECORD_START = re.compile(r"^(\S+\s+\|\s+)?(\d{4}-\d\d-\d\d|[EWIDF]\d{4} )")
MAX_CONTINUATION = 60  # traceback lines kept after an error line
_ERROR = re.compile(r"\b(ERROR|CRITICAL|FATAL)\b|Traceback|Exception")


class LogUnavailable(RuntimeError):
    """The log cannot be read from here: the message says why and how to read it."""


class LogSource(ABC):
    """A service's log: where it is, how to search it by hand, and its lines when readable from here."""

    def __init__(self, service: str) -> None:
        self.service = service

    @abstractmethod
    def where(self) -> str:
        """The file to read or the command that prints the log."""

    def grep(self, request_id: str) -> str:
        """A shell command that prints the log's lines naming ``request_id``."""
        return f"{self.where()} 2>&1 | grep -F -- {shlex.quote(request_id)}"

    @abstractmethod
    def lines(self) -> list[str]:
        """Every line of the log; ``LogUnavailable`` when it cannot be read from here."""


class FileLog(LogSource):
    def __init__(self, service: str, path: Path) -> None:
        super().__init__(service)
        self.path = path

    def where(self) -> str:
        return str(self.path)

    def grep(self, request_id: str) -> str:
        return f"grep -F -- {shlex.quote(request_id)} {shlex.quote(str(self.path))}"

    def lines(self) -> list[str]:
        try:
            return self.path.read_text(errors="replace").splitlines()
        except OSError as e:
            raise LogUnavailable(f"{self.path}: {e.strerror or e}") from None


def docker_from_env() -> Any:
    """The docker SDK's client of this machine's daemon; ``LogUnavailable`` when there is none."""
    try:
        import docker

        client = docker.from_env()
        client.ping()
    except Exception as e:  # ImportError, DockerException: either way there is no daemon to ask
        raise LogUnavailable(f"no Docker daemon to read logs from: {getattr(e, 'explanation', None) or e}") from None
    return client


def _decode(blob: bytes | Iterable[bytes]) -> list[str]:
    data = blob if isinstance(blob, bytes) else b"".join(blob)
    return data.decode(errors="replace").splitlines()


class DockerLog(LogSource):
    """Logs read through the docker SDK (``client``: ``docker.from_env`` unless a test gives another)."""

    def __init__(self, service: str, client: Callable[[], Any] = docker_from_env) -> None:
        super().__init__(service)
        self.client = client

    def lines(self) -> list[str]:
        import docker.errors

        try:
            return self._read(self.client())
        except docker.errors.DockerException as e:
            raise LogUnavailable(f"{self.where()}: {getattr(e, 'explanation', None) or e}") from None

    @abstractmethod
    def _read(self, client: Any) -> list[str]: ...


class ContainerLog(DockerLog):
    """A container the run launched from an image, by its name (run.json: image.container.name)."""

    def __init__(self, service: str, container: str, client: Callable[[], Any] = docker_from_env) -> None:
        super().__init__(service, client)
        self.container = container

    def where(self) -> str:
        return f"docker logs {shlex.quote(self.container)}"

    def _read(self, client: Any) -> list[str]:
        return _decode(client.containers.get(self.container).logs(stdout=True, stderr=True))


class ComposeLog(DockerLog):
    """Every container (replicas included) of a compose service, each line prefixed as docker-compose does."""

    def where(self) -> str:
        return f"docker-compose logs --no-color {shlex.quote(self.service)}"

    def _read(self, client: Any) -> list[str]:
        found = client.containers.list(all=True, filters={"label": f"{COMPOSE_SERVICE_LABEL}={self.service}"})
        if not found:
            raise LogUnavailable(f"no container of the compose service {self.service!r} here; run: {self.where()}")
        return [f"{c.name} | {line}" for c in found for line in _decode(c.logs(stdout=True, stderr=True))]


class SwarmLog(DockerLog):
    """A swarm service of the voxarena stack (every task of it)."""

    @property
    def swarm_service(self) -> str:
        return f"{SWARM_STACK}_{self.service}"

    def where(self) -> str:
        return f"docker service logs --raw {shlex.quote(self.swarm_service)}"

    def _read(self, client: Any) -> list[str]:
        found = [s for s in client.services.list(filters={"name": self.swarm_service}) if s.name == self.swarm_service]
        if not found:
            raise LogUnavailable(f"no swarm service {self.swarm_service!r} here; run: {self.where()}")
        return _decode(found[0].logs(stdout=True, stderr=True))


class KubernetesLog(LogSource):
    """The pods of a deployment in the voxarena namespace: the command only (no kubernetes client here)."""

    def where(self) -> str:
        selector = f"{K8S_NAME_LABEL}={self.service}"
        return f"kubectl logs -n {K8S_NAMESPACE} -l {selector} --all-containers --prefix --tail=-1"

    def lines(self) -> list[str]:
        raise LogUnavailable(f"read it with kubectl: {self.where()}")


class RemoteLog(LogSource):
    """A service the run reached at an address it was given: its log is wherever it runs."""

    def __init__(self, service: str, address: str) -> None:
        super().__init__(service)
        self.address = address

    def where(self) -> str:
        return f"the log of the service at {self.address} (it runs outside this run's reach)"

    def grep(self, request_id: str) -> str:
        return f"search the log of the service at {self.address} for {request_id!r}"

    def lines(self) -> list[str]:
        raise LogUnavailable(f"{self.service} was reached at {self.address}: its log is where it runs")


def resolve_platform(platform: str) -> str:
    """``auto``: kubernetes inside a pod (the service-host variable kubelet sets), else compose."""
    if platform not in PLATFORMS:
        raise ValueError(f"unknown platform {platform!r}; use one of {', '.join(PLATFORMS)}")
    if platform != "auto":
        return platform
    return "kubernetes" if os.environ.get("KUBERNETES_SERVICE_HOST") else "compose"


def log_source(
    run_dir: Path,
    record: dict[str, Any],
    service: str,
    platform: str = "auto",
    client: Callable[[], Any] = docker_from_env,
) -> LogSource:
    """Where ``service`` of the run (``record``: its run.json) wrote its log, as run.json tells."""
    rec = record.get("services", {}).get(service, {})
    mode, address = rec.get("mode", "local"), rec.get("address") or ""
    kept = run_dir / "logs" / f"{service}.log"
    if mode == "local":
        return FileLog(service, kept)
    if mode == "image":
        container = rec.get("image", {}).get("container", {}).get("name", "")
        return FileLog(service, kept) if kept.exists() or not container else ContainerLog(service, container, client)
    if record.get("stack") == "compose" and address == f"dns:///{service}:{COMPOSE_PORT}":
        chosen = resolve_platform(platform)
        if chosen == "kubernetes":
            return KubernetesLog(service)
        return SwarmLog(service, client) if chosen == "swarm" else ComposeLog(service, client)
    return RemoteLog(service, address)


def _naming(request_id: str) -> re.Pattern[str]:
    """``request_id`` as a whole word: not part of a longer id (``X|i2d2``, ``DET|X``, an echo ``X-x``)."""
    return re.compile(r"(?<![^\s,=:(\[\"'])" + re.escape(request_id) + r"(?![^\s,:;)\]\"'])")


def lines_naming(lines: list[str], request_ids: Collection[str]) -> list[tuple[int, str]]:
    """(1-based line number, line) of every line naming one of ``request_ids``; an error line comes with
    the lines that continue it (its traceback), at most ``MAX_CONTINUATION`` of them."""
    patterns = [_naming(i) for i in request_ids if i]
    out: list[tuple[int, str]] = []
    k = 0
    while k < len(lines):
        line = lines[k]
        k += 1
        if not any(p.search(line) for p in patterns):
            continue
        out.append((k, line))
        if not _ERROR.search(line):
            continue
        start = k
        while k < len(lines) and k - start < MAX_CONTINUATION and lines[k] and not _RECORD_START.match(lines[k]):
            out.append((k + 1, lines[k]))
            k += 1
    return out

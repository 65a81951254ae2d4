"""A real gRPC server in this process, for tests (ours and a vendor's): ``serve_in_process(model)``.

The server is the one ``serve`` runs (health, reflection, the interceptor's error mapping and call log,
admission, message-size limits), bound to ``127.0.0.1:0`` by default; the model is loaded and marked
ready and the call returns once a ``grpc.health.v1`` Check answers SERVING::

    from voxarena.sdk.testing import serve_in_process

    with serve_in_process(MyTTS()) as served:
        response = served.stub().Synthesize(request)  # or: served.address, served.port, served.channel

Any role works (generator, detector, transform); ``served.stub()`` is the stub of the model's role.
Not a context manager's only form: ``served = serve_in_process(model)`` ... ``served.stop()``. A server
with TLS (``security=ServerSecurity(...)``) is reached with ``client=ClientSecurity(...)`` (its CA, and
its client certificate under mTLS; voxarena.transport).
``serve_servicers`` does the same for servicers written without the model base classes (the scorer),
and ``InProcessServer(built).start()`` for a server built by other means (``create_server``, by hand).
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any, Protocol

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from voxarena.transport import PLAINTEXT, ClientSecurity
from voxarena.v1 import detector_pb2_grpc, generator_pb2_grpc, transform_pb2_grpc

from .model import DetectorModel, GeneratorModel, TransformModel, _ModelBase
from .server import Registration, create_model_server, create_server
from .servicers import DEFAULT_MAX_MESSAGE_MB

LOCAL_ADDRESS = "127.0.0.1:0"
WILDCARD_HOSTS = ("[::]", "0.0.0.0", "")
READY_SECONDS = 30.0  # the first health Check's deadline; a server in this process answers in milliseconds

_ROLE_STUBS: tuple[tuple[type[_ModelBase], Callable[[grpc.Channel], Any]], ...] = (
    (GeneratorModel, generator_pb2_grpc.GeneratorServiceStub),
    (DetectorModel, detector_pb2_grpc.DetectorServiceStub),
    (TransformModel, transform_pb2_grpc.TransformServiceStub),
)


class BuiltServer(Protocol):
    """A server built and not yet started: ``RunningServer``, or one made by hand with health."""

    server: grpc.Server
    port: int

    def set_serving(self, serving: bool) -> None: ...


class InProcessServer:
    """A built server started in this process, with a channel to it (``client``'s transport security;
    plaintext by default).

    ``start`` starts it, runs ``load`` if any (the model's ``load()`` and ``mark_ready()``; a servicer's
    ``load``), and with ``ready`` sets health SERVING and waits until a health Check says so. Without
    ``ready`` the server stays NOT_SERVING (a test of the loading state) and ``start`` waits for any
    health answer. ``stop`` closes the channel and stops the server (``grace`` seconds for calls in flight).
    """

    def __init__(
        self,
        running: BuiltServer,
        load: Callable[[], None] | None = None,
        ready: bool = True,
        host: str = "127.0.0.1",
        model: _ModelBase | None = None,
        max_message_mb: float = DEFAULT_MAX_MESSAGE_MB,
        client: ClientSecurity = PLAINTEXT,
    ) -> None:
        self.running, self.model, self.client = running, model, client
        self._load, self._ready = load, ready
        self.host = "localhost" if host in WILDCARD_HOSTS else host
        # The client never the stricter side (grpc's send limit is none): a message refused is refused by the
        # server under test.
        limit = int(max(max_message_mb, DEFAULT_MAX_MESSAGE_MB) * 1024 * 1024)
        self._channel_options: list[tuple[str, object]] = [("grpc.max_receive_message_length", limit)]
        self._channel: grpc.Channel | None = None

    @property
    def port(self) -> int:
        return self.running.port

    @property
    def address(self) -> str:
        """``host:port`` to dial (``localhost`` for a server bound to every interface)."""
        return f"{self.host}:{self.port}"

    @property
    def channel(self) -> grpc.Channel:
        """A channel to the server, made on first use and closed by ``stop``."""
        if self._channel is None:
            self._channel = self.client.channel(self.address, self._channel_options)
        return self._channel

    def stub(self, stub_class: Callable[[grpc.Channel], Any] | None = None) -> Any:
        """A ``stub_class`` stub on ``channel``; by default the stub of the served model's role."""
        if stub_class is None:
            stub_class = next((stub for role, stub in _ROLE_STUBS if isinstance(self.model, role)), None)
            if stub_class is None:
                raise TypeError("no model served here: name the stub class, e.g. stub(ScorerServiceStub)")
        return stub_class(self.channel)

    def start(self) -> InProcessServer:
        self.running.server.start()
        if self._ready:
            if self._load is not None:
                self._load()
            self.running.set_serving(True)
        self.wait_for_health(serving=self._ready)
        return self

    def wait_for_health(self, serving: bool = True, timeout: float = READY_SECONDS) -> None:
        """Until a health Check answers (SERVING, when ``serving``); RuntimeError saying what it answered."""
        with self.client.channel(self.address) as channel:
            answer = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(), timeout=timeout, wait_for_ready=True
            )
        if serving and answer.status != health_pb2.HealthCheckResponse.SERVING:
            status = health_pb2.HealthCheckResponse.ServingStatus.Name(answer.status)
            raise RuntimeError(f"the server at {self.address} answers {status}, not SERVING")

    def stop(self, grace: float = 0.0) -> None:
        if self._channel is not None:
            self._channel.close()
            self._channel = None
        self.running.server.stop(grace).wait()

    def __enter__(self) -> InProcessServer:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def serve_in_process(
    model: _ModelBase,
    address: str = LOCAL_ADDRESS,
    *,
    ready: bool = True,
    client: ClientSecurity = PLAINTEXT,
    **server_options: Any,
) -> InProcessServer:
    """``model`` behind a real server in this process, started; with ``ready`` (the default) loaded,
    marked ready and SERVING. ``server_options`` go to ``create_model_server`` (``max_message_mb``,
    ``workers``, ``max_queue``, ``security``); ``client``: how to reach a TLS server."""
    _check_transport(server_options, client)
    running = create_model_server(model, address, **server_options)

    def load() -> None:
        model.load()
        model.mark_ready()

    max_message_mb = server_options.get("max_message_mb", DEFAULT_MAX_MESSAGE_MB)
    served = InProcessServer(running, load, ready, _host(address), model, max_message_mb, client)
    return served.start()


def serve_servicers(
    registrations: list[Registration],
    address: str = LOCAL_ADDRESS,
    *,
    load: Callable[[], None] | None = None,
    client: ClientSecurity = PLAINTEXT,
    **server_options: Any,
) -> InProcessServer:
    """Servicers (``create_server``'s registrations) behind a real server in this process, started,
    ``load`` run (e.g. the scorer's ``servicer.load``) and SERVING; ``stub(StubClass)`` to call them."""
    _check_transport(server_options, client)
    running = create_server(registrations, address, **server_options)
    max_message_mb = server_options.get("max_message_mb", DEFAULT_MAX_MESSAGE_MB)
    return InProcessServer(running, load, True, _host(address), None, max_message_mb, client).start()


def _check_transport(server_options: dict[str, Any], client: ClientSecurity) -> None:
    security = server_options.get("security")
    if security is not None and security.tls and not client.tls:
        raise TypeError("a TLS server is reached over TLS: pass client=ClientSecurity(ca=...) too")


def _host(address: str) -> str:
    return address.rpartition(":")[0]

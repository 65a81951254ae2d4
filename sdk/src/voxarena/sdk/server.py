"""The server runtime shared by every model service (KServe's shape: servicer, interceptor, server).

``create_server`` builds a real gRPC server (health, reflection, the interceptor's error mapping and
call log, admission, message-size limits, TLS) for servicers; ``create_model_server`` for a model, with
its role's servicer (``servicers``, ``transform_servicer``). ``serve`` is the ``python -m <service>
--port N`` entry point: it starts the server, announces its port, loads the model (health NOT_SERVING
until then, requests UNAVAILABLE), and shuts down gracefully on SIGTERM/SIGINT. Tests and vendors
start a server in process with ``voxarena.sdk.testing``.

The servicers' and the interceptor's public names are importable from here as before the split.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from types import FrameType
from typing import Any

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from voxarena.lifecycle import PORT_ANNOUNCEMENT, die_with_parent
from voxarena.transport import DEFAULT_TOKEN_ENV, ENV_CERT, ENV_CLIENT_CA, ENV_KEY, ServerSecurity, TransportConfigError
from voxarena.v1 import detector_pb2, detector_pb2_grpc, generator_pb2, generator_pb2_grpc

from .admission import DEFAULT_CONCURRENCY, DEFAULT_MAX_QUEUE, Admission
from .interceptors import ErrorMappingInterceptor as ErrorMappingInterceptor
from .interceptors import UndecodableRequest as UndecodableRequest
from .interceptors import call_log_line as call_log_line
from .interceptors import tolerant_deserializer as tolerant_deserializer
from .metrics import ENV_METRICS_PORT, ServiceMetrics, metrics_port_argument
from .model import DetectorModel, GeneratorModel, TransformModel, _ModelBase
from .servicers import DEFAULT_MAX_MESSAGE_MB as DEFAULT_MAX_MESSAGE_MB
from .servicers import RESPONSE_HEADROOM_BYTES as RESPONSE_HEADROOM_BYTES
from .servicers import DetectorServicer as DetectorServicer
from .servicers import GeneratorServicer as GeneratorServicer
from .servicers import Stopwatch as Stopwatch
from .servicers import model_info as model_info

log = logging.getLogger("voxarena.service")

Registration = tuple[str, Callable[[grpc.Server], None]]
"""A service's full name and the function that adds its servicer to a server."""


@dataclass
class RunningServer:
    """A built server (started by the caller), its bound port, its health servicer and its admission."""

    server: grpc.Server
    port: int
    health: health.HealthServicer
    service_names: tuple[str, ...]
    admission: Admission | None = None
    metrics: ServiceMetrics | None = None

    def set_serving(self, serving: bool) -> None:
        status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        for name in ("",) + self.service_names:
            self.health.set(name, status)


def model_registration(model: _ModelBase, max_message_mb: float = DEFAULT_MAX_MESSAGE_MB) -> Registration:
    """The registration of ``model``'s role servicer; TypeError for a model of no role."""
    if isinstance(model, GeneratorModel):
        generator = GeneratorServicer(model, max_message_mb)
        name = generator_pb2.DESCRIPTOR.services_by_name["GeneratorService"].full_name
        return name, lambda s: generator_pb2_grpc.add_GeneratorServiceServicer_to_server(generator, s)
    if isinstance(model, DetectorModel):
        detector = DetectorServicer(model)
        name = detector_pb2.DESCRIPTOR.services_by_name["DetectorService"].full_name
        return name, lambda s: detector_pb2_grpc.add_DetectorServiceServicer_to_server(detector, s)
    if isinstance(model, TransformModel):
        from voxarena.v1 import transform_pb2, transform_pb2_grpc

        from .transform_servicer import TransformServicer

        transform = TransformServicer(model, max_message_mb)
        name = transform_pb2.DESCRIPTOR.services_by_name["TransformService"].full_name
        return name, lambda s: transform_pb2_grpc.add_TransformServiceServicer_to_server(transform, s)
    raise TypeError(f"{type(model).__name__} is not a GeneratorModel, DetectorModel or TransformModel")


def create_server(
    registrations: list[Registration],
    address: str = "[::]:0",
    max_message_mb: float = DEFAULT_MAX_MESSAGE_MB,
    workers: int = DEFAULT_CONCURRENCY,
    security: ServerSecurity | None = None,
    max_queue: int = DEFAULT_MAX_QUEUE,
    metrics: ServiceMetrics | None = None,
) -> RunningServer:
    """A started-later gRPC server with the given services plus health and reflection.

    Returns the server and its bound port (use port 0 in tests). Health starts NOT_SERVING.
    ``workers``: work calls (every method of ``registrations`` but GetInfo) in flight at once;
    ``max_queue`` more wait for a slot, and beyond that a call is RESOURCE_EXHAUSTED at once. The
    thread pool is larger, so health checks and GetInfo answer while every slot is busy.
    ``security``: TLS / mTLS credentials and a bearer token (voxarena.transport); plaintext without.
    ``metrics``: the server's Prometheus metrics (voxarena.sdk.metrics), counted by the interceptor.
    """
    security = security or ServerSecurity()
    limit = int(max_message_mb * 1024 * 1024)
    admission = Admission(workers, max_queue, tuple(name for name, _ in registrations))
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=admission.threads),
        interceptors=[*security.interceptors(), ErrorMappingInterceptor(admission, metrics)],
        options=[
            ("grpc.max_receive_message_length", limit),
            ("grpc.max_send_message_length", limit),
            ("grpc.so_reuseport", 0),
        ],
    )
    names = []
    for name, add in registrations:
        add(server)
        names.append(name)
    health_servicer = health.HealthServicer()
    health_pb2_grpc.add_HealthServicer_to_server(health_servicer, server)
    reflection.enable_server_reflection(
        tuple(names) + (health_pb2.DESCRIPTOR.services_by_name["Health"].full_name, reflection.SERVICE_NAME), server
    )
    credentials = security.credentials()
    port = server.add_secure_port(address, credentials) if credentials else server.add_insecure_port(address)
    if port == 0:
        raise OSError(f"could not bind {address}")
    if metrics is not None:
        metrics.watch(admission)
    running = RunningServer(
        server=server,
        port=port,
        health=health_servicer,
        service_names=tuple(names),
        admission=admission,
        metrics=metrics,
    )
    running.set_serving(False)
    return running


def model_role(model: _ModelBase) -> str:
    """generator, detector or transform."""
    for cls, role in ((GeneratorModel, "generator"), (DetectorModel, "detector"), (TransformModel, "transform")):
        if isinstance(model, cls):
            return role
    raise TypeError(f"{type(model).__name__} is not a GeneratorModel, DetectorModel or TransformModel")


def create_model_server(model: _ModelBase, address: str = "[::]:0", **kwargs: Any) -> RunningServer:
    max_message_mb = kwargs.get("max_message_mb", DEFAULT_MAX_MESSAGE_MB)
    return create_server([model_registration(model, max_message_mb)], address, **kwargs)


ENV_CONCURRENCY = "VOXARENA_CONCURRENCY"
ENV_MAX_QUEUE = "VOXARENA_MAX_QUEUE"


class _Count:
    """An argparse type: an integer >= ``minimum``; the error names the option's environment variable,
    where a bad default comes from."""

    def __init__(self, env: str, minimum: int) -> None:
        self.env, self.minimum = env, minimum

    def __call__(self, text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer (command line or ${self.env})") from None
        if value < self.minimum:
            raise argparse.ArgumentTypeError(f"{value} is less than {self.minimum} (command line or ${self.env})")
        return value


def add_service_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="[::]", help="address to bind (default all interfaces)")
    parser.add_argument("--port", type=int, default=50051, help="port to bind; 0 picks a free one")
    parser.add_argument(
        "--max-message-mb",
        type=float,
        default=DEFAULT_MAX_MESSAGE_MB,
        help="largest request/response in MiB; larger ones get RESOURCE_EXHAUSTED",
    )
    parser.add_argument(
        "--concurrency",
        "--workers",
        dest="workers",
        type=_Count(ENV_CONCURRENCY, minimum=1),
        default=os.environ.get(ENV_CONCURRENCY, str(DEFAULT_CONCURRENCY)),
        help=f"work calls (model calls) in flight at once; health and GetInfo answer beside them "
        f"(or ${ENV_CONCURRENCY}; default {DEFAULT_CONCURRENCY})",
    )
    parser.add_argument(
        "--max-queue",
        type=_Count(ENV_MAX_QUEUE, minimum=0),
        default=os.environ.get(ENV_MAX_QUEUE, str(DEFAULT_MAX_QUEUE)),
        help=f"work calls waiting for a slot; more get RESOURCE_EXHAUSTED at once "
        f"(or ${ENV_MAX_QUEUE}; default {DEFAULT_MAX_QUEUE})",
    )
    parser.add_argument(
        "--metrics-port",
        default=os.environ.get(ENV_METRICS_PORT, ""),
        help=f"serve Prometheus metrics on http://HOST:PORT/metrics (or ${ENV_METRICS_PORT}; default off)",
    )
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument("--tls-cert", help=f"PEM certificate: serve TLS (or ${ENV_CERT})")
    parser.add_argument("--tls-key", help=f"PEM private key of --tls-cert (or ${ENV_KEY})")
    parser.add_argument(
        "--tls-client-ca", help=f"PEM CA: demand client certificates it signed, mTLS (or ${ENV_CLIENT_CA})"
    )
    parser.add_argument(
        "--token-env",
        default=DEFAULT_TOKEN_ENV,
        help="environment variable holding the bearer token every call must carry (unset: no token)",
    )


def server_security(args: argparse.Namespace) -> ServerSecurity:
    """The transport security the parsed arguments (and the environment) ask for; exits 2 on a bad setting."""
    try:
        return ServerSecurity.from_settings(args.tls_cert, args.tls_key, args.tls_client_ca, args.token_env)
    except TransportConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None


def service_metrics(args: argparse.Namespace, host: str, name: str, role: str, version: str) -> ServiceMetrics | None:
    """The Prometheus metrics ``--metrics-port`` asks for, served already; None when off; exits 2 on a bad port
    or one that cannot be bound."""
    try:
        port = metrics_port_argument(args.metrics_port)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    if port is None:
        return None
    metrics = ServiceMetrics()
    metrics.describe_service(name, role, version)
    try:
        bound = metrics.serve(port, "0.0.0.0" if host in ("[::]", "0.0.0.0", "") else host.strip("[]"))
    except OSError as e:
        print(f"error: cannot serve metrics on port {port}: {e}", file=sys.stderr)
        raise SystemExit(2) from None
    log.info("%s: Prometheus metrics on port %d (/metrics)", name, bound)
    return metrics


def run_until_signalled(running: RunningServer, load: Callable[[], None], name: str, grace: float = 5.0) -> None:
    """Start, announce the port, load, serve until SIGTERM/SIGINT, then drain for ``grace`` seconds.

    The signal handler only sets an event: stopping a gRPC server from inside a handler that
    interrupted ``wait_for_termination`` can deadlock, leaving the process alive.
    """
    stop_requested = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        log.info("%s: signal %s, draining", name, signum)
        stop_requested.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    running.server.start()
    print(f"{PORT_ANNOUNCEMENT}{running.port}", flush=True)
    t0 = time.perf_counter()
    try:
        load()
    except Exception:
        log.exception("%s: load failed", name)
        running.server.stop(0).wait()
        # Same exit as below: interpreter shutdown with gRPC and native runtimes (torch, onnxruntime)
        # still holding threads can abort the process ("terminate called without an active
        # exception", SIGABRT) and lose the exit code the caller relies on.
        logging.shutdown()
        sys.stderr.flush()
        os._exit(1)
    if not stop_requested.is_set():
        running.set_serving(True)
        if running.metrics is not None:
            running.metrics.loaded(time.perf_counter() - t0)
        log.info("%s: SERVING on port %d (loaded in %.1f s)", name, running.port, time.perf_counter() - t0)
    while not stop_requested.wait(0.5):
        pass
    running.set_serving(False)
    if running.metrics is not None:
        running.metrics.ready.set(0)
    running.server.stop(grace).wait()
    log.info("%s: stopped", name)
    # Calls still computing after the grace period were cancelled for their clients; do not wait for
    # their worker threads (interpreter shutdown would join them): the model has nothing to flush.
    logging.shutdown()
    os._exit(0)


def serve(
    model_factory: Callable[..., _ModelBase],
    argv: list[str] | None = None,
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None,
) -> None:
    """Entry point of ``python -m services.<role>.<name>``.

    A service with options of its own passes ``add_arguments``; its factory then receives the
    parsed arguments.
    """
    die_with_parent()
    parser = argparse.ArgumentParser(description="VoxArena model service")
    add_service_arguments(parser)
    if add_arguments:
        add_arguments(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    model = model_factory(args) if add_arguments else model_factory()
    security = server_security(args)
    metrics = service_metrics(args, args.host, model.name, model_role(model), model.version)
    running = create_model_server(
        model,
        f"{args.host}:{args.port}",
        max_message_mb=args.max_message_mb,
        workers=args.workers,
        max_queue=args.max_queue,
        security=security,
        metrics=metrics,
    )
    log.info("%s: transport %s", model.name, security.describe())

    def load() -> None:
        model.load()
        model.mark_ready()

    run_until_signalled(running, load, model.name)

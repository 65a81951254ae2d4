"""The server runtime shared by every model service.

``create_server`` builds a real gRPC server (health, reflection, error mapping, message-size limits)
for a model; ``serve`` is the ``python -m <service> --port N`` entry point: it starts the server,
announces its port, loads the model (health NOT_SERVING until then, requests UNAVAILABLE), and
shuts down gracefully on SIGTERM/SIGINT.
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
from typing import TYPE_CHECKING, Any

import grpc
from google.protobuf import timestamp_pb2
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection

from voxarena.codec import AudioClip, AudioFormatError, decode_audio, encode_audio
from voxarena.lifecycle import PORT_ANNOUNCEMENT, die_with_parent
from voxarena.tasks import task_inputs
from voxarena.transport import DEFAULT_TOKEN_ENV, ENV_CERT, ENV_CLIENT_CA, ENV_KEY, ServerSecurity, TransportConfigError
from voxarena.v1 import common_pb2, detector_pb2, detector_pb2_grpc, generator_pb2, generator_pb2_grpc

from .admission import DEFAULT_CONCURRENCY, DEFAULT_MAX_QUEUE, Admission
from .errors import InvalidArgument, NotReady, ServiceError, Unimplemented
from .model import DetectorModel, GeneratorModel, SynthesisRequest, TransformModel, _ModelBase

if TYPE_CHECKING:
    from voxarena.transport import Continuation, MethodHandler

log = logging.getLogger("voxarena.service")

DEFAULT_MAX_MESSAGE_MB = 64
RESPONSE_HEADROOM_BYTES = 64 * 1024  # a response's fields beside its audio (ids, timing, voice)


def _timestamp(t: float) -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    ts.FromNanoseconds(int(t * 1e9))
    return ts


class Stopwatch:
    """Times a native call: wall (monotonic), start/end timestamps, process CPU seconds.

    ``with Stopwatch(scope) as sw: ...`` then ``sw.to_proto()`` is the ``voxarena.v1.Timing`` of a
    response; public for servicers that fill timings without the model base classes (the scorer)."""

    def __init__(self, scope: str) -> None:
        self.scope = scope

    def __enter__(self) -> Stopwatch:
        self._start, self._t0, self._cpu0 = time.time(), time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._t0
        self.cpu = time.process_time() - self._cpu0
        self._end = self._start + self.wall

    def to_proto(self) -> common_pb2.Timing:
        return common_pb2.Timing(
            wall_seconds=self.wall,
            start=_timestamp(self._start),
            end=_timestamp(self._end),
            scope=self.scope,
            cpu_seconds=self.cpu,
        )


def model_info(model: _ModelBase) -> common_pb2.ModelInfo:
    info = common_pb2.ModelInfo(
        name=model.name,
        version=model.version,
        licence=model.licence,
        weights_sha256=model.weights_sha256(),
        native_sample_rate=model.native_sample_rate,
        deterministic=model.deterministic,
        timing_scope=model.timing_scope,
        metadata=model.metadata(),
    )
    count = model.parameter_count()
    if count is not None:
        info.parameter_count = int(count)
    return info


def _options(model: _ModelBase) -> list[common_pb2.OptionSpec]:
    return [
        common_pb2.OptionSpec(name=o.name, description=o.description, default_value=o.default) for o in model.options
    ]


def _decode(msg: common_pb2.Audio, what: str, max_seconds: float) -> AudioClip:
    """The clip, or INVALID_ARGUMENT naming what is wrong; a clip over ``max_seconds`` is refused from
    its byte count, before any decoding work."""
    try:
        return decode_audio(msg, what, max_seconds=max_seconds)
    except AudioFormatError as e:
        raise InvalidArgument(str(e)) from None


class _ModelServicer:
    """What both roles' servicers share: the model, and UNAVAILABLE until it has loaded."""

    def __init__(self, model: _ModelBase) -> None:
        self.model = model

    def _require_ready(self) -> None:
        if not self.model.ready:
            raise NotReady(f"{self.model.name} is still loading")


class GeneratorServicer(_ModelServicer, generator_pb2_grpc.GeneratorServiceServicer):
    """Thin: validate and convert, call the model, convert back, echo ids and seed, fill timing.

    Audio that would not fit a response (``max_message_mb``) is INVALID_ARGUMENT saying how long it is:
    options inside their ranges can still ask for too much together (espeak-ng at 80 words per minute
    with a 1 s gap between words made 55 minutes, 138 MiB, of 5000 characters), and grpc would otherwise
    fail the send with RESOURCE_EXHAUSTED, which the orchestrator takes for a busy service and retries.
    """

    model: GeneratorModel

    def __init__(self, model: GeneratorModel, max_message_mb: float = DEFAULT_MAX_MESSAGE_MB) -> None:
        super().__init__(model)
        self.max_audio_bytes = int(max_message_mb * 1024 * 1024) - RESPONSE_HEADROOM_BYTES

    def GetInfo(self, request: common_pb2.GetInfoRequest, context: grpc.ServicerContext) -> generator_pb2.GeneratorInfo:
        self._require_ready()
        m = self.model
        return generator_pb2.GeneratorInfo(
            model=model_info(m),
            family=generator_pb2.GeneratorFamily.Value(m.family),
            tasks=[generator_pb2.Task.Value(t) for t in m.tasks],
            voices=[
                generator_pb2.VoiceSpec(
                    name=v.name, language=v.language, description=v.description, sample_rate=v.sample_rate
                )
                for v in m.voices
            ],
            options=_options(m),
            max_text_chars=m.max_text_chars,
            max_source_seconds=m.max_source_seconds,
        )

    def _to_request(self, req: generator_pb2.SynthesizeRequest) -> SynthesisRequest:
        m = self.model
        if not req.request_id:
            raise InvalidArgument("request_id is empty")
        task = generator_pb2.Task.Name(req.task) if req.task in generator_pb2.Task.values() else str(req.task)
        if task not in m.tasks:
            raise Unimplemented(f"task {task} is not supported by {m.name}; supported: {', '.join(m.tasks)}")
        needs = task_inputs(task)
        if needs.text:
            if not req.text.strip():
                raise InvalidArgument(f"{task} needs text, got empty text")
            if len(req.text) > m.max_text_chars:
                raise InvalidArgument(
                    f"text has {len(req.text)} characters; {m.name} accepts at most {m.max_text_chars}"
                )
        voice_names = [v.name for v in m.voices]
        if req.voice and voice_names and req.voice not in voice_names:
            raise Unimplemented(f"voice {req.voice!r} is not offered by {m.name}; voices: {', '.join(voice_names)}")
        out = SynthesisRequest(
            request_id=req.request_id,
            seed=req.seed,
            task=task,
            text=req.text,
            language=req.language,
            voice=req.voice or (voice_names[0] if voice_names else ""),
            reference_text=req.reference_text,
            parameters=m.resolve_options(dict(req.parameters)),
        )
        if needs.reference:
            if not req.HasField("reference_audio"):
                raise InvalidArgument(f"{task} needs reference_audio")
            out.reference_audio = _decode(req.reference_audio, "reference_audio", m.max_source_seconds)
        if needs.source:
            if not req.HasField("source_audio"):
                raise InvalidArgument(f"{task} needs source_audio")
            out.source_audio = _decode(req.source_audio, "source_audio", m.max_source_seconds)
        return out

    def Synthesize(
        self, request: generator_pb2.SynthesizeRequest, context: grpc.ServicerContext
    ) -> generator_pb2.SynthesizeResponse:
        self._require_ready()
        req = self._to_request(request)
        with Stopwatch(self.model.timing_scope) as sw:
            result = self.model.synthesize(req)
        audio = encode_audio(result.audio)
        if audio.ByteSize() > self.max_audio_bytes:
            raise InvalidArgument(
                f"the audio made is {result.audio.duration:.0f} s ({audio.ByteSize() / 2**20:.1f} MiB), more than a "
                f"response carries ({self.max_audio_bytes / 2**20:.1f} MiB): ask for less (shorter text, faster "
                "speech, shorter pauses)"
            )
        return generator_pb2.SynthesizeResponse(
            request_id=request.request_id,
            seed=request.seed if result.seed is None else result.seed,
            audio=audio,
            timing=sw.to_proto(),
            voice=result.voice or req.voice,
        )


class DetectorServicer(_ModelServicer, detector_pb2_grpc.DetectorServiceServicer):
    model: DetectorModel

    def GetInfo(self, request: common_pb2.GetInfoRequest, context: grpc.ServicerContext) -> detector_pb2.DetectorInfo:
        self._require_ready()
        m = self.model
        return detector_pb2.DetectorInfo(
            model=model_info(m),
            family=detector_pb2.DetectorFamily.Value(m.family),
            calibrated=m.serves_llr,
            max_batch_size=m.max_batch_size,
            options=_options(m),
            min_seconds=m.min_seconds,
            max_seconds=m.max_seconds,
            sample_rates=sorted(m.sample_rates),
        )

    def _clip(self, item: detector_pb2.ScoreRequest) -> AudioClip:
        if not item.request_id:
            raise InvalidArgument("request_id is empty")
        m = self.model
        m.resolve_options(dict(item.parameters))
        if m.sample_rates and item.audio.sample_rate not in m.sample_rates:
            raise InvalidArgument(
                f"audio at {item.audio.sample_rate} Hz; {m.name} accepts "
                f"{', '.join(str(r) for r in sorted(m.sample_rates))} Hz"
            )
        clip = _decode(item.audio, "audio", m.max_seconds)
        if clip.duration < m.min_seconds:
            raise InvalidArgument(
                f"audio is {clip.duration:.4f} s ({clip.samples.size} samples at {clip.sample_rate} Hz); "
                f"{m.name} needs at least {m.min_seconds:g} s"
            )
        return clip

    def Score(self, request: detector_pb2.ScoreRequest, context: grpc.ServicerContext) -> detector_pb2.ScoreResponse:
        self._require_ready()
        clip = self._clip(request)
        with Stopwatch(self.model.timing_scope) as sw:
            (score,) = self.model.llr_scores([clip])
        return detector_pb2.ScoreResponse(
            request_id=request.request_id, score=float(score), is_llr=self.model.serves_llr, timing=sw.to_proto()
        )

    def ScoreBatch(
        self, request: detector_pb2.ScoreBatchRequest, context: grpc.ServicerContext
    ) -> detector_pb2.ScoreBatchResponse:
        self._require_ready()
        m = self.model
        if len(request.items) > m.max_batch_size:
            raise InvalidArgument(f"batch of {len(request.items)} clips exceeds max_batch_size {m.max_batch_size}")
        outcomes: list[detector_pb2.ScoreBatchItem] = []
        good: list[tuple[int, AudioClip]] = []
        for item in request.items:
            try:
                good.append((len(outcomes), self._clip(item)))
                outcomes.append(detector_pb2.ScoreBatchItem(request_id=item.request_id))
            except ServiceError as e:
                outcomes.append(
                    detector_pb2.ScoreBatchItem(
                        request_id=item.request_id,
                        error=detector_pb2.ItemError(code=e.code.value[0], message=f"{item.request_id}: {e}"),
                    )
                )
        with Stopwatch(m.timing_scope) as sw:
            scores = m.llr_scores([clip for _, clip in good]) if good else []
        per_clip = sw.wall / max(len(good), 1)
        for (index, _), score in zip(good, scores):
            timing = sw.to_proto()
            timing.wall_seconds = per_clip
            timing.cpu_seconds = sw.cpu / max(len(good), 1)
            outcomes[index].result.CopyFrom(
                detector_pb2.ScoreResponse(
                    request_id=outcomes[index].request_id,
                    score=float(score),
                    is_llr=m.serves_llr,
                    timing=timing,
                )
            )
        return detector_pb2.ScoreBatchResponse(items=outcomes, timing=sw.to_proto())


@dataclass(frozen=True)
class UndecodableRequest:
    """Stands in for a request whose bytes did not parse (e.g. invalid UTF-8 in a string field).

    grpc answers a deserializer's exception with INTERNAL ("Exception deserializing request!"),
    blaming the server for the client's bytes; ``tolerant_deserializer`` returns this instead, and
    the interceptor answers INVALID_ARGUMENT with the parser's reason.
    """

    reason: str


def tolerant_deserializer(deserialize: Callable[[bytes], Any] | None) -> Callable[[bytes], Any] | None:
    """``deserialize``, returning an UndecodableRequest where it raises."""
    if deserialize is None:
        return None

    def parse(data: bytes) -> Any:
        try:
            return deserialize(data)
        except Exception as e:  # protobuf's DecodeError, or a UnicodeDecodeError from a string field
            return UndecodableRequest(f"{type(e).__name__}: {e}")

    return parse


class ErrorMappingInterceptor(grpc.ServerInterceptor):  # type: ignore[misc]  # grpc ships no type stubs
    """Maps ServiceError to its status code and anything else to INTERNAL; logs every call's latency.

    Every error message starts with the request id (or the batch size) so the client can name the item.
    A request that does not parse (invalid UTF-8 in a string, truncated bytes) is the client's:
    INVALID_ARGUMENT, before the servicer sees it. A work call runs in one of ``admission``'s slots
    (RESOURCE_EXHAUSTED when they and its wait queue are full; see voxarena.sdk.admission).
    """

    def __init__(self, admission: Admission | None = None) -> None:
        self.admission = admission

    def intercept_service(
        self, continuation: Continuation, handler_call_details: grpc.HandlerCallDetails
    ) -> MethodHandler | None:
        handler = continuation(handler_call_details)
        if handler is None or handler.unary_unary is None:
            return handler
        inner, method = handler.unary_unary, handler_call_details.method
        admission = self.admission if self.admission and self.admission.governs(method) else None

        def wrapper(request: Any, context: grpc.ServicerContext) -> Any:
            if isinstance(request, UndecodableRequest):
                log.debug("%s INVALID_ARGUMENT: undecodable request", method)
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"{method}: request does not parse: {request.reason}")
            rid = getattr(request, "request_id", "") or (
                f"batch of {len(request.items)}" if hasattr(request, "items") else method
            )
            t0 = time.perf_counter()
            code = "OK"
            try:
                if admission is None:
                    return inner(request, context)
                with admission.slot(context):
                    return inner(request, context)
            except ServiceError as e:
                code = e.code.name
                context.abort(e.code, f"{rid}: {e}")
            except Exception as e:  # a server fault, never the client's
                if context.code() not in (None, grpc.StatusCode.OK):  # the handler aborted with its own status
                    code = context.code().name
                    raise
                code = "INTERNAL"
                log.exception("%s %s failed", method, rid)
                context.abort(grpc.StatusCode.INTERNAL, f"{rid}: internal error: {type(e).__name__}: {e}")
            finally:
                log.debug("%s %s %s %.1f ms", method, rid, code, 1000 * (time.perf_counter() - t0))

        return grpc.unary_unary_rpc_method_handler(
            wrapper,
            request_deserializer=tolerant_deserializer(handler.request_deserializer),
            response_serializer=handler.response_serializer,
        )


@dataclass
class RunningServer:
    server: grpc.Server
    port: int
    health: health.HealthServicer
    service_names: tuple[str, ...]
    admission: Admission | None = None

    def set_serving(self, serving: bool) -> None:
        status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        for name in ("",) + self.service_names:
            self.health.set(name, status)


def _registration(
    model: _ModelBase, max_message_mb: float = DEFAULT_MAX_MESSAGE_MB
) -> tuple[str, Callable[[grpc.Server], None]]:
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
    registrations: list[tuple[str, Callable[[grpc.Server], None]]],
    address: str = "[::]:0",
    max_message_mb: float = DEFAULT_MAX_MESSAGE_MB,
    workers: int = DEFAULT_CONCURRENCY,
    security: ServerSecurity | None = None,
    max_queue: int = DEFAULT_MAX_QUEUE,
) -> RunningServer:
    """A started-later gRPC server with the given services plus health and reflection.

    Returns the server and its bound port (use port 0 in tests). Health starts NOT_SERVING.
    ``workers``: work calls (every method of ``registrations`` but GetInfo) in flight at once;
    ``max_queue`` more wait for a slot, and beyond that a call is RESOURCE_EXHAUSTED at once. The
    thread pool is larger, so health checks and GetInfo answer while every slot is busy.
    ``security``: TLS / mTLS credentials and a bearer token (voxarena.transport); plaintext without.
    """
    security = security or ServerSecurity()
    limit = int(max_message_mb * 1024 * 1024)
    admission = Admission(workers, max_queue, tuple(name for name, _ in registrations))
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=admission.threads),
        interceptors=[*security.interceptors(), ErrorMappingInterceptor(admission)],
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
    running = RunningServer(
        server=server, port=port, health=health_servicer, service_names=tuple(names), admission=admission
    )
    running.set_serving(False)
    return running


def create_model_server(model: _ModelBase, address: str = "[::]:0", **kwargs: Any) -> RunningServer:
    max_message_mb = kwargs.get("max_message_mb", DEFAULT_MAX_MESSAGE_MB)
    return create_server([_registration(model, max_message_mb)], address, **kwargs)


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
        log.info("%s: SERVING on port %d (loaded in %.1f s)", name, running.port, time.perf_counter() - t0)
    while not stop_requested.wait(0.5):
        pass
    running.set_serving(False)
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
    running = create_model_server(
        model,
        f"{args.host}:{args.port}",
        max_message_mb=args.max_message_mb,
        workers=args.workers,
        max_queue=args.max_queue,
        security=security,
    )
    log.info("%s: transport %s", model.name, security.describe())

    def load() -> None:
        model.load()
        model.mark_ready()

    run_until_signalled(running, load, model.name)

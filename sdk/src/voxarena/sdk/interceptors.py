"""The interceptor every model server runs (KServe's shape: servicer, interceptor, server).

``ErrorMappingInterceptor`` maps a servicer's exceptions to status codes (voxarena.sdk.errors: bad
request INVALID_ARGUMENT, not ready UNAVAILABLE, unsupported UNIMPLEMENTED, anything else INTERNAL),
answers a request that does not parse with INVALID_ARGUMENT, holds work calls (a stream for its
whole life) to the server's admission slots (voxarena.sdk.admission), and logs one line per finished
call (``call_log_line``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

import grpc

from .admission import Admission
from .errors import ServiceError

if TYPE_CHECKING:
    from voxarena.transport import Continuation, MethodHandler

    from .metrics import ServiceMetrics

log = logging.getLogger("voxarena.service")

NO_REQUEST_ID = "-"
HEALTH_METHODS = "/grpc.health.v1.Health/"


def call_log_line(method: str, request_id: str, code: str, ms: float) -> str:
    """The line logged at INFO for every finished call (a stream: once it ends, named by its opening
    message's request id), the one place its format is written:

    ``call method=/voxarena.v1.GeneratorService/Synthesize request_id=abc code=OK ms=12.3``

    The orchestrator's triage (``orchestrator explain RUN ID``) finds a row's service log lines by
    parsing this format: change it only together with that parser. ``request_id`` has no spaces
    (see ``request_ids``); ``code`` is a ``grpc.StatusCode`` name; ``ms`` the wall time with one decimal.
    """
    return f"call method={method} request_id={request_id or NO_REQUEST_ID} code={code} ms={ms:.1f}"


def request_ids(request: Any) -> str:
    """What ``call_log_line`` names a call by: its ``request_id``; for a batch (ScoreBatch, MeasureClips)
    the items' request ids comma-joined, no spaces; ``-`` for a call without ids (GetInfo, health,
    health Watch, a request that did not parse; a ScoreStream is named by its opening message)."""
    rid = getattr(request, "request_id", "")
    if isinstance(rid, str) and rid:
        return rid
    items = getattr(request, "items", None)
    if items is not None and not callable(items):
        ids = [getattr(item, "request_id", "") for item in items]
        if any(ids):
            return ",".join(i or NO_REQUEST_ID for i in ids)
    return NO_REQUEST_ID


def error_prefix(request: Any, method: str) -> str:
    """What an error message starts with, so the client can name the item: the request id, the size of a
    batch, or the method."""
    rid = getattr(request, "request_id", "")
    if rid:
        return str(rid)
    return f"batch of {len(request.items)}" if hasattr(request, "items") else method


class CallLog:
    """Times one call and logs its ``call_log_line`` when it ends, with the status the call ended with
    left), and counts it in the server's Prometheus metrics when it has them."""

    def __init__(
        self, method: str, request_id: str, context: grpc.ServicerContext, metrics: ServiceMetrics | None = None
    ) -> None:
        self.method, self.request_id, self.context, self.metrics = method, request_id, context, metrics

    def __enter__(self) -> CallLog:
        self._t0 = time.perf_counter()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        ms = 1000 * (time.perf_counter() - self._t0)
        code = self._code(kind)
        if self.metrics is not None:
            self.metrics.observe_call(self.method, code, ms / 1000)
        # A healthy health check is the container runtime's probe every few seconds: DEBUG, not INFO.
        level = logging.DEBUG if code == "OK" and self.method.startswith(HEALTH_METHODS) else logging.INFO
        log.log(level, "%s", call_log_line(self.method, self.request_id, code, ms))

    def _code(self, kind: type[BaseException] | None) -> str:
        code = self.context.code()
        if code is not None and code != grpc.StatusCode.OK:
            return str(code.name)
        if kind is None:
            return "OK"
        return "CANCELLED" if issubclass(kind, GeneratorExit) else "UNKNOWN"


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


class MappedCall:
    """One unary method behind the interceptor: parse check, admission, error mapping, the call's log line."""

    def __init__(
        self,
        inner: Callable[[Any, grpc.ServicerContext], Any],
        method: str,
        admission: Admission | None,
        metrics: ServiceMetrics | None = None,
    ):
        self.inner, self.method, self.admission, self.metrics = inner, method, admission, metrics

    def __call__(self, request: Any, context: grpc.ServicerContext) -> Any:
        with CallLog(self.method, request_ids(request), context, self.metrics):
            if isinstance(request, UndecodableRequest):
                context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT, f"{self.method}: request does not parse: {request.reason}"
                )
            return self._mapped(request, context)

    def _mapped(self, request: Any, context: grpc.ServicerContext) -> Any:
        rid = error_prefix(request, self.method)
        try:
            if self.admission is None:
                return self.inner(request, context)
            with self.admission.slot(context):
                return self.inner(request, context)
        except ServiceError as e:
            context.abort(e.code, f"{rid}: {e}")
        except Exception as e:  # a server fault, never the client's
            if context.code() not in (None, grpc.StatusCode.OK):  # the handler aborted with its own status
                raise
            log.exception("%s %s failed", self.method, rid)
            context.abort(grpc.StatusCode.INTERNAL, f"{rid}: internal error: {type(e).__name__}: {e}")


class MappedStream:
    """A work call that streams both ways (ScoreStream): it holds one admission slot for its whole life,
    maps errors as ``MappedCall`` does (a stream's errors name its request_id themselves) and logs its
    line when it ends; a client that went away ends it CANCELLED, its slot given back."""

    def __init__(
        self,
        inner: Callable[[Iterator[Any], grpc.ServicerContext], Iterator[Any]],
        method: str,
        admission: Admission | None,
        metrics: ServiceMetrics | None = None,
    ) -> None:
        self.inner, self.method, self.admission, self.metrics = inner, method, admission, metrics

    def __call__(self, requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
        with CallLog(self.method, NO_REQUEST_ID, context, self.metrics) as call_log:
            requests = _named(requests, call_log)
            try:
                if self.admission is None:
                    yield from self.inner(requests, context)
                else:
                    with self.admission.slot(context):
                        yield from self.inner(requests, context)
            except ServiceError as e:
                context.abort(e.code, str(e))
            except grpc.RpcError:  # reading the next message: the client cancelled or went away
                context.set_code(grpc.StatusCode.CANCELLED)
            except Exception as e:  # a server fault, never the client's
                if context.code() not in (None, grpc.StatusCode.OK):  # the handler aborted with its own status
                    raise
                log.exception("%s failed", self.method)
                context.abort(grpc.StatusCode.INTERNAL, f"{self.method}: internal error: {type(e).__name__}: {e}")


def _named(requests: Iterator[Any], call_log: CallLog) -> Iterator[Any]:
    """The stream's messages; the call's log line takes the request id of its opening message."""
    for message in requests:
        rid = str(getattr(getattr(message, "open", None), "request_id", "") or "")
        if call_log.request_id == NO_REQUEST_ID and rid:
            call_log.request_id = rid
        yield message


class LoggedStream:
    """A method that streams its responses (health Watch, reflection), logged when its stream ends."""

    def __init__(
        self,
        inner: Callable[[Any, grpc.ServicerContext], Iterator[Any]],
        method: str,
        metrics: ServiceMetrics | None = None,
    ) -> None:
        self.inner, self.method, self.metrics = inner, method, metrics

    def __call__(self, request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        with CallLog(self.method, NO_REQUEST_ID, context, self.metrics):
            yield from self.inner(request, context)


class ErrorMappingInterceptor(grpc.ServerInterceptor):  # type: ignore[misc]  # grpc ships no type stubs
    """Maps ServiceError to its status code and anything else to INTERNAL; logs every call's line.

    Every error message starts with the request id (or the batch size) so the client can name the item.
    A request that does not parse (invalid UTF-8 in a string, truncated bytes) is the client's:
    INVALID_ARGUMENT, before the servicer sees it. A work call runs in one of ``admission``'s slots
    (RESOURCE_EXHAUSTED when they and its wait queue are full; see voxarena.sdk.admission).
    """

    def __init__(self, admission: Admission | None = None, metrics: ServiceMetrics | None = None) -> None:
        self.admission, self.metrics = admission, metrics

    def intercept_service(
        self, continuation: Continuation, handler_call_details: grpc.HandlerCallDetails
    ) -> MethodHandler | None:
        handler = continuation(handler_call_details)
        if handler is None:
            return handler
        method = handler_call_details.method
        admission = self.admission if self.admission and self.admission.governs(method) else None
        if handler.stream_stream is not None and admission is not None:
            return grpc.stream_stream_rpc_method_handler(
                MappedStream(handler.stream_stream, method, admission, self.metrics),
                request_deserializer=tolerant_deserializer(handler.request_deserializer),
                response_serializer=handler.response_serializer,
            )
        if handler.unary_unary is None:
            return _logged_streaming(handler, method, self.metrics)
        return grpc.unary_unary_rpc_method_handler(
            MappedCall(handler.unary_unary, method, admission, self.metrics),
            request_deserializer=tolerant_deserializer(handler.request_deserializer),
            response_serializer=handler.response_serializer,
        )


def _logged_streaming(handler: MethodHandler, method: str, metrics: ServiceMetrics | None) -> MethodHandler:
    """``handler`` with its streamed responses logged at their end; a client-streaming call with one
    response (none is served today) is logged as it returns."""
    serializers = {
        "request_deserializer": handler.request_deserializer,
        "response_serializer": handler.response_serializer,
    }
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(LoggedStream(handler.unary_stream, method, metrics), **serializers)
    if handler.stream_stream is not None:
        return grpc.stream_stream_rpc_method_handler(
            LoggedStream(handler.stream_stream, method, metrics), **serializers
        )
    inner = handler.stream_unary

    def logged(requests: Iterator[Any], context: grpc.ServicerContext) -> Any:
        with CallLog(method, NO_REQUEST_ID, context, metrics):
            return inner(requests, context)

    return grpc.stream_unary_rpc_method_handler(logged, **serializers)

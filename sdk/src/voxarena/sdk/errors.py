"""Typed errors a model raises; one interceptor maps them to gRPC status codes.

Bad request -> INVALID_ARGUMENT, unsupported task/voice -> UNIMPLEMENTED, not ready -> UNAVAILABLE,
busy (every slot and the wait queue full) -> RESOURCE_EXHAUSTED, anything else (including an
unexpected exception) -> INTERNAL: a server fault is never reported as the client's.
"""

from __future__ import annotations

import grpc


class ServiceError(Exception):
    code: grpc.StatusCode = grpc.StatusCode.INTERNAL


class InvalidArgument(ServiceError):
    code = grpc.StatusCode.INVALID_ARGUMENT


class Unimplemented(ServiceError):
    code = grpc.StatusCode.UNIMPLEMENTED


class NotReady(ServiceError):
    code = grpc.StatusCode.UNAVAILABLE


class TimeLimitExceeded(ServiceError):
    code = grpc.StatusCode.DEADLINE_EXCEEDED


class Busy(ServiceError):
    """Every slot of the service is taken and its wait queue is full: try again later (transient)."""

    code = grpc.StatusCode.RESOURCE_EXHAUSTED


class Cancelled(ServiceError):
    """The client cancelled the call or its deadline passed: the server stops the work it was doing."""

    code = grpc.StatusCode.CANCELLED


class InternalError(ServiceError):
    code = grpc.StatusCode.INTERNAL

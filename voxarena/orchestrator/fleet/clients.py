"""gRPC clients of the three roles: a deadline on every call, retries of UNAVAILABLE and RESOURCE_EXHAUSTED
(a busy service: its queue is full) only, and a wait for a service that went away (``outage``)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from typing import Any

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message
from grpc_health.v1 import health_pb2, health_pb2_grpc

from voxarena.orchestrator import ctrl_c
from voxarena.orchestrator.errors import CallFailed
from voxarena.orchestrator.fleet.outage import Outage
from voxarena.transport import PLAINTEXT, ClientSecurity
from voxarena.v1 import common_pb2, detector_pb2_grpc, generator_pb2_grpc, scorer_pb2_grpc, transform_pb2_grpc

MAX_MESSAGE_BYTES = 64 * 1024 * 1024


class ServiceStartError(RuntimeError):
    pass


def channel(address: str, security: ClientSecurity = PLAINTEXT) -> grpc.Channel:
    """A channel to ``address`` (plaintext, TLS or mTLS, with a bearer token: ``voxarena.transport``)."""
    # round_robin: a name that resolves to several replicas (compose --scale) gets calls spread over all of them.
    return security.channel(
        address,
        [
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.lb_policy_name", "round_robin"),
        ],
    )


def wait_for_serving(
    address: str,
    name: str,
    timeout: float,
    process: subprocess.Popen[bytes] | None = None,
    log_tail: Callable[[], str] | None = None,
    security: ClientSecurity = PLAINTEXT,
) -> None:
    """Poll grpc.health.v1 until SERVING; fail early if the local process died."""
    ch = channel(address, security)
    stub = health_pb2_grpc.HealthStub(ch)
    deadline = time.monotonic() + timeout
    last = "no answer"
    try:
        while time.monotonic() < deadline:
            ctrl_c.check()
            if process is not None and process.poll() is not None:
                tail = log_tail() if log_tail else ""
                raise ServiceStartError(f"{name}: process exited with code {process.returncode} while loading:\n{tail}")
            try:
                resp = stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=2.0)
                if resp.status == health_pb2.HealthCheckResponse.SERVING:
                    return
                last = health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status)
            except grpc.RpcError as e:
                last = f"{e.code().name}: {e.details()}"
            time.sleep(0.1)
    finally:
        ch.close()
    raise ServiceStartError(f"{name} at {address} was not SERVING within {timeout:.0f} s (last: {last})")


_RETRIED = (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.RESOURCE_EXHAUSTED)


def call_with_retry(
    method: Callable[..., Any],
    request: Message,
    deadline: float,
    retries: int,
    backoff: float,
    outage: Outage | None = None,
) -> tuple[Any, int]:
    """(response, attempts). Retries UNAVAILABLE and RESOURCE_EXHAUSTED (busy: every slot and the queue
    taken), with exponential backoff, at most ``retries`` times; then, for UNAVAILABLE and with an
    ``outage``, waits for the service to be back (``outage``) and starts over. A service still busy after
    the retries fails the call as transient (a rerun retries it)."""
    attempt, retried = 0, 0
    while True:
        attempt += 1
        try:
            return method(request, timeout=deadline), attempt
        except grpc.RpcError as e:
            if e.code() in _RETRIED and retried < retries:
                time.sleep(backoff * 2**retried)
                retried += 1
                continue
            if e.code() == grpc.StatusCode.UNAVAILABLE and outage is not None and outage.wait_until_back():
                retried = 0
                continue
            raise CallFailed(e.code(), e.details() or "", attempt) from None


class ServiceClient:
    stub_class: type = object

    def __init__(
        self,
        name: str,
        address: str,
        deadline: float,
        retries: int,
        backoff: float,
        security: ClientSecurity = PLAINTEXT,
        outage_seconds: float = 0.0,
    ) -> None:
        self.name, self.address = name, address
        self.deadline, self.retries, self.backoff = deadline, retries, backoff
        self.channel = channel(address, security)
        self.stub = self.stub_class(self.channel)
        self.outage = Outage(self.is_serving, outage_seconds, backoff)

    def call(self, method_name: str, request: Message) -> tuple[Any, int]:
        method = getattr(self.stub, method_name)
        return call_with_retry(method, request, self.deadline, self.retries, self.backoff, self.outage)

    def is_serving(self, timeout: float) -> bool:
        """One grpc.health.v1 check of the service (its overall status)."""
        try:
            resp = health_pb2_grpc.HealthStub(self.channel).Check(health_pb2.HealthCheckRequest(), timeout=timeout)
        except grpc.RpcError:
            return False
        return resp.status == health_pb2.HealthCheckResponse.SERVING

    def info(self) -> Message:
        resp, _ = self.call("GetInfo", common_pb2.GetInfoRequest())
        return resp

    def info_dict(self) -> dict[str, Any]:
        return json_format.MessageToDict(self.info(), preserving_proto_field_name=True)

    def close(self) -> None:
        self.channel.close()


class GeneratorClient(ServiceClient):
    stub_class = generator_pb2_grpc.GeneratorServiceStub


class DetectorClient(ServiceClient):
    stub_class = detector_pb2_grpc.DetectorServiceStub


class ScorerClient(ServiceClient):
    stub_class = scorer_pb2_grpc.ScorerServiceStub


class TransformClient(ServiceClient):
    stub_class = transform_pb2_grpc.TransformServiceStub

"""The attack's ``score`` callable over a detector's ScoreBatch RPC: what a remote detector API allows,
nothing more (no gradients, no internals).

It calls through any object with the orchestrator's client interface, ``call(method_name, request) ->
(response, attempts)``: ``voxarena.orchestrator.fleet.clients.DetectorClient`` or a fleet's service, which
bring the deadline, the retries of UNAVAILABLE and the outage wait. The interface is taken as a
protocol rather than imported, because nothing may import the orchestrator (CONVENTIONS.md: imports
flow one way), and the orchestrator is the one that will run attacks. For a manual run without the
orchestrator (``python -m voxarena.attack``), :class:`DirectCaller` calls the stub once per batch with a
deadline and no retries: a failed call ends the attack with the status code, naming the detector.
"""

from __future__ import annotations

import math
from typing import Any, Protocol

import grpc
from google.protobuf.message import Message

from voxarena.codec import AudioClip, encode_audio
from voxarena.transport import PLAINTEXT, ClientSecurity
from voxarena.v1 import detector_pb2, detector_pb2_grpc

from .search import AttackQueryError


class ServiceCaller(Protocol):
    def call(self, method_name: str, request: Message) -> tuple[Any, int]: ...


class DirectCaller:
    """``call(method_name, request)`` on a detector's stub: one attempt, ``deadline`` seconds."""

    def __init__(self, address: str, deadline: float = 60.0, security: ClientSecurity = PLAINTEXT) -> None:
        self.address, self.deadline = address, deadline
        self.channel = security.channel(address)
        self.stub = detector_pb2_grpc.DetectorServiceStub(self.channel)

    def call(self, method_name: str, request: Message) -> tuple[Any, int]:
        try:
            return getattr(self.stub, method_name)(request, timeout=self.deadline), 1
        except grpc.RpcError as e:
            raise AttackQueryError(f"{self.address}: {method_name} failed: {e.code().name}: {e.details()}") from None

    def close(self) -> None:
        self.channel.close()


class DetectorScore:
    """``score(clips) -> list[float]`` over ``ScoreBatch``; a refused or malformed answer raises
    :class:`AttackQueryError` naming the detector and the query."""

    def __init__(self, service: ServiceCaller, detector: str, parameters: dict[str, str] | None = None) -> None:
        self.service, self.detector, self.parameters = service, detector, dict(parameters or {})
        self.queries = 0  # clips sent so far: the query count, from the caller's side

    def __call__(self, clips: list[AudioClip]) -> list[float]:
        ids = [f"attack-{self.queries + i}" for i in range(len(clips))]
        items = [
            detector_pb2.ScoreRequest(request_id=rid, audio=encode_audio(c), parameters=self.parameters)
            for rid, c in zip(ids, clips)
        ]
        self.queries += len(clips)
        resp, _ = self.service.call("ScoreBatch", detector_pb2.ScoreBatchRequest(items=items))
        if len(resp.items) != len(items):
            raise AttackQueryError(f"{self.detector}: batch answered {len(resp.items)} items for {len(items)} sent")
        scores = []
        for rid, out in zip(ids, resp.items):
            if out.HasField("error"):
                raise AttackQueryError(f"{self.detector}: {rid} refused: {out.error.message}")
            if out.result.request_id != rid:
                raise AttackQueryError(f"{self.detector}: {rid}: request_id echo {out.result.request_id!r}")
            if not math.isfinite(out.result.score):
                raise AttackQueryError(f"{self.detector}: {rid}: score {out.result.score} is not finite")
            scores.append(out.result.score)
        return scores

"""Check any running service against the VoxArena contract (``voxarena-conformance ADDRESS``, or
``orchestrator conformance ADDRESS``).

For a vendor's black box as much as for our own services: it talks gRPC only, and every check
follows from what ``proto/voxarena/v1`` promises. The role (generator, detector, scorer or transform) comes
from server reflection, or from GetInfo when reflection is off. Every check yields PASS, FAIL or
SKIP (with why it does not apply); any FAIL makes the exit code 1. Each check records what was sent
and what came back, so a failure reads "sent TTS voice='x' text='...' seed=7; got 16000 Hz, declared
22050 Hz".

This module holds the session (channel, check list, health probe, error-path helper) and the common
checks (health, reflection, GetInfo fields, timing); ``generator`` (with ``generator_requests``,
``generator_repeats``, ``generator_errors``), ``detector``, ``transform`` and ``scorer`` hold the role
checks, ``probes`` what is sent and ``evidence`` how what came back is worded. Everything here imports
only the contract side (voxarena-sdk), never the orchestrator, so a vendor runs it with nothing else
installed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from voxarena.codec import AudioClip
from voxarena.transport import PLAINTEXT, ClientSecurity
from voxarena.v1 import common_pb2, detector_pb2_grpc, generator_pb2_grpc, transform_pb2_grpc

from .evidence import code_of, describe_error, short
from .probes import default_probes
from .probes import probes_from_file as probes_from_file  # importable from here as before the split
from .probes import speech_like as speech_like
from .rules import Rule, rule_of

GENERATOR_SERVICE = "voxarena.v1.GeneratorService"
DETECTOR_SERVICE = "voxarena.v1.DetectorService"
SCORER_SERVICE = "voxarena.v1.ScorerService"
TRANSFORM_SERVICE = "voxarena.v1.TransformService"
OVERSIZE_BYTES = 80 * 1024 * 1024  # above the SDK's 64 MiB default; a service may allow more
CONCURRENT = 8  # requests in flight at once in the concurrency checks
STILL_SERVING = "still SERVING after every bad input"
# Field 1 of a request message (request_id; for the scorer a TrialSet's name) once more, as two bytes
# that are not UTF-8: appended to a valid request, protobuf refuses the whole request while parsing.
INVALID_UTF8_FIELD = b"\x0a\x02\xff\xfe"
UNDECODABLE = "undecodable request rejected (invalid UTF-8)"
_R = TypeVar("_R")


@dataclass
class Check:
    name: str
    status: str  # PASS | FAIL (a MUST broken) | WARN (a SHOULD broken) | SKIP
    detail: str = ""  # one line: for a FAIL or WARN, what was sent, what came back and what was expected
    sent: str = ""  # the request(s) the check made
    got: str = ""  # what came back
    rule: Rule | None = None  # the rule of the .proto the check tests


@dataclass
class Session:
    """One conformance run: the channel, the checks so far, and the bad inputs' health record."""

    address: str
    channel: grpc.Channel
    timeout: float
    probes: tuple[AudioClip, AudioClip]
    checks: list[Check] = field(default_factory=list)
    not_serving_after: list[str] = field(default_factory=list)
    bad_inputs: int = 0
    role: str = ""  # generator | detector | transform | scorer, once known: which rules the checks test
    # Another channel to the service like ``channel`` (the streaming checks close one under a call).
    open_channel: Callable[[], grpc.Channel] | None = None

    # -- bookkeeping --------------------------------------------------------------------------
    def add(self, name: str, ok: bool, sent: str = "", got: str = "", expected: str = "") -> bool:
        """PASS shows what came back; FAIL (a MUST rule) or WARN (a SHOULD rule) shows what was sent, what
        came back and what was expected."""
        rule = rule_of(self.role, name)
        if ok:
            detail = got
        else:
            detail = "; ".join(
                p
                for p in (
                    f"sent {sent}" if sent else "",
                    f"got {got}" if got else "",
                    f"expected {expected}" if expected else "",
                )
                if p
            )
        status = "PASS" if ok else ("FAIL" if rule.grade == "MUST" else "WARN")
        self.checks.append(Check(name, status, detail, sent, got, rule))
        return ok

    def skip(self, name: str, why: str) -> None:
        self.checks.append(Check(name, "SKIP", why, rule=rule_of(self.role, name)))

    def call_ok(
        self, name: str, call: Callable[[], _R], sent: str = "", record: bool = True, expected: str = "a response"
    ) -> _R | None:
        """The response of a call that must succeed (a FAIL with the status if it does not, saying
        ``expected``); a PASS too with ``record``."""
        try:
            response = call()
        except grpc.RpcError as e:
            self.add(name, False, sent, describe_error(e), expected)
            return None
        if record:
            self.add(name, True, sent, "answered")
        return response

    def get_info(self, stub: object, record: bool = False) -> Any:
        """``stub``'s GetInfo answer, or None after a FAIL named ``GetInfo`` (a PASS too with ``record``)."""
        get_info: Callable[..., Any] = stub.GetInfo  # type: ignore[attr-defined]
        return self.call_ok(
            "GetInfo", lambda: get_info(common_pb2.GetInfoRequest(), timeout=self.timeout), "GetInfo", record
        )

    # -- health and error paths ----------------------------------------------------------------
    def health(self) -> str:
        """The grpc.health.v1 status name of the whole server, or the status code of a failed Check."""
        try:
            resp = health_pb2_grpc.HealthStub(self.channel).Check(
                health_pb2.HealthCheckRequest(), timeout=min(self.timeout, 10)
            )
        except grpc.RpcError as e:
            return f"health Check failed with {code_of(e).name}"
        status: str = health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status)
        return status

    def expect_error(
        self, name: str, call: Callable[[], object], sent: str, codes: tuple[grpc.StatusCode, ...]
    ) -> None:
        """A bad input must fail with one of ``codes`` and leave the service SERVING."""
        wanted = "/".join(c.name for c in codes)
        try:
            call()
        except grpc.RpcError as e:
            self.add(name, code_of(e) in codes, sent, describe_error(e), wanted)
        else:
            self.add(name, False, sent, "a normal response (the call succeeded)", wanted)
        self.after_bad_input(name, sent)

    def expect_oversize(self, call: Callable[[], object], sent: str) -> None:
        """A message over the service's limit must be refused ([message.limit], any error status), and
        SHOULD be refused with RESOURCE_EXHAUSTED ([message.limit-code]: some stacks answer OUT_OF_RANGE)."""
        refused, status = "oversize message refused", "oversize message status"
        try:
            call()
        except grpc.RpcError as e:
            self.add(refused, True, sent, describe_error(e))
            wanted = grpc.StatusCode.RESOURCE_EXHAUSTED
            self.add(status, code_of(e) == wanted, sent, describe_error(e), wanted.name)
        else:
            self.add(refused, False, sent, "a normal response (the call succeeded)", "an error status")
            self.skip(status, "the message was not refused")
        self.after_bad_input(refused, sent)

    def after_bad_input(self, name: str, sent: str) -> None:
        """Counts a bad input and records whether the service was still SERVING after it."""
        self.bad_inputs += 1
        status = self.health()
        if status != "SERVING":
            self.not_serving_after.append(f"after '{name}' ({short(sent, 120)}): {status}")

    def undecodable(self, method: str, valid: bytes, extra: bytes = INVALID_UTF8_FIELD) -> None:
        """A request whose string field is not UTF-8 is the client's mistake: INVALID_ARGUMENT (plain
        grpc answers a request it cannot parse with INTERNAL)."""
        call = self.channel.unary_unary(method, request_serializer=lambda b: b, response_deserializer=lambda b: b)
        self.expect_error(
            UNDECODABLE,
            lambda: call(valid + extra, timeout=self.timeout),
            f"{method.rsplit('/', 1)[-1]} with a string field of bytes ff fe (invalid UTF-8)",
            (grpc.StatusCode.INVALID_ARGUMENT,),
        )

    def still_serving(self) -> None:
        sent = f"{self.bad_inputs} bad inputs, each followed by a grpc.health.v1 Check"
        got = "; ".join(self.not_serving_after) or "SERVING after each"
        self.add(STILL_SERVING, not self.not_serving_after, sent, got, "SERVING after each")

    # -- common checks ------------------------------------------------------------------------
    def model_info(
        self, info: common_pb2.ModelInfo, family_ok: bool, needs_rate: bool = True, extra: list[str] | None = None
    ) -> None:
        missing = [f for f in ("name", "version", "licence", "timing_scope") if not getattr(info, f)]
        if needs_rate and info.native_sample_rate <= 0:
            missing.append("native_sample_rate")
        if not family_ok:
            missing.append("family")
        sha = info.weights_sha256
        if sha and (len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha)):
            missing.append(f"weights_sha256 {sha!r} is not a lowercase hex sha256")
        missing += extra or []
        got = (
            f"{info.name} {info.version}, {info.native_sample_rate} Hz, deterministic={info.deterministic}"
            if not missing
            else "missing or invalid: " + ", ".join(missing)
        )
        self.add("GetInfo fields", not missing, "GetInfo", got, "every field the contract asks for")

    def timing(self, name: str, timing: common_pb2.Timing, declared_scope: str, sent: str, present: bool) -> None:
        problems = []
        if not present:
            problems.append("no timing")
        else:
            if not timing.wall_seconds > 0:
                problems.append(f"wall_seconds {timing.wall_seconds}")
            if not timing.HasField("start") or not timing.HasField("end"):
                problems.append("start/end missing")
            elif timing.end.ToNanoseconds() < timing.start.ToNanoseconds():
                problems.append("end before start")
            if timing.scope != declared_scope:
                problems.append(f"scope {timing.scope!r} != GetInfo timing_scope {declared_scope!r}")
        got = ", ".join(problems) or f"{timing.wall_seconds:.3f} s, scope {timing.scope!r}"
        self.add(name, not problems, sent, got, "wall_seconds > 0, start <= end, scope = GetInfo timing_scope")

    def reachable(self) -> bool:
        try:
            grpc.channel_ready_future(self.channel).result(timeout=min(self.timeout, 30))
        except grpc.FutureTimeoutError:
            return self.add("reachable", False, "a connection", f"no gRPC server at {self.address} within 30 s")
        self.add("reachable", True, got=self.address)
        status = self.health()
        return self.add("health SERVING", status == "SERVING", "grpc.health.v1 Check", status, "SERVING")

    def role_from_reflection(self) -> str | None:
        from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

        try:
            stub = reflection_pb2_grpc.ServerReflectionStub(self.channel)
            responses = stub.ServerReflectionInfo(
                iter([reflection_pb2.ServerReflectionRequest(list_services="")]), timeout=10
            )
            names = {s.name for r in responses for s in r.list_services_response.service}
        except grpc.RpcError as e:
            self.add("reflection", False, "list_services", f"server reflection unavailable: {code_of(e).name}")
            return None
        roles = [
            r
            for r, svc in (
                ("generator", GENERATOR_SERVICE),
                ("detector", DETECTOR_SERVICE),
                ("scorer", SCORER_SERVICE),
                ("transform", TRANSFORM_SERVICE),
            )
            if svc in names
        ]
        self.add(
            "reflection",
            bool(roles),
            "list_services",
            ", ".join(sorted(names)) or "no services listed",
            "a voxarena.v1 service",
        )
        return roles[0] if roles else None

    def role_from_get_info(self) -> str | None:
        for candidate, stub_cls in (
            ("generator", generator_pb2_grpc.GeneratorServiceStub),
            ("detector", detector_pb2_grpc.DetectorServiceStub),
            ("transform", transform_pb2_grpc.TransformServiceStub),
        ):
            try:
                stub_cls(self.channel).GetInfo(common_pb2.GetInfoRequest(), timeout=self.timeout)
                return candidate
            except grpc.RpcError:
                continue
        return None


class Conformance:
    def __init__(
        self,
        address: str,
        timeout: float = 120.0,
        probes: tuple[AudioClip, AudioClip] | None = None,
        security: ClientSecurity = PLAINTEXT,
    ) -> None:
        limit = 2 * OVERSIZE_BYTES

        def open_channel() -> grpc.Channel:
            options: list[tuple[str, object]] = [
                ("grpc.max_send_message_length", limit),
                ("grpc.max_receive_message_length", limit),
            ]
            return security.channel(address, options)

        self.session = Session(address, open_channel(), timeout, probes or default_probes(), open_channel=open_channel)

    def run(self) -> list[Check]:
        from .detector import check_detector
        from .generator import check_generator
        from .scorer import check_scorer
        from .transform import check_transform

        s = self.session
        try:
            if not s.reachable():
                return s.checks
            role = s.role_from_reflection() or s.role_from_get_info()
            s.role = role or ""
            checks = {
                "generator": check_generator,
                "detector": check_detector,
                "scorer": check_scorer,
                "transform": check_transform,
            }
            if role in checks:
                checks[role](s)
            else:
                s.add(
                    "role",
                    False,
                    "GetInfo of each role",
                    "serves none of voxarena.v1.GeneratorService, DetectorService, ScorerService, TransformService",
                )
            return s.checks
        finally:
            s.channel.close()


def run_conformance(
    address: str,
    timeout: float = 120.0,
    security: ClientSecurity = PLAINTEXT,
    probes: tuple[AudioClip, AudioClip] | None = None,
) -> list[Check]:
    return Conformance(address, timeout, probes, security).run()

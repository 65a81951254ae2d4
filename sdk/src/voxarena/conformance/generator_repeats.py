"""The generator checks that repeat a request: ``option default accepted (NAME)`` (each option at its
default_value, and for a deterministic service the same bytes as leaving it unset) and ``concurrent
requests answered`` (8 at once alternating two short requests, each answered with its own ids, the
declared rate and, deterministic, the bytes the request gives alone)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import grpc

from voxarena.v1 import generator_pb2

from .evidence import answered_at_once, describe_audio, describe_error, first_difference, summarise
from .generator_requests import SEED, describe, describe_response
from .session import CONCURRENT

if TYPE_CHECKING:
    from .generator import GeneratorChecks


class RepeatedRequests:
    """The checks of one generator that send a light request again and again (options, concurrency)."""

    def __init__(self, checks: GeneratorChecks) -> None:
        self.c, self.s = checks, checks.s

    def run(self, task: int) -> None:
        """The checks that repeat a request (options, concurrency), on light requests answered alone first."""
        light = [self.c.request(task, f"conformance-light-{v}", SEED, variant=v, light=True) for v in (0, 1)]
        alone = []
        for req in light[: 2 if self.c.info.model.deterministic else 1]:
            try:
                alone.append(self.c.synthesize(req))
            except grpc.RpcError as e:
                for name in ["concurrent requests answered"] + [
                    f"option default accepted ({o.name})" for o in self.c.info.options
                ]:
                    self.s.add(
                        name, False, describe(req), f"the request alone failed: {describe_error(e)}", "a response"
                    )
                return
        self.each_option(light[0], alone[0])
        self.concurrent(light, alone)

    def each_option(self, base_req: generator_pb2.SynthesizeRequest, base: generator_pb2.SynthesizeResponse) -> None:
        for option in self.c.info.options:
            name = f"option default accepted ({option.name})"
            req = generator_pb2.SynthesizeRequest()
            req.CopyFrom(base_req)
            req.request_id = f"conformance-option-{option.name}"
            req.parameters[option.name] = option.default_value
            sent = describe(req)
            resp = self.s.call_ok(
                name, partial(self.c.synthesize, req), sent, False, "a response: the declared default_value is valid"
            )
            if resp is None:
                continue
            if not self.c.info.model.deterministic:
                self.s.add(name, True, sent, describe_response(resp))
                continue
            same = resp.audio == base.audio
            got = (
                "the same audio as without the option"
                if same
                else f"different audio from the same request without the option: {describe_audio(resp.audio)} vs "
                f"{describe_audio(base.audio)}, {first_difference(resp.audio.data, base.audio.data)}"
            )
            self.s.add(name, same, sent, got, "the same bytes as leaving the option unset (its default)")

    def concurrent(
        self, pair: list[generator_pb2.SynthesizeRequest], alone: list[generator_pb2.SynthesizeResponse]
    ) -> None:
        """CONCURRENT requests at once alternating the pair; ``alone``: their answers one at a time
        (both for a deterministic service, whose concurrent answers must be the same bytes)."""
        deterministic = self.c.info.model.deterministic
        requests = []
        for i in range(CONCURRENT):
            r = generator_pb2.SynthesizeRequest()
            r.CopyFrom(pair[i % 2])
            r.request_id = f"conformance-concurrent-{i}"
            requests.append(r)
        problems: list[str] = []
        rate, _ = self.c.declared_rate(pair[0])
        for i, r, resp in answered_at_once(requests, self.c.stub.Synthesize, self.s.timeout, problems):
            wrong = []
            if resp.request_id != r.request_id:
                wrong.append(f"request_id {resp.request_id!r}, sent {r.request_id!r}")
            if resp.seed != r.seed:
                wrong.append(f"seed {resp.seed}, sent {r.seed}")
            if resp.audio.sample_rate != rate:
                wrong.append(f"{resp.audio.sample_rate} Hz, declared {rate} Hz")
            expected = alone[i % 2].audio if deterministic else None
            if expected is not None and resp.audio != expected:
                wrong.append(
                    f"audio {describe_audio(resp.audio)}, not the {describe_audio(expected)} the same "
                    f"request gave alone ({first_difference(resp.audio.data, expected.data)})"
                )
            if wrong:
                problems.append(f"{r.request_id!r} (a copy of {pair[i % 2].request_id!r}): " + ", ".join(wrong))
        sent = (
            f"{CONCURRENT} requests at once with request ids 'conformance-concurrent-0'..'-{CONCURRENT - 1}', "
            f"the even ones copies of {describe(pair[0])}, the odd ones of {describe(pair[1])}"
        )
        self.s.add(
            "concurrent requests answered",
            not problems,
            sent,
            summarise(problems, CONCURRENT),
            "each answer echoes its own request id and seed at the declared rate"
            + (", with the bytes the same request gives alone" if deterministic else ""),
        )

"""The generator's error paths, each followed by a health check: empty request id, each missing task
input, bad audio in each audio input, an unknown option, a request that does not parse ->
INVALID_ARGUMENT; an undeclared task -> UNIMPLEMENTED; an oversize message refused (RESOURCE_EXHAUSTED: SHOULD)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import grpc

from voxarena.codec import AudioClip, encode_audio
from voxarena.v1 import generator_pb2

from .generator_requests import ALL_TASKS, AUDIO_INPUTS, SEED, describe, required_inputs, task_name
from .probes import UNKNOWN_OPTION, bad_audio
from .session import OVERSIZE_BYTES

if TYPE_CHECKING:
    from .generator import GeneratorChecks

INVALID = (grpc.StatusCode.INVALID_ARGUMENT,)


class BadInputs:
    """The bad requests of one generator's checks."""

    def __init__(self, checks: GeneratorChecks) -> None:
        self.c, self.s = checks, checks.s

    def expect(
        self,
        name: str,
        req: generator_pb2.SynthesizeRequest,
        codes: tuple[grpc.StatusCode, ...] = INVALID,
        sent: str | None = None,
    ) -> None:
        """``req`` must fail with one of ``codes`` (and leave the service SERVING)."""
        self.s.expect_error(name, lambda: self.c.synthesize(req), sent or describe(req), codes)

    def run(self) -> None:
        s = self.s
        first = self.c.tasks[0]
        expect = self.expect
        expect("empty request_id rejected", self.c.request(first, "", SEED))
        for task in self.c.tasks:
            for field in required_inputs(task):
                req = self.c.request(task, f"conformance-missing-{field}", SEED)
                req.ClearField(field)
                expect(f"missing input rejected ({task_name(task)} {field})", req)
        undeclared = [t for t in ALL_TASKS if t not in self.c.tasks]
        if undeclared:
            req = self.c.request(undeclared[0], "conformance-unsupported", SEED)
            expect("unsupported task rejected", req, (grpc.StatusCode.UNIMPLEMENTED,))
        else:
            s.skip("unsupported task rejected", "the service supports every task")
        audio_tasks = [t for t in self.c.tasks if any(f in AUDIO_INPUTS for f in required_inputs(t))]
        for task in audio_tasks:
            for field in (f for f in required_inputs(task) if f in AUDIO_INPUTS):
                for label, audio in bad_audio():
                    req = self.c.request(task, f"conformance-bad-{field}", SEED)
                    getattr(req, field).CopyFrom(audio)
                    expect(f"bad audio rejected ({task_name(task)} {field} {label})", req)
        self.too_short_sources(audio_tasks)
        if not audio_tasks:
            s.skip("bad audio rejected", "the service's tasks take no audio")
        req = self.c.request(first, "conformance-unknown-option", SEED)
        req.parameters[UNKNOWN_OPTION] = "1"
        expect("unknown option rejected", req)
        s.undecodable(
            "/voxarena.v1.GeneratorService/Synthesize",
            self.c.request(first, "conformance-undecodable", SEED).SerializeToString(),
        )
        big = self.c.request(first, "conformance-big", SEED, text="a" * OVERSIZE_BYTES)
        self.s.expect_oversize(
            lambda: self.c.synthesize(big),
            f"{task_name(first)} with a {OVERSIZE_BYTES // 2**20} MiB text, request_id 'conformance-big'",
        )

    def too_short_sources(self, audio_tasks: list[int]) -> None:
        """[generator.min-source]: a reference or source shorter than the declared minimum is refused."""
        minimum = self.c.info.min_source_seconds
        if minimum <= 0 or not audio_tasks:
            self.s.skip("source under min_source_seconds rejected", "no min_source_seconds declared, or no audio task")
            return
        for task in audio_tasks:
            for field in (f for f in required_inputs(task) if f in AUDIO_INPUTS):
                req = self.c.request(task, f"conformance-short-{field}", SEED)
                probe = self.c.s.probes[0]
                short = probe.samples[: max(1, int(minimum / 2 * probe.sample_rate))]
                getattr(req, field).CopyFrom(encode_audio(AudioClip(short, probe.sample_rate)))
                self.expect(f"source under min_source_seconds rejected ({task_name(task)} {field})", req)

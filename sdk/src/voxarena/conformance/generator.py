"""Conformance checks of a generator: every declared task, voice and option, error paths, concurrency.

What is sent and what is required (each check named as in the report; "(CASE)" is the task, and the
voice where one is named):

- ``answers (CASE)``: every declared task with valid inputs (text for TTS and CLONE, reference audio
  for CLONE and CONVERT, source audio for RECONSTRUCT and CONVERT; voxarena.tasks) answers, and so
  does every declared voice (on TTS when declared, with a 20-character text).
- ``echoes request_id``, ``echoes seed``, ``echoes voice`` (TTS or a named voice: the voice asked
  for, or the first declared one when none was), ``timing fields`` (scope equal to GetInfo's),
  ``audio well-formed`` (mono, finite, float samples within full scale).
- ``sample rate as declared``: VoiceSpec.sample_rate of the voice used, or ModelInfo.native_sample_rate.
- ``duration plausible``: text tasks 0.02..1.0 s per character of the text (a 44-character sentence
  gives 0.88..44 s); RECONSTRUCT and CONVERT within a factor of 2 of the source's duration.
- ``deterministic as declared (TASK)``: with ModelInfo.deterministic, the same request and seed
  twice give the same bytes, for every task.
- ``option default accepted (NAME)``: each option set to its default_value is accepted and, for a
  deterministic service, gives the same bytes as leaving it unset (the default is "the value used
  when the request does not set the option"). OptionSpec has no machine-readable range, so no other
  value is tried; ``unknown option rejected`` sends one undeclared name (INVALID_ARGUMENT).
- ``concurrent requests answered``: 8 requests at once, alternating two different short ones; each
  answer carries its own request id and seed, the declared rate, and (deterministic) the bytes the
  same request gives alone.
- error paths, each followed by a health check: empty request id, each missing task input, bad audio
  (empty, NaN, 1e30 samples, 1 Hz, 10 MHz) in each audio input and a request whose string field is not
  UTF-8 -> INVALID_ARGUMENT; an undeclared task -> UNIMPLEMENTED; an
  oversize message -> RESOURCE_EXHAUSTED; ``still SERVING after every bad input``.
"""

from __future__ import annotations

from typing import Any

import grpc
import numpy as np

from voxarena.codec import AudioClip, AudioFormatError, decode_audio, encode_audio
from voxarena.tasks import task_inputs
from voxarena.v1 import common_pb2, generator_pb2, generator_pb2_grpc

from .session import (
    CONCURRENT,
    OVERSIZE_BYTES,
    Session,
    describe_audio,
    describe_error,
    first_difference,
    short,
    summarise,
)

TEXTS = ("The quick brown fox jumps over the lazy dog.", "Pack my box with five dozen liquor jugs.")
# Shorter inputs for the checks that repeat a request many times (voices, options, concurrency): cheaper for
# slow engines.
LIGHT_TEXTS = ("Good morning to you.", "Thank you very much.")
LIGHT_SECONDS = 1.0
SEED = 424242
SECONDS_PER_CHAR = (0.02, 1.0)  # plausible speech per character of text, pauses and silences included
SOURCE_FACTOR = 2.0  # RECONSTRUCT / CONVERT keep the source's duration within this factor
UNKNOWN_OPTION = "conformance-no-such-option"
ALL_TASKS = (generator_pb2.TTS, generator_pb2.CLONE, generator_pb2.RECONSTRUCT, generator_pb2.CONVERT)
AUDIO_INPUTS = ("reference_audio", "source_audio")


def task_name(task: int) -> str:
    return generator_pb2.Task.Name(task) if task in generator_pb2.Task.values() else str(task)


def required_inputs(task: int) -> tuple[str, ...]:
    """The request fields ``task`` needs (voxarena.tasks, the contract's one copy of the rule);
    ``reference_text`` is optional ("may be empty"), so never required."""
    needs = task_inputs(task_name(task))
    return tuple(
        f
        for f, need in (("text", needs.text), ("reference_audio", needs.reference), ("source_audio", needs.source))
        if need
    )


def describe(req: generator_pb2.SynthesizeRequest) -> str:
    parts = [task_name(req.task)]
    if req.voice:
        parts.append(f"voice={req.voice!r}")
    if req.text:
        parts.append(f"text={short(req.text)!r} ({len(req.text)} chars)")
    for name in AUDIO_INPUTS:
        if req.HasField(name):
            parts.append(f"{name}={describe_audio(getattr(req, name))}")
    parts.append(f"seed={req.seed}")
    parts.append(f"request_id={req.request_id!r}")
    if req.parameters:
        parts.append(f"parameters={dict(sorted(req.parameters.items()))}")
    return " ".join(parts)


def describe_response(resp: generator_pb2.SynthesizeResponse) -> str:
    return f"request_id={resp.request_id!r} seed={resp.seed} audio {describe_audio(resp.audio)}"


def plausible_duration(req: generator_pb2.SynthesizeRequest) -> tuple[float, float, str]:
    """Bounds (seconds) of a plausible answer to ``req`` and what they are based on."""
    if req.task in (generator_pb2.TTS, generator_pb2.CLONE):
        n = len(req.text)
        return (
            SECONDS_PER_CHAR[0] * n,
            SECONDS_PER_CHAR[1] * n,
            f"{SECONDS_PER_CHAR[0]:g}..{SECONDS_PER_CHAR[1]:g} s per character of {n}",
        )
    source = decode_audio(req.source_audio, "source_audio").duration
    return source / SOURCE_FACTOR, source * SOURCE_FACTOR, f"within x{SOURCE_FACTOR:g} of the {source:.2f} s source"


class GeneratorChecks:
    def __init__(self, session: Session) -> None:
        self.s = session
        self.stub = generator_pb2_grpc.GeneratorServiceStub(session.channel)
        self.audio = [encode_audio(p) for p in session.probes]
        self.light_audio = [
            encode_audio(AudioClip(p.samples[: int(LIGHT_SECONDS * p.sample_rate)], p.sample_rate))
            for p in session.probes
        ]

    def request(
        self, task: int, request_id: str, seed: int, variant: int = 0, light: bool = False, **over: Any
    ) -> generator_pb2.SynthesizeRequest:
        """A valid request for ``task``; ``variant`` 1 is a second, different one (text, audio and seed).

        ``light``: a short text and a one-second source (the reference stays whole: cloners may need it).
        """
        base: dict[str, Any] = dict(request_id=request_id, seed=seed + 1000 * variant, task=task)
        inputs = required_inputs(task)
        if "text" in inputs:
            base["text"] = (LIGHT_TEXTS if light else TEXTS)[variant]
        for name in AUDIO_INPUTS:
            if name in inputs:
                # CONVERT takes the other probe as its reference, so source and reference differ.
                other = name == "reference_audio" and "source_audio" in inputs
                audio = self.light_audio if light and name == "source_audio" else self.audio
                base[name] = audio[(variant + other) % 2]
        base.update(over)
        return generator_pb2.SynthesizeRequest(**base)

    def synthesize(self, req: generator_pb2.SynthesizeRequest) -> generator_pb2.SynthesizeResponse:
        response: generator_pb2.SynthesizeResponse = self.stub.Synthesize(req, timeout=self.s.timeout)
        return response

    # -- the whole run --------------------------------------------------------------------------
    def run(self) -> None:
        s = self.s
        info = s.call_ok(
            "GetInfo",
            lambda: self.stub.GetInfo(common_pb2.GetInfoRequest(), timeout=s.timeout),
            "GetInfo",
            record=False,
        )
        if info is None:
            return
        self.info = info
        s.model_info(info.model, info.family != generator_pb2.GENERATOR_FAMILY_UNSPECIFIED)
        self.tasks = [t for t in info.tasks if t in ALL_TASKS]
        s.add(
            "declares tasks",
            bool(self.tasks),
            "GetInfo",
            ", ".join(task_name(t) for t in info.tasks) or "no tasks",
            "at least one of TTS, CLONE, RECONSTRUCT, CONVERT",
        )
        if not self.tasks:
            return
        answered = self.each_task()
        self.each_voice()
        if answered:
            self.repeated(next(iter(answered)))
        else:
            for name in ["concurrent requests answered"] + [
                f"option default accepted ({o.name})" for o in info.options
            ]:
                s.skip(name, "needs an answered task, and none answered (see 'answers')")
        self.bad_inputs()
        s.still_serving()

    # -- valid requests ---------------------------------------------------------------------------
    def each_task(self) -> dict[int, tuple[generator_pb2.SynthesizeRequest, generator_pb2.SynthesizeResponse]]:
        answered = {}
        for i, task in enumerate(self.tasks):
            case = task_name(task)
            req = self.request(task, f"conformance-{case}", SEED + i)
            resp = self.answer(case, req)
            if resp is None:
                continue
            answered[task] = (req, resp)
            self.response(case, req, resp)
            self.determinism(case, req, resp)
        return answered

    def each_voice(self) -> None:
        """Every declared voice at its declared rate (on TTS, the task voices are for, else the first task),
        with light requests: engines with many voices stay quick to check."""
        task = generator_pb2.TTS if generator_pb2.TTS in self.tasks else self.tasks[0]
        for i, voice in enumerate(self.info.voices):
            case = f"{task_name(task)} voice={voice.name}"
            req = self.request(task, f"conformance-voice-{i}", SEED + 100 + i, light=True, voice=voice.name)
            resp = self.answer(case, req)
            if resp is not None:
                self.response(case, req, resp)

    def answer(self, case: str, req: generator_pb2.SynthesizeRequest) -> generator_pb2.SynthesizeResponse | None:
        sent = describe(req)
        try:
            resp = self.synthesize(req)
        except grpc.RpcError as e:
            self.s.add(f"answers ({case})", False, sent, describe_error(e), "a response to a valid request")
            return None
        self.s.add(f"answers ({case})", True, sent, describe_response(resp))
        return resp

    def declared_voice(self, req: generator_pb2.SynthesizeRequest) -> generator_pb2.VoiceSpec | None:
        voices = list(self.info.voices)
        return next((v for v in voices if v.name == req.voice), None) if req.voice else (voices[0] if voices else None)

    def declared_rate(self, req: generator_pb2.SynthesizeRequest) -> tuple[int, str]:
        voice = self.declared_voice(req)
        if voice is not None and voice.sample_rate:
            return voice.sample_rate, f"VoiceSpec.sample_rate of {voice.name!r}"
        return self.info.model.native_sample_rate, "ModelInfo.native_sample_rate"

    def response(self, case: str, req: generator_pb2.SynthesizeRequest, resp: generator_pb2.SynthesizeResponse) -> None:
        s, sent = self.s, describe(req)
        s.add(
            f"echoes request_id ({case})",
            resp.request_id == req.request_id,
            sent,
            f"request_id {resp.request_id!r}, sent {req.request_id!r}",
            f"request_id {req.request_id!r}",
        )
        s.add(
            f"echoes seed ({case})",
            resp.seed == req.seed,
            sent,
            f"seed {resp.seed}, sent {req.seed}",
            f"seed {req.seed}",
        )
        voice = self.declared_voice(req)
        if voice is not None and (req.voice or req.task == generator_pb2.TTS):  # voices are for TTS
            s.add(
                f"echoes voice ({case})",
                resp.voice == voice.name,
                sent,
                f"voice {resp.voice!r}",
                f"voice {voice.name!r} ({'as asked' if req.voice else 'the first declared, the default'})",
            )
        s.timing(f"timing fields ({case})", resp.timing, self.info.model.timing_scope, sent, resp.HasField("timing"))
        try:
            clip = decode_audio(resp.audio, "response audio")
            peak = float(np.abs(clip.samples).max()) if clip.samples.dtype.kind == "f" else 0.0
            if peak > 1.0 + 1e-6:
                raise AudioFormatError(f"float samples exceed full scale 1.0 (max |x| = {peak:.3f})")
        except AudioFormatError as e:
            s.add(f"audio well-formed ({case})", False, sent, str(e), "non-empty, mono, finite audio within full scale")
            return
        s.add(f"audio well-formed ({case})", True, sent, f"{clip.duration:.2f} s mono at {clip.sample_rate} Hz")
        rate, basis = self.declared_rate(req)
        s.add(
            f"sample rate as declared ({case})",
            clip.sample_rate == rate,
            sent,
            f"{clip.sample_rate} Hz, declared {rate} Hz ({basis})",
            f"{rate} Hz",
        )
        lo, hi, why = plausible_duration(req)
        s.add(
            f"duration plausible ({case})",
            lo <= clip.duration <= hi,
            sent,
            f"{clip.duration:.2f} s",
            f"{lo:.2f}..{hi:.2f} s ({why})",
        )

    def determinism(
        self, case: str, req: generator_pb2.SynthesizeRequest, first: generator_pb2.SynthesizeResponse
    ) -> None:
        name = f"deterministic as declared ({case})"
        if not self.info.model.deterministic:
            self.s.skip(name, "the service declares itself non-deterministic")
            return
        again = generator_pb2.SynthesizeRequest()
        again.CopyFrom(req)
        again.request_id = req.request_id + "-again"
        sent = f"{describe(req)}, then the same with request_id {again.request_id!r}"
        try:
            second = self.synthesize(again)
        except grpc.RpcError as e:
            self.s.add(name, False, sent, f"the second call failed: {describe_error(e)}", "identical audio bytes")
            return
        same = second.audio == first.audio
        got = (
            "identical audio bytes"
            if same
            else f"different audio: {describe_audio(first.audio)} vs {describe_audio(second.audio)}, "
            f"{first_difference(first.audio.data, second.audio.data)}"
        )
        self.s.add(name, same, sent, got, "identical audio bytes (ModelInfo.deterministic is true)")

    def repeated(self, task: int) -> None:
        """The checks that repeat a request (options, concurrency), on light requests answered alone first."""
        light = [self.request(task, f"conformance-light-{v}", SEED, variant=v, light=True) for v in (0, 1)]
        alone = []
        for req in light[: 2 if self.info.model.deterministic else 1]:
            try:
                alone.append(self.synthesize(req))
            except grpc.RpcError as e:
                for name in ["concurrent requests answered"] + [
                    f"option default accepted ({o.name})" for o in self.info.options
                ]:
                    self.s.add(
                        name, False, describe(req), f"the request alone failed: {describe_error(e)}", "a response"
                    )
                return
        self.each_option(light[0], alone[0])
        self.concurrent(light, alone)

    def each_option(self, base_req: generator_pb2.SynthesizeRequest, base: generator_pb2.SynthesizeResponse) -> None:
        for option in self.info.options:
            name = f"option default accepted ({option.name})"
            req = generator_pb2.SynthesizeRequest()
            req.CopyFrom(base_req)
            req.request_id = f"conformance-option-{option.name}"
            req.parameters[option.name] = option.default_value
            sent = describe(req)
            try:
                resp = self.synthesize(req)
            except grpc.RpcError as e:
                self.s.add(name, False, sent, describe_error(e), "a response: the declared default_value is valid")
                continue
            if not self.info.model.deterministic:
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
        deterministic = self.info.model.deterministic
        requests = []
        for i in range(CONCURRENT):
            r = generator_pb2.SynthesizeRequest()
            r.CopyFrom(pair[i % 2])
            r.request_id = f"conformance-concurrent-{i}"
            requests.append(r)
        futures: list[grpc.Future] = [self.stub.Synthesize.future(r, timeout=self.s.timeout) for r in requests]
        problems = []
        rate, _ = self.declared_rate(pair[0])
        for i, (r, f) in enumerate(zip(requests, futures)):
            try:
                resp = f.result()
            except grpc.RpcError as e:
                problems.append(f"{r.request_id!r}: {describe_error(e)}")
                continue
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

    # -- bad inputs -------------------------------------------------------------------------------
    def bad_inputs(self) -> None:
        s, invalid = self.s, (grpc.StatusCode.INVALID_ARGUMENT,)
        first = self.tasks[0]

        def expect(
            name: str,
            req: generator_pb2.SynthesizeRequest,
            codes: tuple[grpc.StatusCode, ...] = invalid,
            sent: str | None = None,
        ) -> None:
            s.expect_error(name, lambda: self.synthesize(req), sent or describe(req), codes)

        expect("empty request_id rejected", self.request(first, "", SEED))
        for task in self.tasks:
            for field in required_inputs(task):
                req = self.request(task, f"conformance-missing-{field}", SEED)
                req.ClearField(field)
                expect(f"missing input rejected ({task_name(task)} {field})", req)
        undeclared = [t for t in ALL_TASKS if t not in self.tasks]
        if undeclared:
            req = self.request(undeclared[0], "conformance-unsupported", SEED)
            expect("unsupported task rejected", req, (grpc.StatusCode.UNIMPLEMENTED,))
        else:
            s.skip("unsupported task rejected", "the service supports every task")
        audio_tasks = [t for t in self.tasks if any(f in AUDIO_INPUTS for f in required_inputs(t))]
        for task in audio_tasks:
            for field in (f for f in required_inputs(task) if f in AUDIO_INPUTS):
                for label, audio in bad_audio():
                    req = self.request(task, f"conformance-bad-{field}", SEED)
                    getattr(req, field).CopyFrom(audio)
                    expect(f"bad audio rejected ({task_name(task)} {field} {label})", req)
        if not audio_tasks:
            s.skip("bad audio rejected", "the service's tasks take no audio")
        req = self.request(first, "conformance-unknown-option", SEED)
        req.parameters[UNKNOWN_OPTION] = "1"
        expect("unknown option rejected", req)
        s.undecodable(
            "/voxarena.v1.GeneratorService/Synthesize",
            self.request(first, "conformance-undecodable", SEED).SerializeToString(),
        )
        big = self.request(first, "conformance-big", SEED, text="a" * OVERSIZE_BYTES)
        expect(
            "oversize message rejected",
            big,
            (grpc.StatusCode.RESOURCE_EXHAUSTED,),
            f"{task_name(first)} with a {OVERSIZE_BYTES // 2**20} MiB text, request_id 'conformance-big'",
        )


def bad_audio() -> list[tuple[str, common_pb2.Audio]]:
    """Audio no service can use: no samples at all, NaN samples, samples of 1e30 (full scale is 1.0),
    and rates no audio has (1 Hz; above 384 kHz)."""
    empty = common_pb2.Audio(sample_rate=16000, channels=1, encoding=common_pb2.PCM_S16LE)
    nan = encode_audio(AudioClip(np.full(1600, np.nan, np.float32), 16000))
    huge = encode_audio(AudioClip(np.full(1600, 1e30, np.float32), 16000))
    tone = (0.3 * np.sin(np.arange(16000) / 10)).astype(np.float32)
    one_hz = encode_audio(AudioClip(tone[:8], 1))
    too_fast = encode_audio(AudioClip(tone, 10_000_000))
    return [("empty", empty), ("NaN", nan), ("huge samples", huge), ("1 Hz", one_hz), ("10 MHz", too_fast)]


def check_generator(session: Session) -> None:
    GeneratorChecks(session).run()

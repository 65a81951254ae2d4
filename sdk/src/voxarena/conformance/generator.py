"""Conformance checks of a generator: every declared task, voice and option, error paths, concurrency.

What is sent and what is required (each check named as in the report; "(CASE)" is the task, and the
voice where one is named):

- ``answers (CASE)``: every declared task with valid inputs (text for TTS and CLONE, reference audio
  for CLONE and CONVERT, source audio for RECONSTRUCT and CONVERT; voxarena.tasks) answers, and so
  does every declared voice (on TTS when declared, with a 20-character text).
- ``echoes request_id``, ``echoes seed``, ``echoes voice`` (TTS or a named voice: the voice asked
  for, or the first declared one when none was), ``timing fields`` (scope equal to GetInfo's),
  ``audio well-formed`` (mono, finite, float samples within full scale), ``audio not silent`` (RMS at
  least -60 dBFS).
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
from voxarena.v1 import generator_pb2, generator_pb2_grpc

from .evidence import describe_audio, describe_error, first_difference
from .generator_errors import BadInputs
from .generator_repeats import RepeatedRequests
from .generator_requests import (
    ALL_TASKS,
    AUDIO_INPUTS,
    LIGHT_SECONDS,
    LIGHT_TEXTS,
    SEED,
    TEXTS,
    describe,
    describe_response,
    plausible_duration,
    required_inputs,
    task_name,
)
from .session import Session

SILENCE_RMS = 1e-3  # [generator.not-silent]: -60 dBFS; quieter is digital silence, not speech


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
        info = s.get_info(self.stub)
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
            RepeatedRequests(self).run(next(iter(answered)))
        else:
            for name in ["concurrent requests answered"] + [
                f"option default accepted ({o.name})" for o in info.options
            ]:
                s.skip(name, "needs an answered task, and none answered (see 'answers')")
        BadInputs(self).run()
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
        rms = float(np.sqrt(np.mean(clip.as_float32().astype(np.float64) ** 2)))
        s.add(
            f"audio not silent ({case})",
            rms >= SILENCE_RMS,
            sent,
            f"RMS {rms:.2e} of full scale ({20 * np.log10(max(rms, 1e-12)):.1f} dBFS)",
            f"RMS >= {SILENCE_RMS:g} (-60 dBFS): speech, not digital silence",
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


def check_generator(session: Session) -> None:
    GeneratorChecks(session).run()

"""Conformance checks of a transform (TransformService): GetInfo, every option's range, the answer, errors.

What is sent and what is required (each check named as in the report):

- ``GetInfo fields``: name, version, licence, timing scope; ``kind declared`` (CHANNEL, LAUNDERING,
  ATTACK or WATERMARK); ``every option has a range`` (TransformInfo.ranges names each option once, a numeric range
  with min <= max or a list of choices) and ``defaults inside their ranges``; ``max_seconds`` > 0.
- ``answers``: the first probe clip with no options; ``echoes request_id``, ``echoes seed``, ``timing
  fields``, ``audio well-formed`` (mono, finite, within full scale, not empty).
- ``deterministic as declared``: with ModelInfo.deterministic, the same request twice gives the same bytes.
- ``option range ends accepted (NAME)``: each numeric option at its min and at its max, each option
  with choices at every choice, answers (a range is a promise: every value in it works).
- error paths, each followed by a health check: empty request id, no audio, bad audio (empty, NaN,
  1e30 samples, 1 Hz, 10 MHz), an unknown option, each numeric option just outside its range and at
  "nan", each option with choices at an undeclared value, audio longer than max_seconds, a request
  whose string field is not UTF-8 -> INVALID_ARGUMENT; ``still SERVING after every bad input``.
"""

from __future__ import annotations

import grpc
import numpy as np

from voxarena.codec import AudioClip, AudioFormatError, decode_audio, encode_audio
from voxarena.v1 import transform_pb2, transform_pb2_grpc

from .evidence import first_difference
from .probes import UNKNOWN_OPTION, bad_audio
from .session import Session

SEED = 424242


class TransformChecks:
    def __init__(self, session: Session) -> None:
        self.s = session
        self.stub = transform_pb2_grpc.TransformServiceStub(session.channel)
        self.info = transform_pb2.TransformInfo()
        self.probe = session.probes[0]

    def request(self, request_id: str = "conformance-transform", **parameters: str) -> transform_pb2.TransformRequest:
        return transform_pb2.TransformRequest(
            request_id=request_id, seed=SEED, audio=encode_audio(self.probe), parameters=parameters
        )

    def transform(self, req: transform_pb2.TransformRequest) -> transform_pb2.TransformResponse:
        response: transform_pb2.TransformResponse = self.stub.Transform(req, timeout=self.s.timeout)
        return response

    def run(self) -> None:
        s = self.s
        info = s.get_info(self.stub, record=True)
        if info is None:
            return
        self.info = info
        s.model_info(info.model, True, needs_rate=False)  # a transform may take any rate
        kind = transform_pb2.TransformKind.Name(info.kind) if info.kind in transform_pb2.TransformKind.values() else ""
        s.add(
            "kind declared",
            info.kind != 0 and bool(kind),
            "GetInfo",
            kind or str(info.kind),
            "CHANNEL, LAUNDERING, ATTACK or WATERMARK",
        )
        s.add("max_seconds declared", info.max_seconds > 0, "GetInfo", f"{info.max_seconds:g} s", "> 0")
        self.ranges()
        req = self.request()
        first = s.call_ok("answers", lambda: self.transform(req), "the first probe clip, no options")
        if first is not None:
            self.response(req, first)
            if info.model.deterministic:
                again = s.call_ok("answers again", lambda: self.transform(req), "the same request", record=False)
                if again is not None:
                    same = again.audio.data == first.audio.data
                    s.add(
                        "deterministic as declared",
                        same,
                        "the same request and seed twice",
                        "same bytes" if same else first_difference(first.audio.data, again.audio.data),
                        "the same bytes (ModelInfo.deterministic)",
                    )
            self.range_ends()
        self.bad_inputs()
        s.still_serving()

    def ranges(self) -> None:
        names = [o.name for o in self.info.options]
        ranges = {r.name: r for r in self.info.ranges}
        problems = [f"{n}: no range" for n in names if n not in ranges]
        problems += [f"{n}: a range for no option" for n in ranges if n not in names]
        problems += [
            f"{r.name}: min {r.min_value:g} > max {r.max_value:g}"
            for r in ranges.values()
            if not r.choices and r.min_value > r.max_value
        ]
        problems += [f"{r.name}: ranged more than once" for r in self.info.ranges if list(ranges).count(r.name) > 1]
        self.s.add("every option has a range", not problems, "GetInfo", "; ".join(problems) or f"{len(names)} options")
        outside = []
        for o in self.info.options:
            r = ranges.get(o.name)
            if r is None:
                continue
            if r.choices:
                if o.default_value not in r.choices:
                    outside.append(f"{o.name}={o.default_value!r} not in {list(r.choices)}")
            else:
                try:
                    ok = r.min_value <= float(o.default_value) <= r.max_value
                except ValueError:
                    ok = False
                if not ok:
                    outside.append(f"{o.name}={o.default_value!r} outside [{r.min_value:g}, {r.max_value:g}]")
        self.s.add("defaults inside their ranges", not outside, "GetInfo", "; ".join(outside) or "all inside")

    def response(self, req: transform_pb2.TransformRequest, resp: transform_pb2.TransformResponse) -> None:
        s, sent = self.s, "the first probe clip, no options"
        s.add("echoes request_id", resp.request_id == req.request_id, sent, repr(resp.request_id), repr(req.request_id))
        s.add("echoes seed", resp.seed == req.seed, sent, str(resp.seed), str(req.seed))
        s.timing("timing fields", resp.timing, self.info.model.timing_scope, sent, resp.HasField("timing"))
        try:
            clip = decode_audio(resp.audio, "response audio")
            peak = float(np.abs(clip.samples).max()) if clip.samples.dtype.kind == "f" else 0.0
            if peak > 1.0 + 1e-6:
                raise AudioFormatError(f"float samples exceed full scale 1.0 (max |x| = {peak:.3f})")
        except AudioFormatError as e:
            s.add("audio well-formed", False, sent, str(e), "non-empty, mono, finite audio within full scale")
            return
        s.add("audio well-formed", True, sent, f"{clip.duration:.2f} s mono at {clip.sample_rate} Hz")

    def range_ends(self) -> None:
        for r in self.info.ranges:
            values = list(r.choices) if r.choices else [repr(r.min_value), repr(r.max_value)]
            failed = []
            for value in values:
                try:
                    self.transform(self.request(f"conformance-range-{r.name}", **{r.name: value}))
                except grpc.RpcError as e:
                    failed.append(f"{value}: {e.code().name} {e.details()}")
            self.s.add(
                f"option range ends accepted ({r.name})",
                not failed,
                f"{r.name} = {', '.join(values)}",
                "; ".join(failed) or "all answered",
                "an answer for every value the range declares",
            )

    def bad_inputs(self) -> None:
        s, invalid = self.s, (grpc.StatusCode.INVALID_ARGUMENT,)

        def expect(name: str, req: transform_pb2.TransformRequest, sent: str) -> None:
            s.expect_error(name, lambda: self.transform(req), sent, invalid)

        expect("empty request_id rejected", self.request(""), "request_id ''")
        no_audio = self.request("conformance-no-audio")
        no_audio.ClearField("audio")
        expect("missing audio rejected", no_audio, "no audio")
        for label, audio in bad_audio():
            req = self.request(f"conformance-bad-audio-{label}")
            req.audio.CopyFrom(audio)
            expect(f"bad audio rejected ({label})", req, f"audio: {label}")
        expect("unknown option rejected", self.request(**{UNKNOWN_OPTION: "1"}), f"{UNKNOWN_OPTION}=1")
        for r in self.info.ranges:
            if r.choices:
                expect(
                    f"undeclared choice rejected ({r.name})",
                    self.request(**{r.name: "conformance-x"}),
                    f"{r.name}=conformance-x",
                )
                continue
            above = r.max_value + max(abs(r.max_value), 1.0)
            for label, value in (("above max", repr(above)), ("nan", "nan")):
                expect(
                    f"out of range rejected ({r.name} {label})", self.request(**{r.name: value}), f"{r.name}={value}"
                )
        if 0 < self.info.max_seconds < 3600:
            seconds = self.info.max_seconds + 1
            long = AudioClip(np.zeros(int(seconds * 8000), np.int16), 8000)
            req = self.request("conformance-too-long")
            req.audio.CopyFrom(encode_audio(long))
            expect("audio over max_seconds rejected", req, f"{seconds:g} s of audio at 8 kHz")
        s.undecodable(
            "/voxarena.v1.TransformService/Transform", self.request("conformance-undecodable").SerializeToString()
        )


def check_transform(session: Session) -> None:
    TransformChecks(session).run()

"""Conformance checks of a detector: Score, ScoreBatch, max_batch_size, options, error paths, concurrency.

What is sent and what is required (each check named as in the report):

- ``answers (clip N)``: Score of three different clips (3 s at 150 Hz, 2 s at 210 Hz, its first
  second), each with ``echoes request_id``, ``finite score``, ``is_llr matches calibrated`` (every
  ScoreResponse.is_llr equals DetectorInfo.calibrated) and ``timing fields`` (scope equal to GetInfo's).
- ``deterministic as declared``: with ModelInfo.deterministic, the same clip twice, the same score.
- ``Score == ScoreBatch``: one ScoreBatch of the three clips answers in order, each score within
  1e-6 relative (absolute below magnitude 1) of Score's for the same clip, with the same is_llr.
- ``max_batch_size accepted``: a batch of exactly max_batch_size one-second clips scores every item;
  ``max_batch_size + 1 refused``: one more is INVALID_ARGUMENT.
- ``ScoreBatch per-item outcomes``: a good and an empty clip: the good one scored, the bad one an
  ItemError INVALID_ARGUMENT, order kept.
- ``option default accepted (NAME)``: each option at its default_value is accepted and (deterministic)
  scores the same as leaving it unset; ``unknown option rejected``: an undeclared name is INVALID_ARGUMENT.
- ``concurrent requests answered``: 8 Score calls at once on two different clips; each answer echoes
  its own request id with that clip's score (deterministic) or a finite one.
- error paths, each followed by a health check: empty request id, bad audio (empty, NaN, 1e30
  samples, 1 Hz, 10 MHz), a 1-sample clip, a clip just shorter than DetectorInfo.min_seconds, just
  longer than max_seconds, at a rate outside DetectorInfo.sample_rates, a request whose string field
  is not UTF-8 -> INVALID_ARGUMENT (SHOULD); an oversize message refused (RESOURCE_EXHAUSTED: SHOULD);
  ``still SERVING after every bad input``.
"""

from __future__ import annotations

import math
from functools import partial

import grpc
import numpy as np

from voxarena.codec import AudioClip, encode_audio, resample
from voxarena.v1 import common_pb2, detector_pb2, detector_pb2_grpc

from .detector_attribution import AttributionChecks
from .detector_segments import SegmentChecks
from .detector_stream import StreamChecks
from .evidence import answered_at_once, close, describe_audio, describe_error, summarise
from .probes import UNKNOWN_OPTION, bad_audio
from .session import CONCURRENT, OVERSIZE_BYTES, Session

BATCH_BUDGET_BYTES = 48 * 1024 * 1024  # the max_batch_size batch stays under the SDK's 64 MiB message limit
REL_TOLERANCE = 1e-6


def describe(req: detector_pb2.ScoreRequest) -> str:
    params = f" parameters={dict(sorted(req.parameters.items()))}" if req.parameters else ""
    return f"Score audio={describe_audio(req.audio)} request_id={req.request_id!r}{params}"


def describe_batch(items: list[detector_pb2.ScoreRequest]) -> str:
    shown = ", ".join(f"{r.request_id!r}: {describe_audio(r.audio)}" for r in items[:4])
    return f"ScoreBatch of {len(items)} clips ({shown}{', ...' if len(items) > 4 else ''})"


class DetectorChecks:
    def __init__(self, session: Session) -> None:
        self.s = session
        self.stub = detector_pb2_grpc.DetectorServiceStub(session.channel)
        self.use_probes(session.probes)

    def use_probes(self, probes: tuple[AudioClip, AudioClip]) -> None:
        self.probes = probes
        a, b = probes
        third = AudioClip(a.samples[: a.sample_rate], a.sample_rate)
        self.clips = [encode_audio(c) for c in (a, b, third)]

    @staticmethod
    def at_accepted_rate(clip: AudioClip, rates: list[int]) -> AudioClip:
        """``clip``, resampled to the declared rate nearest its own when the service declares others."""
        if not rates or clip.sample_rate in rates:
            return clip
        rate = min(rates, key=lambda r: abs(r - clip.sample_rate))
        return AudioClip(resample(clip.samples, clip.sample_rate, rate), rate)

    def score(self, req: detector_pb2.ScoreRequest) -> detector_pb2.ScoreResponse:
        response: detector_pb2.ScoreResponse = self.stub.Score(req, timeout=self.s.timeout)
        return response

    def batch(self, items: list[detector_pb2.ScoreRequest]) -> detector_pb2.ScoreBatchResponse:
        request = detector_pb2.ScoreBatchRequest(items=items)
        response: detector_pb2.ScoreBatchResponse = self.stub.ScoreBatch(request, timeout=self.s.timeout)
        return response

    def run(self) -> None:
        s = self.s
        info = s.get_info(self.stub)
        if info is None:
            return
        self.info = info
        rates = sorted(info.sample_rates)
        self.use_probes((self.at_accepted_rate(s.probes[0], rates), self.at_accepted_rate(s.probes[1], rates)))
        s.model_info(
            info.model,
            info.family != detector_pb2.DETECTOR_FAMILY_UNSPECIFIED,
            extra=[] if info.max_batch_size >= 1 else ["max_batch_size (0: no batch accepted)"],
        )
        singles = self.each_clip()
        if singles is not None:
            self.determinism(singles[0])
            self.score_equals_batch(singles)
            self.each_option(singles[0])
            self.concurrent(singles)
        else:
            for name in ["deterministic as declared", "Score == ScoreBatch", "concurrent requests answered"] + [
                f"option default accepted ({o.name})" for o in info.options
            ]:
                s.skip(name, "needs a score of each clip alone, and Score failed (see 'answers')")
        SegmentChecks(self).run(singles)
        AttributionChecks(self).run(singles)
        StreamChecks(self).run()
        self.max_batch_size()
        self.bad_inputs()
        s.still_serving()

    def each_clip(self) -> list[float] | None:
        """Score of each clip, with every per-response check; None when any clip has no score."""
        s, scores, complete = self.s, [], True
        for i, audio in enumerate(self.clips, 1):
            req = detector_pb2.ScoreRequest(request_id=f"conformance-clip-{i}", audio=audio)
            sent = describe(req)
            try:
                resp = self.score(req)
            except grpc.RpcError as e:
                s.add(f"answers (clip {i})", False, sent, describe_error(e), "a score")
                complete = False
                continue
            s.add(f"answers (clip {i})", True, sent, f"score {resp.score}")
            self.response(f"clip {i}", sent, req.request_id, resp)
            scores.append(resp.score)
        return scores if complete else None

    def response(self, case: str, sent: str, request_id: str, resp: detector_pb2.ScoreResponse) -> None:
        s = self.s
        s.add(
            f"echoes request_id ({case})",
            resp.request_id == request_id,
            sent,
            f"request_id {resp.request_id!r}, sent {request_id!r}",
            f"request_id {request_id!r}",
        )
        s.add(f"finite score ({case})", math.isfinite(resp.score), sent, f"score {resp.score}", "a finite score")
        s.add(
            f"is_llr matches calibrated ({case})",
            resp.is_llr == self.info.calibrated,
            sent,
            f"is_llr={resp.is_llr}, GetInfo calibrated={self.info.calibrated}",
            f"is_llr={self.info.calibrated}, as DetectorInfo.calibrated declares",
        )
        s.timing(f"timing fields ({case})", resp.timing, self.info.model.timing_scope, sent, resp.HasField("timing"))

    def determinism(self, first: float) -> None:
        name = "deterministic as declared"
        if not self.info.model.deterministic:
            self.s.skip(name, "the service declares itself non-deterministic")
            return
        req = detector_pb2.ScoreRequest(request_id="conformance-clip-1-again", audio=self.clips[0])
        sent = f"{describe(req)} (the same clip as 'conformance-clip-1')"
        try:
            second = self.score(req).score
        except grpc.RpcError as e:
            self.s.add(name, False, sent, f"the second call failed: {describe_error(e)}", "the same score")
            return
        self.s.add(
            name,
            second == first,
            sent,
            f"score {second}, first time {first}",
            "the same score (ModelInfo.deterministic is true)",
        )

    def score_equals_batch(self, singles: list[float]) -> None:
        name = "Score == ScoreBatch"
        if not self.info.model.deterministic:
            self.s.skip(name, "the service declares itself non-deterministic: scores may differ call to call")
            return
        items = [
            detector_pb2.ScoreRequest(request_id=f"conformance-batch-{i}", audio=a) for i, a in enumerate(self.clips, 1)
        ]
        sent = describe_batch(items)
        resp = self.s.call_ok(name, lambda: self.batch(items), sent, record=False, expected="a score per clip")
        if resp is None:
            return
        problems = [f"{len(resp.items)} items for {len(items)} clips"] if len(resp.items) != len(items) else []
        for i, (req, item, single) in enumerate(zip(items, resp.items, singles), 1):
            if item.request_id != req.request_id:
                problems.append(f"item {i} request_id {item.request_id!r}, sent {req.request_id!r}")
            elif not item.HasField("result"):
                problems.append(f"item {i} failed: {item.error.code} {item.error.message!r}")
            elif not (math.isfinite(item.result.score) and close(item.result.score, single, REL_TOLERANCE)):
                problems.append(f"clip {i}: ScoreBatch {item.result.score}, Score {single}")
            elif item.result.is_llr != self.info.calibrated:
                problems.append(f"clip {i}: is_llr={item.result.is_llr}, GetInfo calibrated={self.info.calibrated}")
        self.s.add(
            name,
            not problems,
            f"{sent}, after Score of each",
            "; ".join(problems) or "the same scores",
            f"each clip's Score score within {REL_TOLERANCE:g} relative, in request order",
        )

    def each_option(self, base: float) -> None:
        for option in self.info.options:
            name = f"option default accepted ({option.name})"
            req = detector_pb2.ScoreRequest(
                request_id=f"conformance-option-{option.name}",
                audio=self.clips[0],
                parameters={option.name: option.default_value},
            )
            sent = describe(req)
            resp = self.s.call_ok(
                name, partial(self.score, req), sent, False, "a score: the declared default_value is valid"
            )
            if resp is None:
                continue
            ok = not self.info.model.deterministic or resp.score == base
            self.s.add(
                name,
                ok,
                sent,
                f"score {resp.score}, {base} without the option",
                "the same score as leaving the option unset (its default)",
            )

    def concurrent(self, singles: list[float]) -> None:
        deterministic = self.info.model.deterministic
        requests = [
            detector_pb2.ScoreRequest(request_id=f"conformance-concurrent-{i}", audio=self.clips[i % 2])
            for i in range(CONCURRENT)
        ]
        problems: list[str] = []
        for i, r, resp in answered_at_once(requests, self.stub.Score, self.s.timeout, problems):
            expected = singles[i % 2]
            if resp.request_id != r.request_id:
                problems.append(f"{r.request_id!r}: request_id {resp.request_id!r}")
            elif not math.isfinite(resp.score) or (deterministic and not close(resp.score, expected, REL_TOLERANCE)):
                problems.append(
                    f"{r.request_id!r} (clip {i % 2 + 1}): score {resp.score}, {expected} for the same clip alone"
                )
        sent = (
            f"{CONCURRENT} Score calls at once with request ids 'conformance-concurrent-0'..'-{CONCURRENT - 1}', "
            f"the even ones on clip 1 ({describe_audio(self.clips[0])}), the odd ones on clip 2 "
            f"({describe_audio(self.clips[1])})"
        )
        self.s.add(
            "concurrent requests answered",
            not problems,
            sent,
            summarise(problems, CONCURRENT),
            "each answer echoes its own request id with "
            + (f"its clip's score (within {REL_TOLERANCE:g} relative)" if deterministic else "a finite score"),
        )

    def max_batch_size(self) -> None:
        n = self.info.max_batch_size
        if n < 1:
            self.s.skip("max_batch_size accepted", "max_batch_size is 0")
            return
        probe = self.probes[0]
        seconds = min(1.0, BATCH_BUDGET_BYTES / ((n + 1) * 4 * probe.sample_rate))
        clip = encode_audio(AudioClip(probe.samples[: max(1, int(seconds * probe.sample_rate))], probe.sample_rate))
        items = [detector_pb2.ScoreRequest(request_id=f"conformance-max-{i}", audio=clip) for i in range(n + 1)]
        sent = describe_batch(items[:n])
        try:
            resp = self.batch(items[:n])
        except grpc.RpcError as e:
            self.s.add("max_batch_size accepted", False, sent, describe_error(e), f"a score for each of the {n} clips")
        else:
            bad = [
                f"item {i}: {it.request_id!r} "
                + (
                    f"score {it.result.score}"
                    if it.HasField("result")
                    else f"error {it.error.code} {it.error.message!r}"
                )
                for i, (it, req) in enumerate(zip(resp.items, items))
                if it.request_id != req.request_id or not it.HasField("result") or not math.isfinite(it.result.score)
            ]
            if len(resp.items) != n:
                bad.insert(0, f"{len(resp.items)} items")
            self.s.add(
                "max_batch_size accepted",
                not bad,
                sent,
                "; ".join(bad[:5]) or f"{n} finite scores in order",
                f"a finite score for each of the {n} clips (DetectorInfo.max_batch_size = {n}), in order",
            )
        self.s.expect_error(
            "max_batch_size + 1 refused",
            lambda: self.batch(items),
            describe_batch(items),
            (grpc.StatusCode.INVALID_ARGUMENT,),
        )

    def bad_inputs(self) -> None:
        s, invalid = self.s, (grpc.StatusCode.INVALID_ARGUMENT,)

        def expect(
            name: str,
            req: detector_pb2.ScoreRequest,
            codes: tuple[grpc.StatusCode, ...] = invalid,
            sent: str | None = None,
        ) -> None:
            s.expect_error(name, lambda: self.score(req), sent or describe(req), codes)

        expect("empty request_id rejected", detector_pb2.ScoreRequest(request_id="", audio=self.clips[0]))
        for label, audio in bad_audio():
            expect(
                f"bad audio rejected ({label})", detector_pb2.ScoreRequest(request_id="conformance-bad", audio=audio)
            )
        expect(
            "unknown option rejected",
            detector_pb2.ScoreRequest(
                request_id="conformance-unknown-option", audio=self.clips[0], parameters={UNKNOWN_OPTION: "1"}
            ),
        )
        for name, audio in self.out_of_bounds():
            expect(name, detector_pb2.ScoreRequest(request_id="conformance-bounds", audio=audio))
        s.undecodable(
            "/voxarena.v1.DetectorService/Score",
            detector_pb2.ScoreRequest(request_id="conformance-undecodable", audio=self.clips[2]).SerializeToString(),
        )
        self.per_item_outcomes()
        big = common_pb2.Audio(
            sample_rate=16000, channels=1, encoding=common_pb2.PCM_S16LE, data=b"\0" * OVERSIZE_BYTES
        )
        big_req = detector_pb2.ScoreRequest(request_id="conformance-big", audio=big)
        s.expect_oversize(lambda: self.score(big_req), describe(big_req))

    def out_of_bounds(self) -> list[tuple[str, common_pb2.Audio]]:
        """Clips outside what every detector, and what this one declares, accepts."""
        info, probe = self.info, self.probes[0]
        rates = sorted(info.sample_rates)
        rate = probe.sample_rate if not rates or probe.sample_rate in rates else rates[0]
        tone = np.resize(probe.as_float32(), 2 * rate)  # any speech-like samples, at a rate it accepts

        def clip(n: int) -> common_pb2.Audio:
            return encode_audio(AudioClip(np.resize(tone, n), rate))

        out = [("1-sample clip rejected", clip(1))]
        below = math.ceil(info.min_seconds * rate) - 1
        if below > 1:
            out.append((f"clip under min_seconds {info.min_seconds:g} rejected", clip(below)))
        if info.max_seconds > 0:
            over = np.zeros(math.floor(info.max_seconds * rate) + rate, np.int16)  # 1 s over
            if over.nbytes < BATCH_BUDGET_BYTES:
                out.append(
                    (f"clip over max_seconds {info.max_seconds:g} rejected", encode_audio(AudioClip(over, rate)))
                )
        if rates:
            other = next(r for r in (8000, 11025, 16000, 22050, 24000, 32000, 44100, 48000, 7999) if r not in rates)
            out.append((f"rate {other} Hz outside sample_rates rejected", encode_audio(AudioClip(tone, other))))
        return out

    def per_item_outcomes(self) -> None:
        name = "ScoreBatch per-item outcomes"
        items = [
            detector_pb2.ScoreRequest(request_id="b-ok", audio=self.clips[0]),
            detector_pb2.ScoreRequest(request_id="b-bad", audio=bad_audio()[0][1]),
        ]
        sent = describe_batch(items)
        batch = self.s.call_ok(name, lambda: self.batch(items), sent, record=False)
        self.s.bad_inputs += 1
        status = self.s.health()
        if status != "SERVING":
            self.s.not_serving_after.append(f"after '{name}' ({sent}): {status}")
        if batch is None:
            return
        ids = [it.request_id for it in batch.items]
        outcomes = [it.WhichOneof("outcome") for it in batch.items]
        ok = (
            ids == ["b-ok", "b-bad"]
            and outcomes == ["result", "error"]
            and batch.items[1].error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
        )
        got = ", ".join(
            f"{i!r}: {o}" + (f" {it.error.code}" if o == "error" else "")
            for i, o, it in zip(ids, outcomes, batch.items)
        )
        self.s.add(name, ok, sent, got, "'b-ok': result, 'b-bad': error 3 (INVALID_ARGUMENT), in request order")


def check_detector(session: Session) -> None:
    DetectorChecks(session).run()

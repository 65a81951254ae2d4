"""The detector checks of streaming (ScoreStream, DetectorInfo.streaming), each named as in the report:

- ``stream declared valid``: StreamingInfo within its bounds; a service that declares no streaming:
  ``stream unimplemented when undeclared`` (ScoreStream is UNIMPLEMENTED) and nothing else.
- ``stream scores (clip N, C s chunks)``: clips 1 and 2 streamed in chunks of 0.25 s (and clip 1 in one
  chunk of 16-bit samples, PCM_S16LE, compared with Score of the same 16-bit clip): a running score
  exactly where ``voxarena.streaming.score_due`` says, each with the request id, the chunk's sequence,
  its audio_seconds, a finite score and is_llr as declared; for a windowed service the scores at 1 s and
  at the end equal Score of the last window_seconds; ``timing fields (stream)``.
- ``stream final (...)``: after half-close one final score, equal to Score of the whole clip (or of its
  last window, as declared); ``stream under min_seconds rejected``.
- ``stream bad open (...)`` and ``stream bad chunk (...)``: each INVALID_ARGUMENT naming the request id,
  the service SERVING after it.
- ``stream slots freed (cancelled|client gone)``: 24 streams cancelled, then 24 whose channel closed,
  each after its first running score; then a stream and a Score are answered at once.
- ``stream slow reader``: 20 s in 0.1 s chunks with no score read for 2 s, then every score in order.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

import grpc
import numpy as np

from voxarena.codec import AudioClip, decode_audio, encode_audio
from voxarena.streaming import chunk_limit, declaration_problems, score_due, window_samples
from voxarena.v1 import common_pb2, detector_pb2, detector_pb2_grpc

from .evidence import close, describe_error

if TYPE_CHECKING:
    from .detector import DetectorChecks

REL_TOLERANCE = 1e-6
CHUNK_SECONDS = 0.25
SLOT_STREAMS = 24  # more than the SDK's default concurrency + queue (4 + 16): leaked slots would show
SLOW_READER = (20.0, 0.1, 2.0)  # seconds of audio, chunk seconds, seconds before the first read
_MODES = {detector_pb2.STREAMING_WINDOWED: "WINDOWED", detector_pb2.STREAMING_NATIVE: "NATIVE"}

Messages = list[detector_pb2.ScoreStreamRequest]


def opening(
    request_id: str,
    rate: int,
    parameters: dict[str, str] | None = None,
    encoding: common_pb2.AudioEncoding = common_pb2.PCM_F32LE,
) -> detector_pb2.ScoreStreamRequest:
    return detector_pb2.ScoreStreamRequest(
        open=detector_pb2.StreamOpen(
            request_id=request_id, sample_rate=rate, encoding=encoding, parameters=parameters or {}
        )
    )


def chunk(sequence: int, samples: np.ndarray, rate: int) -> detector_pb2.ScoreStreamRequest:
    """A chunk of float samples (PCM_F32LE), or of int16 ones (PCM_S16LE)."""
    x = np.asarray(samples) if np.asarray(samples).dtype == np.int16 else np.asarray(samples, np.float32)
    audio = encode_audio(AudioClip(x, rate))
    return detector_pb2.ScoreStreamRequest(chunk=detector_pb2.StreamChunk(sequence=sequence, audio=audio))


def chunked(request_id: str, clip: AudioClip, chunk_seconds: float) -> tuple[Messages, list[int]]:
    """The messages streaming ``clip`` (int16 samples as PCM_S16LE, others as PCM_F32LE) in chunks of
    ``chunk_seconds``, and the sample count after each chunk."""
    x, rate = clip.samples, clip.sample_rate
    encoding = common_pb2.PCM_S16LE if x.dtype == np.int16 else common_pb2.PCM_F32LE
    size = max(1, round(chunk_seconds * rate))
    starts = list(range(0, x.size, size))
    messages = [opening(request_id, rate, encoding=encoding)]
    messages += [chunk(i, x[s : s + size], rate) for i, s in enumerate(starts)]
    return messages, [min(s + size, x.size) for s in starts]


def as_int16(clip: AudioClip) -> AudioClip:
    return AudioClip(np.clip(np.round(clip.as_float32() * 32767), -32768, 32767).astype(np.int16), clip.sample_rate)


class StreamChecks:
    def __init__(self, checks: DetectorChecks) -> None:
        self.c, self.s = checks, checks.s
        info = checks.info
        self.streaming = info.streaming if info.HasField("streaming") else detector_pb2.StreamingInfo()
        self.mode = _MODES.get(self.streaming.mode, "")
        self.stub: detector_pb2_grpc.DetectorServiceStub = checks.stub

    def stream(self, messages: Messages, timeout: float | None = None) -> list[detector_pb2.StreamScore]:
        return list(self.stub.ScoreStream(iter(messages), timeout=timeout or self.s.timeout))

    def run(self) -> None:
        s, info, st = self.s, self.c.info, self.streaming
        if not self.mode:
            s.add("stream declared valid", True, "GetInfo", "no streaming declared")
            s.expect_error(
                "stream unimplemented when undeclared",
                lambda: self.stream(chunked("conformance-stream", self.clip(0), CHUNK_SECONDS)[0]),
                "ScoreStream of clip 1 to a service that declares no streaming",
                (grpc.StatusCode.UNIMPLEMENTED,),
            )
            return
        problems = declaration_problems(
            self.mode, st.window_seconds, st.hop_seconds, st.max_chunk_seconds, info.min_seconds, info.max_seconds
        )
        declared = (
            f"mode {self.mode}, window {st.window_seconds:g} s, hop {st.hop_seconds:g} s, "
            f"max chunk {st.max_chunk_seconds:g} s"
        )
        if not s.add("stream declared valid", not problems, "GetInfo", "; ".join(problems) or declared, "valid bounds"):
            return
        self.rate = self.clip(0).sample_rate
        for i in (0, 1):
            self.scores(i, min(CHUNK_SECONDS, st.max_chunk_seconds))
        if self.clip(0).duration <= st.max_chunk_seconds:
            self.scores(0, self.clip(0).duration, s16=True)
        self.bad_opens()
        self.bad_chunks()
        self.slots()
        self.slow_reader()

    def clip(self, i: int) -> AudioClip:
        return decode_audio(self.c.clips[i])

    def score_of(self, samples: np.ndarray, rate: int, request_id: str) -> float | None:
        req = detector_pb2.ScoreRequest(request_id=request_id, audio=encode_audio(AudioClip(samples, rate)))
        try:
            return float(self.c.score(req).score)
        except grpc.RpcError:
            return None

    # -- a good stream -------------------------------------------------------------------------------
    def scores(self, i: int, chunk_seconds: float, s16: bool = False) -> None:
        """Clip ``i`` streamed in chunks (int16 samples, PCM_S16LE, with ``s16``)."""
        s, st, info = self.s, self.streaming, self.c.info
        clip = as_int16(self.clip(i)) if s16 else self.clip(i)
        rid = f"conformance-stream-{i + 1}"
        case = f"clip {i + 1}, {chunk_seconds:g} s chunks" + (", PCM_S16LE" if s16 else "")
        messages, sizes = chunked(rid, clip, chunk_seconds)
        sent = f"ScoreStream {clip.duration:.2f} s at {clip.sample_rate} Hz in {len(sizes)} chunks, request_id {rid!r}"
        got = s.call_ok(f"stream scores ({case})", lambda: self.stream(messages), sent, record=False)
        if got is None:
            return
        rate = clip.sample_rate
        due = [
            (n, after)
            for n, (before, after) in enumerate(zip([0, *sizes], sizes))
            if score_due(before, after, rate, st.hop_seconds, info.min_seconds)
        ]
        running, finals = [r for r in got if not r.is_final], [r for r in got if r.is_final]
        problems = []
        came = [(r.sequence, round(r.audio_seconds * rate)) for r in running]
        if came != due:
            problems.append(f"running scores at (sequence, samples) {came}, due at {due}")
        for r in running:
            if r.request_id != rid or not math.isfinite(r.score) or r.is_llr != info.calibrated:
                problems.append(
                    f"sequence {r.sequence}: request_id {r.request_id!r}, score {r.score}, is_llr {r.is_llr}"
                )
        if self.mode == "WINDOWED" and info.model.deterministic:
            problems += self.windowed(clip, running, rid)
        s.add(
            f"stream scores ({case})",
            not problems,
            sent,
            "; ".join(problems[:3]) or f"{len(running)} running scores",
            f"a running score at each (sequence, samples) of {due}, ids echoed, finite, is_llr {info.calibrated}",
        )
        if running:
            s.timing(f"timing fields (stream, {case})", running[0].timing, info.model.timing_scope, sent, True)
        self.final(case, sent, clip, rid, finals, got, len(sizes) - 1)

    def windowed(self, clip: AudioClip, running: list[detector_pb2.StreamScore], rid: str) -> list[str]:
        """Running scores of a windowed service against Score of the last window (the first and the last)."""
        problems, x = [], clip.samples
        width = window_samples(self.streaming.window_seconds, clip.sample_rate)
        for r in {id(r): r for r in (running[:1] + running[-1:])}.values():
            end = round(r.audio_seconds * clip.sample_rate)
            single = self.score_of(x[max(0, end - width) : end], clip.sample_rate, f"{rid}-window")
            if single is None or not close(r.score, single, REL_TOLERANCE):
                problems.append(f"score at {r.audio_seconds:g} s {r.score}; Score of its last window {single}")
        return problems

    def final(
        self,
        case: str,
        sent: str,
        clip: AudioClip,
        rid: str,
        finals: list[detector_pb2.StreamScore],
        got: list[detector_pb2.StreamScore],
        last: int,
    ) -> None:
        name = f"stream final ({case})"
        if len(finals) != 1 or not got[-1].is_final:
            self.s.add(
                name,
                False,
                sent,
                f"{len(finals)} final scores, last message final={got[-1].is_final if got else None}",
                "one final score, last",
            )
            return
        f, x = finals[0], clip.samples
        if self.streaming.final_scope == detector_pb2.STREAM_FINAL_LAST_WINDOW:
            x = x[-window_samples(self.streaming.window_seconds, clip.sample_rate) :]
        expected = self.score_of(x, clip.sample_rate, f"{rid}-whole")
        problems = []
        if (f.request_id, f.sequence, round(f.audio_seconds * clip.sample_rate)) != (
            rid,
            last,
            x.size if self.streaming.final_scope != detector_pb2.STREAM_FINAL_LAST_WINDOW else clip.samples.size,
        ):
            problems.append(f"request_id {f.request_id!r}, sequence {f.sequence}, audio_seconds {f.audio_seconds:g}")
        if self.c.info.model.deterministic and (expected is None or not close(f.score, expected, REL_TOLERANCE)):
            problems.append(f"final score {f.score}, Score {expected}")
        self.s.add(
            name,
            not problems,
            sent,
            "; ".join(problems) or f"final score {f.score}",
            f"request_id {rid!r}, sequence {last}, {clip.duration:g} s, the score Score gives",
        )

    # -- bad streams ---------------------------------------------------------------------------------
    def expect_invalid(self, name: str, messages: Messages, sent: str, rid: str) -> None:
        """The stream must end INVALID_ARGUMENT naming ``rid`` (when it has one), the service SERVING after."""
        s = self.s
        try:
            self.stream(messages)
        except grpc.RpcError as e:
            code = e.code() if hasattr(e, "code") else grpc.StatusCode.UNKNOWN
            details = e.details() if hasattr(e, "details") else ""
            ok = code == grpc.StatusCode.INVALID_ARGUMENT and (not rid or rid in (details or ""))
            s.add(name, ok, sent, describe_error(e), f"INVALID_ARGUMENT naming {rid!r}" if rid else "INVALID_ARGUMENT")
        else:
            s.add(name, False, sent, "the stream ended OK", "INVALID_ARGUMENT")
        s.after_bad_input(name, sent)

    def bad_opens(self) -> None:
        x, rate, rid = self.clip(0).as_float32(), self.rate, "conformance-stream-bad-open"
        good = chunk(0, x[: rate // 4], rate)
        rates = sorted(self.c.info.sample_rates)
        cases: list[tuple[str, Messages, str]] = [
            ("a chunk first", [good], ""),
            ("empty request_id", [opening("", rate), good], ""),
            ("1 Hz", [opening(rid, 1), good], rid),
            ("unknown option", [opening(rid, rate, {"conformance-unknown-option": "1"}), good], rid),
        ]
        if rates:
            other = next(r for r in (8000, 11025, 16000, 22050, 24000, 32000, 44100, 48000, 7999) if r not in rates)
            cases.append((f"{other} Hz outside sample_rates", [opening(rid, other)], rid))
        for label, messages, named in cases:
            self.expect_invalid(f"stream bad open ({label})", messages, f"ScoreStream opened with {label}", named)

    def bad_chunks(self) -> None:
        st, rate, rid = self.streaming, self.rate, "conformance-stream-bad-chunk"
        x = self.clip(0).as_float32()
        piece = x[: rate // 4]
        head = [opening(rid, rate), chunk(0, piece, rate)]
        other_rate = next(r for r in (8000, 16000, 22050) if r != rate)
        nan = piece.copy()
        nan[3] = np.nan
        too_long = np.resize(x, chunk_limit(st.max_chunk_seconds, rate) + 1)
        cases: list[tuple[str, Messages]] = [
            ("gap", [*head, chunk(2, piece, rate)]),
            ("duplicate", [*head, chunk(0, piece, rate)]),
            ("second open", [*head, opening(rid, rate)]),
            ("format change", [*head, chunk(1, np.resize(piece, other_rate // 4), other_rate)]),
            ("NaN samples", [*head, chunk(1, nan, rate)]),
            (
                "empty",
                [
                    *head,
                    detector_pb2.ScoreStreamRequest(
                        chunk=detector_pb2.StreamChunk(
                            sequence=1,
                            audio=common_pb2.Audio(sample_rate=rate, channels=1, encoding=common_pb2.PCM_F32LE),
                        )
                    ),
                ],
            ),
            (f"over max_chunk_seconds {st.max_chunk_seconds:g}", [*head, chunk(1, too_long, rate)]),
        ]
        max_seconds = self.c.info.max_seconds
        if max_seconds > 0 and max_seconds * rate * 4 < 256 * 2**20:
            size = chunk_limit(st.max_chunk_seconds, rate)
            total, n, messages = math.floor(max_seconds * rate), 0, [opening(rid, rate)]
            block = np.resize(x, size)
            while total > 0:
                messages.append(chunk(n, block[: min(size, total)], rate))
                total, n = total - min(size, total), n + 1
            messages.append(chunk(n, piece, rate))
            cases.append((f"past max_seconds {max_seconds:g}", messages))
        for label, messages in cases:
            self.expect_invalid(f"stream bad chunk ({label})", messages, f"ScoreStream with a chunk: {label}", rid)
        short = math.ceil(self.c.info.min_seconds * rate) - 1
        if short >= 1:
            self.expect_invalid(
                "stream under min_seconds rejected",
                [opening(rid, rate), chunk(0, x[:short], rate)],
                f"ScoreStream of {short} samples in all (min_seconds {self.c.info.min_seconds:g})",
                rid,
            )

    # -- slots and flow control ----------------------------------------------------------------------
    def first_score_then(self, rid: str, channel: grpc.Channel, leave: str) -> str | None:
        """Opens a stream that sends one hop of audio then waits; after its first score, ``leave``s it
        ("cancel" the call, or "close" its channel). A problem, or None."""
        rate, hop = self.rate, self.streaming.hop_seconds
        x = np.resize(self.clip(0).as_float32(), max(round(hop * rate), math.ceil(self.c.info.min_seconds * rate)))
        stop = threading.Event()

        def messages() -> Iterator[detector_pb2.ScoreStreamRequest]:
            yield opening(rid, rate)
            yield chunk(0, x, rate)
            stop.wait(self.s.timeout)  # an open stream, its client silent

        call = detector_pb2_grpc.DetectorServiceStub(channel).ScoreStream(messages(), timeout=self.s.timeout)
        try:
            next(call)
        except grpc.RpcError as e:
            stop.set()
            return f"{rid}: {describe_error(e)}"
        if leave == "cancel":
            call.cancel()
        else:
            channel.close()
        stop.set()
        return None

    def slots(self) -> None:
        for leave, label in (("cancel", "cancelled"), ("close", "client gone")):
            name = f"stream slots freed ({label})"
            opener = self.s.open_channel
            if leave == "close" and opener is None:
                self.s.skip(name, "this session cannot open another channel to the service (no open_channel)")
                continue
            sent = (
                f"{SLOT_STREAMS} streams, each left ({'call cancelled' if leave == 'cancel' else 'its channel closed'})"
                " after its first running score; then one stream and one Score"
            )
            problems = []
            for k in range(SLOT_STREAMS):
                channel = self.s.channel if opener is None or leave == "cancel" else opener()
                problem = self.first_score_then(f"conformance-stream-slot-{k}", channel, leave)
                if problem:
                    problems.append(problem)
                    break
            if not problems:
                time.sleep(0.5)  # the server hears of the last cancellation
                messages, _ = chunked("conformance-stream-after-slots", self.clip(1), CHUNK_SECONDS)
                try:
                    self.stream(messages, timeout=min(self.s.timeout, 60))
                except grpc.RpcError as e:
                    problems.append(f"the stream after them: {describe_error(e)}")
                if self.score_of(self.clip(1).as_float32(), self.rate, "conformance-after-slots") is None:
                    problems.append("the Score after them failed")
            self.s.add(name, not problems, sent, "; ".join(problems) or "both answered", "both answered at once")

    def slow_reader(self) -> None:
        seconds, chunk_seconds, wait = SLOW_READER
        rate, rid = self.rate, "conformance-stream-slow-reader"
        clip = AudioClip(np.resize(self.clip(0).as_float32(), round(seconds * rate)), rate)
        messages, sizes = chunked(rid, clip, min(chunk_seconds, self.streaming.max_chunk_seconds))
        st, min_seconds = self.streaming, self.c.info.min_seconds
        due = [
            n for n, (b, a) in enumerate(zip([0, *sizes], sizes)) if score_due(b, a, rate, st.hop_seconds, min_seconds)
        ]
        sent = (
            f"ScoreStream of {seconds:g} s in {len(sizes)} chunks of {chunk_seconds:g} s, no score read for {wait:g} s"
        )
        name = "stream slow reader"
        try:
            call = self.stub.ScoreStream(iter(messages), timeout=self.s.timeout)
            time.sleep(wait)
            got = list(call)
        except grpc.RpcError as e:
            self.s.add(name, False, sent, describe_error(e), "every score, in order")
            return
        sequences = [r.sequence for r in got if not r.is_final]
        ok = sequences == due and len(got) == len(due) + 1 and got[-1].is_final
        self.s.add(
            name,
            ok,
            sent,
            f"{len(sequences)} running scores and {len(got) - len(sequences)} final",
            f"{len(due)} running scores at sequences {due[:3]}..., then the final",
        )

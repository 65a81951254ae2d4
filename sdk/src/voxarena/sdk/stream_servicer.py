"""ScoreStream, the detector's streaming call: the stream's rules (detector.proto, [detector.stream-*]) and
the model's side of a stream.

Every detector streams. ``DetectorStream`` is one stream's state inside a model: the SDK pushes each
chunk's samples and asks for a running score when one is due (``voxarena.streaming.score_due``), and the
final score after half-close. The default, ``WindowedStream``, turns any ``score_batch`` model into a
causal sliding window (the last ``stream_window_seconds`` seen); a model with incremental scoring sets
``stream_mode = "NATIVE"`` and returns its own ``DetectorStream`` from ``open_stream``. The SDK keeps the
stream's audio (at most ``max_seconds`` of it) so that the final score can be the whole clip's.

A stream holds one admission slot from its open to its end (voxarena.sdk.admission, via the interceptor);
gRPC's flow control stops the request stream while scores wait unread, so a slow reader costs no memory.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import numpy as np

from voxarena.codec import MAX_SAMPLE_RATE, MIN_SAMPLE_RATE, AudioClip, AudioFormatError, decode_audio
from voxarena.streaming import chunk_limit, score_due, window_samples
from voxarena.v1 import common_pb2, detector_pb2

from .errors import InvalidArgument, ServiceError

if TYPE_CHECKING:
    from .model import DetectorModel
    from .servicers import Stopwatch

_ENCODINGS = (common_pb2.PCM_S16LE, common_pb2.PCM_F32LE)


class AudioBuffer:
    """The samples of one stream, appended chunk by chunk (amortised doubling, float32)."""

    def __init__(self) -> None:
        self._data = np.zeros(0, dtype=np.float32)
        self.size = 0

    def extend(self, samples: np.ndarray) -> None:
        need = self.size + samples.size
        if need > self._data.size:
            grown = np.zeros(max(need, 2 * self._data.size, 16000), dtype=np.float32)
            grown[: self.size] = self._data[: self.size]
            self._data = grown
        self._data[self.size : need] = samples
        self.size = need

    def view(self, last: int | None = None) -> np.ndarray:
        """The samples so far, or the ``last`` ones (a view: copy before keeping it)."""
        start = 0 if last is None else max(0, self.size - last)
        return self._data[start : self.size]


class DetectorStream:
    """One stream inside a model. ``audio`` holds what came so far (kept by the SDK); a native stream
    overrides ``extend`` (its incremental work on new samples), ``running`` and, when it has its own,
    ``final``. Scores are the model's own (the SDK applies the calibration)."""

    def __init__(self, model: DetectorModel, sample_rate: int, options: dict[str, str]) -> None:
        self.model, self.sample_rate, self.options = model, sample_rate, options
        self.audio = AudioBuffer()

    def push(self, samples: np.ndarray) -> None:
        self.audio.extend(samples)
        self.extend(samples)

    def extend(self, samples: np.ndarray) -> None:
        """Incremental work on the newest samples (already in ``audio``); nothing by default."""

    def clip(self, last: int | None = None) -> AudioClip:
        return AudioClip(self.audio.view(last).copy(), self.sample_rate)

    def model_score(self, clip: AudioClip) -> float:
        """The model's score (before calibration) of one clip with this stream's options."""
        return self.model.model_scores([clip], [self.options])[0]

    def running(self) -> float:
        raise NotImplementedError(f"{self.model.name}: a native stream defines running()")

    def final(self) -> float:
        """The score after half-close: the whole clip's (STREAM_FINAL_WHOLE_CLIP)."""
        return self.model_score(self.clip())


class WindowedStream(DetectorStream):
    """Any utterance-level model as a causal sliding window: each running score is the model's score of
    the last ``stream_window_seconds`` seen."""

    def running(self) -> float:
        return self.model_score(self.clip(window_samples(self.model.stream_bounds()[0], self.sample_rate)))


class StreamSession:
    """One ScoreStream call: checks each message against the stream's rules, feeds the model's stream,
    and says what to send back."""

    def __init__(self, model: DetectorModel, stopwatch: type[Stopwatch]) -> None:
        self.model, self.stopwatch = model, stopwatch
        self.request_id = ""
        self.stream: DetectorStream | None = None
        self.open: detector_pb2.StreamOpen | None = None
        self.sequence = -1  # the last chunk taken

    def fail(self, why: str) -> InvalidArgument:
        who = self.request_id or "stream"
        return InvalidArgument(f"{who}: {why}")

    def scores(self, messages: Iterator[Any]) -> Iterator[detector_pb2.StreamScore]:
        """The running scores the messages bring, then the final one."""
        for index, message in enumerate(messages):
            if not isinstance(message, detector_pb2.ScoreStreamRequest):  # an UndecodableRequest
                raise self.fail(f"message {index} does not parse: {getattr(message, 'reason', message)}")
            kind = message.WhichOneof("message")
            if self.open is None:
                if kind != "open":
                    raise self.fail(f"the first message must be an open, got {kind or 'an empty message'}")
                self.start(message.open)
                continue
            if kind != "chunk":
                raise self.fail(f"after the open only chunks may come, got {kind or 'an empty message'}")
            score = self.take(message.chunk)
            if score is not None:
                yield score
        yield self.finish()

    def start(self, opened: detector_pb2.StreamOpen) -> None:
        m = self.model
        self.request_id = opened.request_id
        if not opened.request_id:
            raise InvalidArgument("stream: request_id is empty")
        if opened.encoding not in _ENCODINGS:
            raise self.fail(f"open: encoding {opened.encoding} is not PCM_S16LE (1) or PCM_F32LE (2)")
        if not MIN_SAMPLE_RATE <= opened.sample_rate <= MAX_SAMPLE_RATE:
            raise self.fail(
                f"open: sample_rate {opened.sample_rate} Hz is outside [{MIN_SAMPLE_RATE}, {MAX_SAMPLE_RATE}] Hz"
            )
        if m.sample_rates and opened.sample_rate not in m.sample_rates:
            rates = ", ".join(str(r) for r in sorted(m.sample_rates))
            raise self.fail(f"open: audio at {opened.sample_rate} Hz; {m.name} accepts {rates} Hz")
        try:
            options = m.resolve_options(dict(opened.parameters))
        except ServiceError as e:
            raise self.fail(f"open: {e}") from None
        self.open = opened
        self.stream = m.open_stream(opened.sample_rate, options)

    def take(self, chunk: detector_pb2.StreamChunk) -> detector_pb2.StreamScore | None:
        m, opened, stream = self.model, self.open, self.stream
        assert opened is not None and stream is not None
        where = f"chunk {chunk.sequence}"
        if chunk.sequence != self.sequence + 1:
            raise self.fail(f"{where}: expected sequence {self.sequence + 1} (chunks are numbered 0, 1, 2, ...)")
        audio = chunk.audio
        if (audio.sample_rate, audio.encoding, audio.channels) != (opened.sample_rate, opened.encoding, 1):
            raise self.fail(
                f"{where}: audio at {audio.sample_rate} Hz, encoding {audio.encoding}, {audio.channels} channel(s); "
                f"the stream was opened at {opened.sample_rate} Hz, encoding {opened.encoding}, 1 channel"
            )
        rate = opened.sample_rate
        _, hop, max_chunk = m.stream_bounds()
        try:
            samples = decode_audio(audio, where, max_seconds=chunk_limit(max_chunk, rate) / rate)
        except AudioFormatError as e:
            raise self.fail(str(e)) from None
        before = stream.audio.size
        after = before + samples.samples.size
        if after > m.max_seconds * rate:
            raise self.fail(
                f"{where}: the stream reaches {after / rate:.2f} s; {m.name} scores at most {m.max_seconds:g} s"
            )
        self.sequence = chunk.sequence
        due = score_due(before, after, rate, hop, m.min_seconds)
        with self.stopwatch(m.timing_scope) as sw:
            stream.push(samples.as_float32())  # int16 chunks as floats in [-1, 1], as Score reads them
            score = m.served(stream.running()) if due else None
        if score is None:
            return None
        return self.answer(score, after, sw, final=False)

    def finish(self) -> detector_pb2.StreamScore:
        m, stream = self.model, self.stream
        if stream is None:
            raise self.fail("the stream ended before its open")
        n = stream.audio.size
        if n == 0:
            raise self.fail("the stream ended with no audio")
        rate = stream.sample_rate
        if n < m.min_seconds * rate:
            raise self.fail(f"the stream holds {n / rate:.4f} s of audio; {m.name} needs at least {m.min_seconds:g} s")
        with self.stopwatch(m.timing_scope) as sw:
            score = m.served(stream.final())
        return self.answer(score, n, sw, final=True)

    def answer(self, score: float, samples: int, sw: Stopwatch, final: bool) -> detector_pb2.StreamScore:
        if not np.isfinite(score):
            raise ValueError(f"{self.model.name}: stream score {score} is not finite")
        assert self.stream is not None
        return detector_pb2.StreamScore(
            request_id=self.request_id,
            sequence=self.sequence,
            audio_seconds=samples / self.stream.sample_rate,
            score=float(score),
            is_llr=self.model.serves_llr,
            is_final=final,
            timing=sw.to_proto(),
        )

"""Streamed detection in a run (``protocol.streaming``): every clip the detection stage scores on the clean
channel at its first iteration is also streamed to each detector that streams (``ScoreStream``), in chunks
of ``chunk_seconds``, paced in real time (chunk k sent ``k x chunk_seconds`` after the first: a live call)
or as fast as the service takes them.

The row (``streams.jsonl``, ``StreamRecord``) keeps each running score with the audio time it covers, the
time it arrived after its chunk was sent (the latency a live caller sees) and the service's own timing, and
the final score. Every response is checked as the contract says (its request id, sequence, audio time,
finite score); a stream that breaks off is a failed row of its kind, retried like any transient failure.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import numpy as np

from voxarena.codec import AudioClip, AudioFormatError, encode_audio
from voxarena.orchestrator.errors import CallFailed, RunError
from voxarena.orchestrator.fleet.clients import call_with_retry
from voxarena.orchestrator.fleet.fleet import Service, ServiceFleet
from voxarena.orchestrator.run.degrade import ConditionFailed, Degrade
from voxarena.orchestrator.run.streaming_config import StreamingConfig
from voxarena.orchestrator.run.validation import ResponseInvalid
from voxarena.orchestrator.store.clips import Clip
from voxarena.orchestrator.store.failures import Failure, call_failed_row, failed_row
from voxarena.orchestrator.store.records import OK, StreamRecord
from voxarena.orchestrator.store.run_store import CLEAN, RunStore, stream_id
from voxarena.streaming import score_due
from voxarena.v1 import detector_pb2


def streams(svc: Service) -> bool:
    """Whether a detector declares streaming."""
    info = svc.role_info(detector_pb2.DetectorInfo)
    return info.HasField("streaming") and info.streaming.mode != detector_pb2.STREAMING_MODE_UNSPECIFIED


def chunks(request_id: str, audio: AudioClip, seconds: float) -> list[detector_pb2.ScoreStreamRequest]:
    """The open and the chunks of one stream, in the clip's own format."""
    x, rate = np.asarray(audio.samples), audio.sample_rate
    size = max(1, round(seconds * rate))
    first = encode_audio(AudioClip(x[:1], rate))
    out = [
        detector_pb2.ScoreStreamRequest(
            open=detector_pb2.StreamOpen(request_id=request_id, sample_rate=rate, encoding=first.encoding)
        )
    ]
    for k, start in enumerate(range(0, x.size, size)):
        piece = encode_audio(AudioClip(x[start : start + size], rate))
        out.append(detector_pb2.ScoreStreamRequest(chunk=detector_pb2.StreamChunk(sequence=k, audio=piece)))
    return out


class PacedCall:
    """One ScoreStream call: sends the chunks (paced), and notes when each was sent and each score came."""

    def __init__(self, stub_method, pacing: str, chunk_seconds: float) -> None:  # type: ignore[no-untyped-def]
        self.method, self.pacing, self.chunk_seconds = stub_method, pacing, chunk_seconds

    def __call__(self, messages: list[detector_pb2.ScoreStreamRequest], timeout: float) -> list[tuple]:
        sent: dict[int, float] = {}
        t0 = time.perf_counter()

        def paced() -> Iterator[detector_pb2.ScoreStreamRequest]:
            for m in messages:
                if m.WhichOneof("message") == "chunk":
                    k = m.chunk.sequence
                    if self.pacing == "realtime":
                        time.sleep(max(0.0, t0 + k * self.chunk_seconds - time.perf_counter()))
                    sent[k] = time.perf_counter()
                yield m

        got = []
        for r in self.method(paced(), timeout=timeout):
            got.append((r, time.perf_counter() - sent.get(r.sequence, t0)))
        return got


class Stream:
    """The streaming stage: one stream per (detector, clip), its row in ``streams.jsonl``."""

    def __init__(self, store: RunStore, fleet: ServiceFleet, degrade: Degrade, cfg: StreamingConfig) -> None:
        self.store, self.fleet, self.degrade, self.cfg = store, fleet, degrade, cfg

    def __call__(self, detector: str, clips: list[Clip]) -> list[StreamRecord]:
        rows = []
        for c in clips:
            base = StreamRecord(
                id=stream_id(detector, c.id), status="pending", detector=detector, clip=c.id, kind=c.kind, **c.origin()
            )
            base.chunk_seconds, base.pacing = self.cfg.chunk_seconds, self.cfg.pacing
            try:
                audio = self.degrade(c, CLEAN)
            except ConditionFailed as e:
                row = failed_row(base, e.failure, str(e), e.code)
            except (AudioFormatError, OSError) as e:
                row = failed_row(base, Failure.INPUT, str(e))
            else:
                row = self._stream(self.fleet[detector], base, audio)
            self.store.streams.append(row)
            rows.append(row)
        return rows

    def _stream(self, svc: Service, base: StreamRecord, audio: AudioClip) -> StreamRecord:
        client = svc.client
        if client is None:
            raise RunError(f"{svc.name}: ScoreStream called before the fleet connected to it")
        messages = chunks(base.id, audio, self.cfg.chunk_seconds)
        call = PacedCall(client.stub.ScoreStream, self.cfg.pacing, self.cfg.chunk_seconds)
        deadline = client.deadline + (audio.duration if self.cfg.pacing == "realtime" else 0.0)
        try:
            got, _ = call_with_retry(call, messages, deadline, client.retries, client.backoff, client.outage)
            checked(base, got, audio, self.cfg.chunk_seconds, svc.role_info(detector_pb2.DetectorInfo))
        except CallFailed as e:
            return call_failed_row(base, e)
        except ResponseInvalid as e:
            return failed_row(base, Failure.INVALID_RESPONSE, str(e))
        base.status = OK
        return base


def checked(
    base: StreamRecord, got: list[tuple], audio: AudioClip, chunk_seconds: float, info: detector_pb2.DetectorInfo
) -> None:
    """Fills ``base`` from the stream's answers, checked as the contract says; ResponseInvalid otherwise."""
    rate, n = audio.sample_rate, audio.samples.size
    size = max(1, round(chunk_seconds * rate))
    ends = [min(s + size, n) for s in range(0, n, size)]
    due = [
        k
        for k, (b, a) in enumerate(zip([0, *ends], ends))
        if score_due(b, a, rate, info.streaming.hop_seconds, info.min_seconds)
    ]
    running = [(r, latency) for r, latency in got if not r.is_final]
    finals = [r for r, _ in got if r.is_final]
    where = f"{base.clip}: stream to {base.detector}"
    if [r.sequence for r, _ in running] != due:
        raise ResponseInvalid(
            f"{where}: running scores at chunks {[r.sequence for r, _ in running][:8]}, due at {due[:8]}"
        )
    if len(finals) != 1 or not got[-1][0].is_final:
        raise ResponseInvalid(
            f"{where}: {len(finals)} final scores, the last message final={got[-1][0].is_final if got else None}"
        )
    for r, _ in got:
        if r.request_id != base.id or not math.isfinite(r.score):
            raise ResponseInvalid(f"{where}: sequence {r.sequence}: request_id {r.request_id!r}, score {r.score}")
        expected = ends[r.sequence] / rate
        if abs(r.audio_seconds - expected) > 0.5 / rate:
            raise ResponseInvalid(f"{where}: sequence {r.sequence}: audio_seconds {r.audio_seconds}, sent {expected}")
    base.scores = [
        {
            "audio_seconds": r.audio_seconds,
            "score": r.score,
            "latency_seconds": latency,
            "wall_seconds": r.timing.wall_seconds,
        }
        for r, latency in running
    ]
    final = finals[0]
    base.final_score, base.is_llr = final.score, final.is_llr
    base.audio_seconds = final.audio_seconds
    base.wall_seconds = sum(r.timing.wall_seconds for r, _ in got)

"""Segment scores for localisation: in a run that makes partial fakes, every detector scores the partial
fakes and the bona fide clips segment by segment as well as whole.

- A detector that declares ``DetectorInfo.segment_hop_seconds`` is asked for its own (``want_segments``);
  its answer is checked as the contract says (the hop it declared, ``segment_count`` finite scores),
  anything else an invalid response.
- Any other detector, black boxes included, gets segment scores derived by sliding windows through the
  ordinary ``ScoreBatch``: for each hop of ``window_hop_seconds``, the score of the ``window_seconds`` of
  audio centred on it (shifted inside the clip at its ends; the whole clip when it is shorter), in batches
  of the detector's ``max_batch_size``. An honest baseline: the cost is one window per hop.

The row keeps them as ``segments``: ``{"hop_seconds", "scores", "source": "native" | "windows"}`` (with
``window_seconds`` for windows).
"""

from __future__ import annotations

import math

import numpy as np

from voxarena.codec import AudioClip, encode_audio
from voxarena.orchestrator.fleet.fleet import Service
from voxarena.orchestrator.run.partial import PartialConfig, is_partial
from voxarena.orchestrator.run.validation import ResponseInvalid
from voxarena.segments import segment_count
from voxarena.v1 import detector_pb2


def wanted(cfg: PartialConfig | None, kind: str, task: str) -> bool:
    """Whether a clip is scored by segments: in a run with partial fakes, its partial fakes and bona fide clips."""
    return cfg is not None and (kind == "bonafide" or is_partial(task))


def native_hop(svc: Service) -> float:
    return float(svc.role_info(detector_pb2.DetectorInfo).segment_hop_seconds)


def checked_native(clip_id: str, result: detector_pb2.ScoreResponse, audio: AudioClip, hop: float) -> dict:
    """A detector's own segment scores of ``audio``, as the contract asks them; ResponseInvalid otherwise."""
    n = segment_count(audio.samples.size, audio.sample_rate, hop)
    if not result.HasField("segments"):
        raise ResponseInvalid(f"{clip_id}: asked for segment scores (segment_hop_seconds {hop:g}), none came")
    seg = result.segments
    if seg.hop_seconds != hop or len(seg.scores) != n:
        raise ResponseInvalid(
            f"{clip_id}: {len(seg.scores)} segment scores at {seg.hop_seconds:g} s; the clip of "
            f"{audio.samples.size} samples at {audio.sample_rate} Hz has {n} at the declared {hop:g} s"
        )
    scores = [float(x) for x in seg.scores]
    if not all(math.isfinite(x) for x in scores):
        raise ResponseInvalid(f"{clip_id}: a segment score is not finite")
    return {"hop_seconds": hop, "scores": scores, "source": "native"}


def window_bounds(samples: int, rate: int, hop: float, window: float) -> list[tuple[int, int]]:
    """[start, end) of the window centred on each hop of a clip (shifted inside it; the clip when shorter)."""
    width = min(int(round(window * rate)), samples)
    out = []
    for i in range(segment_count(samples, rate, hop)):
        centre = int(round((i + 0.5) * hop * rate))
        start = min(max(centre - width // 2, 0), samples - width)
        out.append((start, start + width))
    return out


def derived(
    clip_id: str, svc: Service, request: detector_pb2.ScoreRequest, audio: AudioClip, cfg: PartialConfig
) -> dict:
    """Segment scores of ``audio`` from sliding windows scored through ScoreBatch (CallFailed, ResponseInvalid)."""
    info = svc.role_info(detector_pb2.DetectorInfo)
    hop, window = cfg.window_hop_seconds, cfg.window_seconds
    x = np.asarray(audio.samples)
    windows = [
        detector_pb2.ScoreRequest(
            request_id=f"{request.request_id}#w{k}",
            audio=encode_audio(AudioClip(x[a:b], audio.sample_rate)),
            parameters=request.parameters,
        )
        for k, (a, b) in enumerate(window_bounds(x.size, audio.sample_rate, hop, window))
    ]
    batch = max(1, int(info.max_batch_size))
    scores: list[float] = []
    for first in range(0, len(windows), batch):
        chunk = windows[first : first + batch]
        resp, _ = svc.call("ScoreBatch", detector_pb2.ScoreBatchRequest(items=chunk))
        if len(resp.items) != len(chunk):
            raise ResponseInvalid(f"{clip_id}: a window batch answered {len(resp.items)} items for {len(chunk)}")
        for sent, got in zip(chunk, resp.items):
            if got.HasField("error") or not math.isfinite(got.result.score):
                why = got.error.message if got.HasField("error") else f"score {got.result.score}"
                raise ResponseInvalid(f"{clip_id}: window {sent.request_id}: {why}")
            scores.append(float(got.result.score))
    return {"hop_seconds": hop, "scores": scores, "source": "windows", "window_seconds": window}

"""The detector checks of segment scores (partial fakes): ``segment hop valid`` (DetectorInfo's
segment_hop_seconds is 0 or within [0.001, 10] s), ``segment scores (clip N, Score|ScoreBatch)`` (asked
for, a service with a hop answers ceil(samples / (hop x rate)) finite scores at its hop, and the same
utterance score as without them) and ``segment scores absent when not asked`` (SHOULD)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from voxarena.codec import decode_audio
from voxarena.segments import segment_count, valid_hop
from voxarena.v1 import detector_pb2

from .evidence import close, describe_audio

if TYPE_CHECKING:
    from .detector import DetectorChecks

REL_TOLERANCE = 1e-6


def sent_of(req: detector_pb2.ScoreRequest) -> str:
    return f"audio={describe_audio(req.audio)} request_id={req.request_id!r} want_segments={req.want_segments}"


class SegmentChecks:
    def __init__(self, checks: DetectorChecks) -> None:
        self.c, self.s = checks, checks.s
        self.hop = checks.info.segment_hop_seconds

    def run(self, singles: list[float] | None) -> None:
        """``singles``: each probe clip's Score without segments (None when a Score failed)."""
        s, hop = self.s, self.hop
        s.add("segment hop valid", valid_hop(hop), "GetInfo", f"segment_hop_seconds {hop:g}", "0 or 0.001..10 s")
        asked = [
            detector_pb2.ScoreRequest(request_id=f"conformance-segments-{i}", audio=a, want_segments=True)
            for i, a in enumerate(self.c.clips, 1)
        ]
        if hop <= 0:
            s.skip("segment scores", "segment_hop_seconds is 0: the service declares no segment scores")
        elif singles is None or not valid_hop(hop):
            s.skip("segment scores", "needs a valid hop and a Score of each clip alone (see 'answers')")
        else:
            for i, (req, single) in enumerate(zip(asked, singles), 1):
                name = f"segment scores (clip {i}, Score)"
                resp = s.call_ok(name, partial(self.c.score, req), f"Score {sent_of(req)}", record=False)
                if resp is not None:
                    self.answer(f"clip {i}, Score", req, resp, single)
            if len(asked) <= self.c.info.max_batch_size:
                sent = "ScoreBatch of " + "; ".join(sent_of(r) for r in asked)
                batch = s.call_ok("segment scores (ScoreBatch)", lambda: self.c.batch(asked), sent, record=False)
                for i, (req, item) in enumerate(zip(asked, batch.items if batch else []), 1):
                    self.answer(f"clip {i}, ScoreBatch", req, item.result, None)  # Score == ScoreBatch: its own check
        self.absent_unless_asked(asked[0])

    def answer(
        self, case: str, req: detector_pb2.ScoreRequest, resp: detector_pb2.ScoreResponse, single: float | None
    ) -> None:
        """Segments as the contract asks; with ``single``, the utterance score of the same Score without them."""
        clip = decode_audio(req.audio)
        n = segment_count(clip.samples.size, clip.sample_rate, self.hop)
        problems = []
        if not resp.HasField("segments"):
            problems.append("no segments")
        else:
            seg = resp.segments
            if seg.hop_seconds != self.hop:
                problems.append(f"hop_seconds {seg.hop_seconds:g}, declared {self.hop:g}")
            if len(seg.scores) != n:
                problems.append(
                    f"{len(seg.scores)} scores, {n} for {clip.samples.size} samples at {clip.sample_rate} Hz"
                )
            if not np.all(np.isfinite(np.asarray(seg.scores, dtype=np.float64))):
                problems.append("a score is not finite")
        deterministic = self.c.info.model.deterministic
        if single is not None and deterministic and not close(resp.score, single, REL_TOLERANCE):
            problems.append(f"utterance score {resp.score}, {single} without segments")
        self.s.add(
            f"segment scores ({case})",
            not problems,
            sent_of(req),
            "; ".join(problems) or f"{n} finite scores at {self.hop:g} s and the same utterance score",
            f"hop {self.hop:g} s, {n} finite scores, the utterance score of the request without segments",
        )

    def absent_unless_asked(self, asked: detector_pb2.ScoreRequest) -> None:
        """No segments come back unasked from a service with a hop, nor asked from one without."""
        req = detector_pb2.ScoreRequest()
        req.CopyFrom(asked)
        req.want_segments = self.hop <= 0
        name = "segment scores absent when not asked"
        sent = f"Score {sent_of(req)}"
        resp = self.s.call_ok(name, lambda: self.c.score(req), sent, record=False)
        if resp is not None:
            self.s.add(name, not resp.HasField("segments"), sent, f"segments present: {resp.HasField('segments')}")

"""The detector checks of source tracing: ``attribution spec valid`` (DetectorInfo's levels and labels),
``attribution (clip N)`` (asked, a service that declares attribution answers every declared level with
exactly its labels, probabilities in [0, 1] summing to 1, and the score it gives without it) and
``attribution absent when not asked`` (SHOULD)."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from voxarena.attribution import answer_problems, spec_problems
from voxarena.v1 import detector_pb2

from .evidence import close, describe_audio

if TYPE_CHECKING:
    from .detector import DetectorChecks

REL_TOLERANCE = 1e-6


def sent_of(req: detector_pb2.ScoreRequest) -> str:
    return (
        f"Score audio={describe_audio(req.audio)} request_id={req.request_id!r} want_attribution={req.want_attribution}"
    )


class AttributionChecks:
    def __init__(self, checks: DetectorChecks) -> None:
        self.c, self.s = checks, checks.s
        self.levels = [(a.level, list(a.labels)) for a in checks.info.attribution]

    def run(self, singles: list[float] | None) -> None:
        """``singles``: each probe clip's Score without attribution (None when a Score failed)."""
        s, problems = self.s, spec_problems(self.levels)
        s.add(
            "attribution spec valid", not problems, "GetInfo", "; ".join(problems) or f"{self.levels}", "valid levels"
        )
        asked = [
            detector_pb2.ScoreRequest(request_id=f"conformance-attribution-{i}", audio=a, want_attribution=True)
            for i, a in enumerate(self.c.clips, 1)
        ]
        if not self.levels:
            s.skip("attribution", "DetectorInfo.attribution is empty: the service declares no source tracing")
        elif singles is None or problems:
            s.skip("attribution", "needs a valid declaration and a Score of each clip alone (see 'answers')")
        else:
            for i, (req, single) in enumerate(zip(asked, singles), 1):
                resp = s.call_ok(f"attribution (clip {i})", partial(self.c.score, req), sent_of(req), record=False)
                if resp is not None:
                    self.answer(f"attribution (clip {i})", req, resp, single)
        self.absent_unless_asked(asked[0])

    def answer(
        self, name: str, req: detector_pb2.ScoreRequest, resp: detector_pb2.ScoreResponse, single: float
    ) -> None:
        problems = answer_problems(self.levels, [(a.level, dict(a.probabilities)) for a in resp.attribution])
        if self.c.info.model.deterministic and not close(resp.score, single, REL_TOLERANCE):
            problems.append(f"score {resp.score}, {single} without attribution")
        self.s.add(
            name,
            not problems,
            sent_of(req),
            "; ".join(problems) or f"{len(resp.attribution)} levels, each summing to 1",
            "every declared level with exactly its labels, probabilities in [0, 1] summing to 1, the same score",
        )

    def absent_unless_asked(self, asked: detector_pb2.ScoreRequest) -> None:
        """No attribution comes back unasked from a tracer, nor asked from a service that declares none."""
        req = detector_pb2.ScoreRequest()
        req.CopyFrom(asked)
        req.want_attribution = not self.levels
        name = "attribution absent when not asked"
        resp = self.s.call_ok(name, partial(self.c.score, req), sent_of(req), record=False)
        if resp is not None:
            self.s.add(name, not resp.attribution, sent_of(req), f"{len(resp.attribution)} levels answered")

"""Source tracing in a run: a detector that declares ``DetectorInfo.attribution`` is asked, for every clip it
scores, which system made it (``want_attribution``); its answer is checked as the contract says
(``voxarena.attribution.answer_problems``: every declared level and label, probabilities summing to 1),
anything else an invalid response, and kept in the detection row as ``attribution`` (level -> label ->
probability). The truth it is measured against is the arena's own record of every clip
(``metrics.attribution``)."""

from __future__ import annotations

from voxarena.attribution import answer_problems
from voxarena.orchestrator.fleet.fleet import Service
from voxarena.orchestrator.run.validation import ResponseInvalid
from voxarena.v1 import detector_pb2


def declared(svc: Service) -> list[tuple[str, list[str]]]:
    return [(a.level, list(a.labels)) for a in svc.role_info(detector_pb2.DetectorInfo).attribution]


def traces(svc: Service) -> bool:
    """Whether a detector declares source tracing."""
    return bool(declared(svc))


def checked_attribution(clip_id: str, result: detector_pb2.ScoreResponse, svc: Service) -> dict[str, dict[str, float]]:
    """The answer as level -> label -> probability; ResponseInvalid naming the clip when it breaks the contract."""
    answer = [(a.level, dict(a.probabilities)) for a in result.attribution]
    problems = answer_problems(declared(svc), answer)
    if problems:
        raise ResponseInvalid(f"{clip_id}: attribution: {'; '.join(problems)}")
    return {level: {k: float(v) for k, v in probabilities.items()} for level, probabilities in answer}

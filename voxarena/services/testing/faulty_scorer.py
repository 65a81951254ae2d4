"""A scorer that breaks one rule of issue 13 on purpose (``fault``), for the conformance tests.

Each fault is an old behaviour of our own scorer: ``orchestrator conformance`` must catch it.
``none`` is the real scorer (the control).
"""

from __future__ import annotations

import grpc

from voxarena.scorers.service import ScorerServicer
from voxarena.sdk.errors import InvalidArgument
from voxarena.sdk.server import RunningServer, create_server
from voxarena.v1 import scorer_pb2, scorer_pb2_grpc

FAULTS = {
    "none": "the real scorer",
    "confidence_unchecked": "computes a bootstrap at confidence 1.5: numpy's quantile fails, INTERNAL",
    "batch_fails_on_bad_clip": "one unusable clip fails its whole MeasureClips batch",
}


class FaultyScorer(ScorerServicer):
    def __init__(self, fault: str = "none") -> None:
        super().__init__(("rtf",))
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")
        self.fault = fault

    def DetectionMetrics(
        self, request: scorer_pb2.DetectionMetricsRequest, context: grpc.ServicerContext
    ) -> scorer_pb2.DetectionMetricsResponse:
        if self.fault == "confidence_unchecked" and request.bootstrap.confidence > 1:
            raise ValueError("Quantiles must be in the range [0, 1]")  # what numpy said, unmapped
        return super().DetectionMetrics(request, context)

    def _measure(self, item: scorer_pb2.ClipRequest) -> scorer_pb2.ClipMeasurement:
        m = super()._measure(item)
        if self.fault == "batch_fails_on_bad_clip" and any(e.startswith("unusable clip") for e in m.errors.values()):
            raise InvalidArgument(f"{item.request_id}: {next(iter(m.errors.values()))}")
        return m


def build_server(fault: str, address: str = "127.0.0.1:0") -> RunningServer:
    """A loaded, not yet started scorer server with ``fault``."""
    servicer = FaultyScorer(fault)
    servicer.load()
    name = scorer_pb2.DESCRIPTOR.services_by_name["ScorerService"].full_name
    return create_server([(name, lambda s: scorer_pb2_grpc.add_ScorerServiceServicer_to_server(servicer, s))], address)

"""The dummy detector without segment scores and without streaming: a black box that scores whole clips
only, so that the orchestrator derives its segment scores by sliding windows (``run.segments``) and plans
no streams for it (``run.streaming``).
``python -m voxarena.services.testing.whole_detector --port N``
"""

from __future__ import annotations

from voxarena.sdk import serve
from voxarena.services.testing.dummy_detector import DummyDetector


class WholeDetector(DummyDetector):
    name = "whole-detector"
    segment_hop_seconds = 0.0
    stream_mode = ""


if __name__ == "__main__":
    serve(WholeDetector)

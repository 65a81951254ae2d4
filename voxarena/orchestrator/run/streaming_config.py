"""``protocol.streaming``: the settings of streamed detection in a run (what it does: ``run.streaming``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from voxarena.orchestrator.fleet.service_config import Strict


class StreamingConfig(Strict):
    """``protocol.streaming`` (``run.streaming``): stream each clean first-iteration clip to each detector that
    streams."""

    chunk_seconds: float = Field(0.5, ge=0.02, le=10, description="audio per chunk, seconds")
    pacing: Literal["realtime", "fast"] = Field(
        "realtime", description="realtime: chunk k sent k x chunk_seconds after the first; fast: no waiting"
    )

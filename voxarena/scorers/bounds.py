"""The scorer's request bounds (``ScorerLimits`` in GetInfo) and the checks that a call is still wanted.

Each bound limits a call's time and memory; a request outside them is INVALID_ARGUMENT before any work.
A call its client cancelled, or whose deadline passed, stops between steps (clips, resamples).
"""

from __future__ import annotations

from collections.abc import Callable

import grpc
import numpy as np

from voxarena.sdk.errors import Cancelled, InvalidArgument
from voxarena.v1 import scorer_pb2

# 100000 resamples of a 10000-trial set take minutes, not days.
MAX_BOOTSTRAP_RESAMPLES = 100_000
MAX_CLIP_SECONDS = 600.0
MAX_CLIPS_PER_REQUEST = 256
MAX_TRIALS_PER_SET = 10_000_000
MAX_BOOTSTRAP_DRAWS = 200_000_000  # resamples x items of one set or group: time grows with both
DEFAULT_CONFIDENCE = 0.95


def limits() -> scorer_pb2.ScorerLimits:
    return scorer_pb2.ScorerLimits(
        max_bootstrap_resamples=MAX_BOOTSTRAP_RESAMPLES,
        max_clip_seconds=MAX_CLIP_SECONDS,
        max_clips_per_request=MAX_CLIPS_PER_REQUEST,
        max_trials_per_set=MAX_TRIALS_PER_SET,
        max_bootstrap_draws=MAX_BOOTSTRAP_DRAWS,
    )


def check_bootstrap_work(boot: scorer_pb2.Bootstrap, items: int, what: str) -> None:
    """INVALID_ARGUMENT when ``boot`` over ``items`` scores or clips is more work than MAX_BOOTSTRAP_DRAWS."""
    if boot.resamples * items > MAX_BOOTSTRAP_DRAWS:
        raise InvalidArgument(
            f"{what}: bootstrap of {boot.resamples} resamples x {items} items exceeds the maximum "
            f"{MAX_BOOTSTRAP_DRAWS} draws; ask for at most {MAX_BOOTSTRAP_DRAWS // items} resamples"
        )


def requested_bootstrap(
    request: scorer_pb2.AggregateRequest | scorer_pb2.DetectionMetricsRequest,
) -> scorer_pb2.Bootstrap | None:
    """The request's bootstrap (None: no intervals), or INVALID_ARGUMENT when it is out of bounds."""
    if not request.HasField("bootstrap") or request.bootstrap.resamples == 0:
        return None
    boot = request.bootstrap
    if boot.resamples > MAX_BOOTSTRAP_RESAMPLES:
        raise InvalidArgument(f"bootstrap resamples {boot.resamples} exceeds the maximum {MAX_BOOTSTRAP_RESAMPLES}")
    if boot.confidence != 0 and not 0 < boot.confidence < 1:  # NaN fails both comparisons: refused
        raise InvalidArgument(f"bootstrap confidence {boot.confidence} is outside (0, 1)")
    return boot


def still_wanted(context: grpc.ServicerContext | None) -> None:
    """Raises Cancelled once the client has cancelled the call or its deadline has passed: checked
    between steps (clips, resamples), so the scorer stops computing answers nobody will read."""
    if context is not None and not context.is_active():
        raise Cancelled("the call was cancelled or its deadline passed; work stopped")


class WhileWanted:
    """A bootstrap statistic that first checks the call is still wanted (cluster_intervals lets any
    exception but ValueError through, so Cancelled ends the resampling)."""

    def __init__(self, statistic: Callable[[np.ndarray], dict[str, float]], context: grpc.ServicerContext | None):
        self.statistic, self.context = statistic, context

    def __call__(self, idx: np.ndarray) -> dict[str, float]:
        still_wanted(self.context)
        return self.statistic(idx)

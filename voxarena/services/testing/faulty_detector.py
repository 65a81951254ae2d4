"""A detector built on the SDK that breaks one contract rule on purpose (``--fault NAME``).

Each fault is one the SDK cannot prevent (it takes the model's scores as they come), so each is a
mistake a vendor using the SDK can make; ``orchestrator conformance`` must catch every one. Faults
the SDK prevents (is_llr against GetInfo, max_batch_size, echoes) live in ``raw_faulty_services``.
``--fault none`` honours the contract: the control.

``python -m voxarena.services.testing.faulty_detector --fault batch_normalised --port 0``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from voxarena.sdk import AudioClip, InvalidArgument, serve
from voxarena.sdk.stream_servicer import WindowedStream
from voxarena.streaming import window_samples

from .dummy_detector import DummyDetector

FAULTS = {
    "none": "honours the contract",
    "batch_normalised": "subtracts the batch's mean score: ScoreBatch differs from Score",
    "nan_score": "scores clips shorter than 1.5 s as NaN",
    "not_deterministic": "declares itself deterministic but adds unseeded noise to every score",
    "refuses_max_batch": "declares max_batch_size 8 but refuses batches of more than 4 clips",
    "shared_state": "keeps the clips in the model across calls: concurrent calls get each other's scores",
    "segments_miscounted": "gives one segment score too many (the SDK answers INTERNAL)",
    "stream_window_too_long": "streams with a window twice as long as the one it declares",
    "stream_final_early": "gives as the final score of a stream the score of all but its last chunk",
}


class _LongWindow(WindowedStream):
    def running(self) -> float:
        return self.model_score(self.clip(2 * window_samples(self.model.stream_bounds()[0], self.sample_rate)))


class _EarlyFinal(WindowedStream):
    def push(self, samples: np.ndarray) -> None:
        self.before_last = self.audio.size
        super().push(samples)

    def final(self) -> float:
        return self.model_score(AudioClip(self.audio.view()[: self.before_last].copy(), self.sample_rate))


class FaultyDetector(DummyDetector):
    name = "faulty-detector"
    max_batch_size = 8
    stream_window_seconds = 1.0  # shorter than the conformance clips, so that a wrong window shows

    def __init__(self, fault: str = "none") -> None:
        super().__init__()
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")
        self.fault = fault
        self._current: list[AudioClip] = []

    def score_batch(self, clips: list[AudioClip], options: list[dict[str, str]] | None = None) -> list[float]:
        fault = self.fault
        if fault == "refuses_max_batch" and len(clips) > 4:
            raise InvalidArgument(f"batch of {len(clips)} clips; at most 4")
        if fault == "shared_state":  # the bug: per-call state kept on the shared model
            self._current = clips
            time.sleep(0.2)  # long enough for concurrent calls to overlap on a busy machine
            clips = self._current
        scores = super().score_batch(clips)
        if fault == "batch_normalised" and len(scores) > 1:
            mean = float(np.mean(scores))
            scores = [s - mean for s in scores]
        if fault == "nan_score":
            scores = [float("nan") if c.duration < 1.5 else s for c, s in zip(clips, scores)]
        if fault == "not_deterministic":
            scores = [s + float(np.random.default_rng().normal(0, 0.01)) for s in scores]
        return scores

    def open_stream(self, sample_rate: int, options: dict[str, str]) -> WindowedStream:
        kind = {"stream_window_too_long": _LongWindow, "stream_final_early": _EarlyFinal}.get(
            self.fault, WindowedStream
        )
        return kind(self, sample_rate, options)

    def segment_batch(self, clips: list[AudioClip], options: list[dict[str, str]]) -> list[list[float]]:
        segments = super().segment_batch(clips, options)
        return [s + [0.0] for s in segments] if self.fault == "segments_miscounted" else segments


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fault", default="none", choices=sorted(FAULTS), help="the rule to break")


if __name__ == "__main__":
    serve(lambda args: FaultyDetector(args.fault), add_arguments=_arguments)

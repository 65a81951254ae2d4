"""A window network streamed natively, with state: each window scored once, as soon as its samples came.

A clip's score is the mean over its windows (``onnx_scoring``: back to back from its start, the last one
ending at the clip's end; a clip shorter than one window repeated to fill it). A stream keeps the scores
of the windows already complete, so each running score costs one network run, on the window ending at
the newest sample (none when the audio seen ends exactly on a window's end), and equals the Score of the
audio seen so far to the network's rounding: the mean of the complete windows and that last one.

Input at another rate than 16 kHz is resampled chunk by chunk (soxr's streaming resampler), which lags
by the filter's delay: running scores are then near the prefix's Score, and the final score is
recomputed from the whole clip, so it equals Score. At 16 kHz the final score is the running one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from voxarena.sdk.stream_servicer import AudioBuffer, DetectorStream

from .onnx_scoring import cut_windows

if TYPE_CHECKING:
    from .onnx_scoring import RawWaveformDetector

NETWORK_RATE = 16000


class WindowStream(DetectorStream):
    model: RawWaveformDetector

    def __init__(self, model: RawWaveformDetector, sample_rate: int, options: dict[str, str]) -> None:
        super().__init__(model, sample_rate, options)
        self.width = model.scorer.window
        self.native = AudioBuffer()
        self.resampler = None
        if sample_rate != NETWORK_RATE:
            import soxr

            self.resampler = soxr.ResampleStream(sample_rate, NETWORK_RATE, 1, dtype="float32", quality="HQ")
        self.complete: list[float] = []  # the scores of the windows back to back from the start

    def extend(self, samples: np.ndarray) -> None:
        x = samples.astype(np.float32)
        if self.resampler is not None:
            x = self.resampler.resample_chunk(x, last=False)
        self.native.extend(x)
        done = self.native.size // self.width
        if done > len(self.complete):
            seen = self.native.view()
            windows = np.stack([seen[k * self.width : (k + 1) * self.width] for k in range(len(self.complete), done)])
            self.complete += self.model.scorer.window_scores(windows).tolist()

    def running(self) -> float:
        seen, n = self.native.view(), self.native.size
        if n == 0:
            return self.model_score(self.clip())  # the resampler holds back the first samples
        if n < self.width:
            return float(np.mean(self.model.scorer.window_scores(cut_windows(seen.copy(), self.width))))
        scores = list(self.complete)
        if n % self.width:
            scores += self.model.scorer.window_scores(seen[None, n - self.width :].copy()).tolist()
        return float(np.mean(scores))

    def final(self) -> float:
        return super().final() if self.resampler is not None else self.running()

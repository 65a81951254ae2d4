"""LFCC-GMM streamed natively: frame log-likelihood ratios accumulated as the audio comes.

The utterance score is the mean frame LLR, and a frame's LFCCs depend on its own 20 ms only; its deltas
and double deltas reach two frames ahead (``deltas(x, 3)`` twice), the last two frames of what has come
using the repeated edge frame. So a stream keeps every frame's static coefficients, fixes a frame's LLR
once two more frames have come, and adds the last two provisionally: each running score is exactly the
Score of the audio seen so far (to rounding), at a cost per chunk of the new frames only.

At 16 kHz that holds sample for sample. At another rate the stream resamples chunk by chunk (soxr's
streaming resampler, HQ as everywhere), whose output lags its input by the filter's delay and differs
at the edges from resampling the whole clip at once: the running scores are then near, not equal to,
Score of the prefix (6 % apart on a 6 s LibriSpeech clip at 22.05 kHz), and the final score is
recomputed from the whole clip, so it equals Score.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from voxarena.sdk.stream_servicer import AudioBuffer, DetectorStream

from .lfcc import cepstra, frame_sizes, lfcc, with_deltas

if TYPE_CHECKING:
    from .model import LfccGmmModel

CONTEXT = 2  # frames ahead a frame's double deltas read


class LfccGmmStream(DetectorStream):
    model: LfccGmmModel

    def __init__(self, model: LfccGmmModel, sample_rate: int, options: dict[str, str]) -> None:
        super().__init__(model, sample_rate, options)
        self.cfg = model.lfcc_config
        self.window, self.shift = frame_sizes(self.cfg)
        self.native = AudioBuffer()  # the audio at the front end's rate
        self.resampler = None
        if sample_rate != self.cfg.sample_rate:
            import soxr

            self.resampler = soxr.ResampleStream(sample_rate, self.cfg.sample_rate, 1, dtype="float32", quality="HQ")
        self.ceps = np.zeros((0, self.cfg.n_ceps))
        self.fixed, self.fixed_sum = 0, 0.0  # frames whose LLR is final, and their sum

    def extend(self, samples: np.ndarray) -> None:
        x = samples.astype(np.float32)
        if self.resampler is not None:
            x = self.resampler.resample_chunk(x, last=False)
        self.native.extend(x)
        have, total = self.ceps.shape[0], self.native.size
        complete = 1 + (total - self.window) // self.shift if total >= self.window else 0
        if complete > have:
            stretch = self.native.view()[have * self.shift : (complete - 1) * self.shift + self.window]
            self.ceps = np.vstack([self.ceps, cepstra(stretch, self.cfg)])
        ready = self.ceps.shape[0] - CONTEXT
        if ready > self.fixed:
            self.fixed_sum += float(self.llrs(self.fixed, ready).sum())
            self.fixed = ready

    def llrs(self, first: int, end: int) -> np.ndarray:
        """The frame LLRs of frames first..end-1, their deltas read from the frames there are."""
        lo = max(0, first - CONTEXT)
        feats = with_deltas(self.ceps[lo:], self.cfg)[first - lo : end - lo]
        return self.model.llr_of_features(feats)

    def running(self) -> float:
        n = self.ceps.shape[0]
        if n == 0:  # less than one window: the Score path pads it to one frame
            return float(np.mean(self.model.llr_of_features(lfcc(self.native.view(), self.cfg))))
        return (self.fixed_sum + float(self.llrs(self.fixed, n).sum())) / n

    def final(self) -> float:
        if self.resampler is not None:
            return super().final()  # the whole clip resampled at once, as Score does
        return self.running()

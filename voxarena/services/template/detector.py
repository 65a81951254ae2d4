"""TEMPLATE detector: copy this file, rename the class, replace ``score_batch``.

As shipped it scores with a transparent hand-crafted cue (log ratio of 4-8 kHz energy to total
energy at 16 kHz: bona fide speech keeps breath and fricative energy up there). Replace it with
your model: load weights in ``load``, score in ``score_batch``. Higher score = more bona fide.
If your scores are calibrated log-likelihood ratios, set ``calibrated = True`` (or set
``calibration = (a, b)`` fitted on your dev data) so the arena may report actDCF and Cllr.

    python detector.py --port 50051     # your copy, with voxarena-sdk installed (make sdk)
    python -m voxarena.services.template.detector --port 50051     # this one, in the repository

Its image: Dockerfile.detector beside it (copy both into a folder of your own, with the SDK wheel).
"""

from __future__ import annotations

import numpy as np

from voxarena.codec import AudioClip, resample
from voxarena.sdk import DetectorModel, serve


class TemplateDetector(DetectorModel):
    name = "my-detector"
    version = "0.1.0"
    licence = "your licence"
    family = "HANDCRAFTED_FRONT_END"  # a voxarena.v1.DetectorFamily name
    native_sample_rate = 16000  # clips arrive at any rate: resample them yourself
    deterministic = True
    calibrated = False
    timing_scope = "score: resample to 16 kHz + FFT band energies"
    max_batch_size = 32
    max_seconds = 600.0  # longer clips are rejected with INVALID_ARGUMENT

    def load(self) -> None:
        pass  # load your weights here

    def score_batch(self, clips: list[AudioClip]) -> list[float]:
        scores = []
        for clip in clips:  # already validated: mono, finite, non-empty, <= max_seconds
            x = resample(clip.samples, clip.sample_rate, 16000).astype(np.float64)
            power = np.abs(np.fft.rfft(x)) ** 2
            high = power[np.fft.rfftfreq(x.size, 1 / 16000) >= 4000].sum()
            scores.append(float(np.log(high + 1e-12) - np.log(power.sum() + 1e-12)))
        return scores


if __name__ == "__main__":
    serve(TemplateDetector)

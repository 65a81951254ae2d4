"""A transparent detector for tests: score = log of the high-band (4-8 kHz) to total energy ratio
at 16 kHz. Real speech has breath and fricative energy up there; the dummy buzz has little. Its one
option, ``band_low_hz``, moves the band's lower edge per request (read through ``score_batch``'s options).
``python -m voxarena.services.testing.dummy_detector --port N``
"""

from __future__ import annotations

import numpy as np

from voxarena.codec import AudioClip, resample
from voxarena.sdk import DetectorModel, Option, serve


class DummyDetector(DetectorModel):
    name = "dummy-detector"
    version = "1.0.0"
    licence = "Apache-2.0"
    family = "HANDCRAFTED_FRONT_END"
    native_sample_rate = 16000
    timing_scope = "score: FFT band energies"
    max_batch_size = 64
    options = (Option("band_low_hz", "lower edge of the high band, 1000 to 7000 Hz", "4000"),)

    def load(self) -> None:
        pass

    def score_batch(self, clips: list[AudioClip], options: list[dict[str, str]] | None = None) -> list[float]:
        out = []
        for c, opts in zip(clips, options or [{} for _ in clips]):
            low = self.float_option(opts, "band_low_hz", 1000.0, 7000.0) if opts else 4000.0
            x = resample(c.samples, c.sample_rate, 16000).astype(np.float64)
            spec = np.abs(np.fft.rfft(x)) ** 2
            freqs = np.fft.rfftfreq(x.size, 1 / 16000)
            out.append(float(np.log(spec[freqs >= low].sum() + 1e-12) - np.log(spec.sum() + 1e-12)))
        return out


if __name__ == "__main__":
    serve(DummyDetector)

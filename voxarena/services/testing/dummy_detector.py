"""A transparent detector for tests: score = log of the high-band (4-8 kHz) to total energy ratio
at 16 kHz. Real speech has breath and fricative energy up there; the dummy buzz has little. Its one
option, ``band_low_hz``, moves the band's lower edge per request (read through ``score_batch``'s options).
Segment scores (partial fakes) at a 20 ms hop: the same ratio over each 20 ms of the clip.
``python -m voxarena.services.testing.dummy_detector --port N``
"""

from __future__ import annotations

import numpy as np

from voxarena.codec import AudioClip, resample
from voxarena.sdk import DetectorModel, Option, serve
from voxarena.segments import segment_count


class DummyDetector(DetectorModel):
    name = "dummy-detector"
    version = "1.0.0"
    licence = "Apache-2.0"
    family = "HANDCRAFTED_FRONT_END"
    native_sample_rate = 16000
    timing_scope = "score: FFT band energies"
    max_batch_size = 64
    options = (Option("band_low_hz", "lower edge of the high band, 1000 to 7000 Hz", "4000"),)

    segment_hop_seconds = 0.02

    def load(self) -> None:
        pass

    def _low(self, opts: dict[str, str]) -> float:
        return self.float_option(opts, "band_low_hz", 1000.0, 7000.0) if opts else 4000.0

    @staticmethod
    def _ratio(x: np.ndarray, low: float) -> float:
        spec = np.abs(np.fft.rfft(x)) ** 2
        freqs = np.fft.rfftfreq(x.size, 1 / 16000)
        return float(np.log(spec[freqs >= low].sum() + 1e-12) - np.log(spec.sum() + 1e-12))

    def score_batch(self, clips: list[AudioClip], options: list[dict[str, str]] | None = None) -> list[float]:
        out = []
        for c, opts in zip(clips, options or [{} for _ in clips]):
            out.append(self._ratio(resample(c.samples, c.sample_rate, 16000).astype(np.float64), self._low(opts)))
        return out

    def segment_batch(self, clips: list[AudioClip], options: list[dict[str, str]]) -> list[list[float]]:
        out = []
        for c, opts in zip(clips, options):
            x = resample(c.samples, c.sample_rate, 16000).astype(np.float64)
            n = segment_count(c.samples.size, c.sample_rate, self.segment_hop_seconds)
            edges = np.round(np.arange(n + 1) * self.segment_hop_seconds * 16000).astype(int)
            out.append([self._ratio(x[a:b], self._low(opts)) if b > a else 0.0 for a, b in zip(edges, edges[1:])])
        return out


if __name__ == "__main__":
    serve(DummyDetector)

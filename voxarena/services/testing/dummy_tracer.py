"""The dummy detector that also traces sources: which family of system made a clip, at the "family" level
(``DetectorInfo.attribution``), from its one cue, the high-band energy ratio: a buzz without highs is a
rule-based formant synthesiser, a little more a DSP vocoder, speech-like highs "unknown". A softmax of
fixed linear functions of the log ratio: transparent, deterministic, for tests.
``python -m voxarena.services.testing.dummy_tracer --port N``
"""

from __future__ import annotations

import numpy as np

from voxarena.codec import AudioClip, resample
from voxarena.sdk import serve
from voxarena.services.testing.dummy_detector import DummyDetector

LABELS = ("RULE_BASED_FORMANT", "VOCODER_DSP", "unknown")


class DummyTracer(DummyDetector):
    name = "dummy-tracer"
    attribution = (("family", LABELS),)

    def attribute_batch(
        self, clips: list[AudioClip], options: list[dict[str, str]]
    ) -> list[dict[str, dict[str, float]]]:
        out = []
        for c, opts in zip(clips, options):
            r = self._ratio(resample(c.samples, c.sample_rate, 16000).astype(np.float64), self._low(opts))
            logits = np.array([-r - 8.0, -abs(r + 5.0), r + 3.0])
            p = np.exp(logits - logits.max())
            out.append({"family": dict(zip(LABELS, (p / p.sum()).tolist()))})
        return out


if __name__ == "__main__":
    serve(DummyTracer)

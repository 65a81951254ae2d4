"""Mel-cepstral analysis and MLSA filter synthesis (pysptk / SPTK).

Per 5 ms frame (32 ms Blackman window at 16 kHz): mel-cepstrum of order 24 with all-pass constant
alpha 0.42 (``pysptk.mcep``), pitch by SWIPE'; synthesis drives the MLSA filter with a pulse train
(voiced) or noise (unvoiced) whose generator is seeded by the request seed. No trained parameters.
"""

from __future__ import annotations

import numpy as np

from voxarena.sdk import Option, SynthesisRequest, SynthesisResult
from voxarena.sdk.vocoding import SignalVocoder, output_clip

FRAME, HOP = 512, 80  # SPTK's mcep needs a power-of-two frame


def mel_cepstrum(x: np.ndarray, order: int, alpha: float) -> np.ndarray:
    import pysptk

    padded = np.pad(x, (FRAME // 2, FRAME // 2))
    n = 1 + (padded.size - FRAME) // HOP
    frames = np.lib.stride_tricks.sliding_window_view(padded, FRAME)[::HOP][:n] * pysptk.blackman(FRAME)
    # A whisper of noise keeps the analysis defined on digital silence (deterministic).
    frames = frames + 1e-6 * np.random.default_rng(0).standard_normal(frames.shape)
    out = np.zeros((len(frames), order + 1))
    for i, f in enumerate(frames):
        try:
            out[i] = pysptk.mcep(f, order=order, alpha=alpha, etype=1, eps=1e-6)
        except RuntimeError:  # SPTK's iteration can fail on a degenerate frame: hold the previous one
            out[i] = out[i - 1] if i else 0.0
    return out


class MlsaVocoderModel(SignalVocoder):
    name = "mlsa-vocoder"
    licence = "Apache-2.0 (VoxArena); pysptk MIT, SPTK modified BSD"
    timing_scope = "synthesis: mel-cepstral analysis + SWIPE' pitch + MLSA filtering"
    options = (
        Option("order", "mel-cepstrum order, 10..60", "24"),
        Option("alpha", "all-pass constant, 0..0.8", "0.42"),
    )

    def load(self) -> None:
        import pysptk

        self.engine = f"pysptk {pysptk.__version__}"

    def metadata(self) -> dict[str, str]:
        return {**super().metadata(), "frame": f"{FRAME} samples Blackman, hop {HOP}", "pitch": "SWIPE' 60-400 Hz"}

    def synthesize(self, request: SynthesisRequest) -> SynthesisResult:
        import pysptk
        from pysptk.synthesis import MLSADF, Synthesizer

        order = int(self.float_option(request.parameters, "order", 10, 60))
        alpha = self.float_option(request.parameters, "alpha", 0.0, 0.8)
        fs = self.native_sample_rate
        x = self.source(request)
        mc = mel_cepstrum(x, order, alpha)
        pitch = pysptk.swipe(x, fs=fs, hopsize=HOP, min=60, max=400, otype="pitch")
        n = min(len(mc), len(pitch))
        excitation = pysptk.excite(
            pitch[:n].astype(np.float64), HOP, gaussian=True, seed=int(request.seed % (2**31 - 1)) + 1
        )
        b = pysptk.mc2b(mc[:n], alpha)
        y = Synthesizer(MLSADF(order=order, alpha=alpha), HOP).synthesis(excitation, b)
        return SynthesisResult(output_clip(y[: x.size], fs))

"""Voice conversion with WORLD, learnt from the reference audio alone (no parallel data, no training).

CONVERT: WORLD features of the source (F0, spectral envelope, aperiodicity) and of the target
speaker's reference clip. F0: log-F0 mean/variance mapping over voiced frames. Spectral envelope:
mel-cepstra (order 24, alpha 0.42, ``pysptk.sp2mc``) mean/variance mapping per coefficient over
voiced frames (c0, the energy, stays the source's), back to an envelope with ``mc2sp``. WORLD
resynthesises with the source's aperiodicity. CLONE: Piper VITS (deterministic) speaks the text,
then the same conversion moves it toward the reference speaker. Deterministic, 16 kHz.
"""

from __future__ import annotations

import numpy as np

from voxarena.codec import resample
from voxarena.sdk import GeneratorModel, Option, SynthesisRequest, SynthesisResult
from voxarena.sdk.errors import InvalidArgument
from voxarena.sdk.vocoding import INPUT_RESAMPLER, output_clip, source_signal
from voxarena.services.generators.world_vocoder.model import world_features

ORDER, ALPHA, FRAME_PERIOD = 24, 0.42, 5.0


def _voiced_stats(f0: np.ndarray, mc: np.ndarray, what: str):
    voiced = f0 > 0
    if voiced.sum() < 10:
        raise InvalidArgument(f"{what}: fewer than 10 voiced frames, cannot learn a voice from it")
    lf0 = np.log(f0[voiced])
    return lf0.mean(), lf0.std() + 1e-6, mc[voiced].mean(axis=0), mc[voiced].std(axis=0) + 1e-6


def convert(x: np.ndarray, ref: np.ndarray, fs: int, f0_method: str, strength: float) -> np.ndarray:
    import pysptk
    import pyworld as pw

    f0, sp, ap = world_features(x, fs, FRAME_PERIOD, f0_method)
    f0_t, sp_t, _ = world_features(ref, fs, FRAME_PERIOD, f0_method)
    mc = pysptk.sp2mc(sp, ORDER, ALPHA)
    mc_t = pysptk.sp2mc(sp_t, ORDER, ALPHA)
    mu_s, sd_s, m_s, s_s = _voiced_stats(f0, mc, "source audio")
    mu_t, sd_t, m_t, s_t = _voiced_stats(f0_t, mc_t, "reference audio")
    target_lf0 = (np.log(np.where(f0 > 0, f0, 1.0)) - mu_s) / sd_s * sd_t + mu_t
    f0_c = np.where(f0 > 0, np.exp((1 - strength) * np.log(np.where(f0 > 0, f0, 1.0)) + strength * target_lf0), 0.0)
    mc_c = mc.copy()
    mapped = (mc[:, 1:] - m_s[1:]) / s_s[1:] * s_t[1:] + m_t[1:]
    mc_c[:, 1:] = (1 - strength) * mc[:, 1:] + strength * mapped
    fftlen = (sp.shape[1] - 1) * 2
    sp_c = pysptk.mc2sp(mc_c, ALPHA, fftlen)
    return pw.synthesize(f0_c, np.ascontiguousarray(sp_c), ap, fs, FRAME_PERIOD)[: x.size]


class WorldVcModel(GeneratorModel):
    name = "world-vc"
    licence = "Apache-2.0 (VoxArena); pyworld MIT, pysptk MIT; CLONE front end Piper (MIT) joe voice (CC0 data)"
    family = "VOICE_CONVERSION"
    tasks = ("CONVERT", "CLONE")
    native_sample_rate = 16000
    deterministic = True
    timing_scope = "synthesis: (CLONE: Piper TTS +) WORLD analysis of source and reference + conversion + synthesis"
    max_source_seconds = 120.0
    options = (
        Option("f0_method", "harvest or dio", "harvest"),
        Option("strength", "0 keeps the source voice, 1 maps fully to the reference statistics", "1.0"),
    )

    def load(self) -> None:
        from voxarena.services.generators.piper_vits.model import PiperVitsModel

        self._tts = PiperVitsModel()
        self._tts.load()

    def parameter_count(self) -> int:
        return self._tts.parameter_count()  # the Piper front end of CLONE; conversion itself learns no weights

    def weights_sha256(self) -> str:
        return self._tts.weights_sha256()

    def metadata(self) -> dict[str, str]:
        return {
            "input_resampler": INPUT_RESAMPLER,
            "clone_tts": "piper-vits en_US-joe-medium, noise 0",
            "mcep": f"order {ORDER}, alpha {ALPHA}",
            "conversion": "log-F0 and mel-cepstrum mean/variance mapping",
        }

    def synthesize(self, request: SynthesisRequest) -> SynthesisResult:
        fs = self.native_sample_rate
        strength = self.float_option(request.parameters, "strength", 0.0, 1.0)
        ref = source_signal(request.reference_clip(), fs, min_seconds=0.5)
        if request.task == "CONVERT":
            x = source_signal(request.source_clip(), fs)
        else:
            tts = self._tts._synthesize(self._tts._voice, request.text, 0.0, 0.0, 1.0)
            if tts.size == 0:
                raise InvalidArgument("the TTS front end produced no audio for this text")
            x = resample(tts, self._tts.native_sample_rate, fs).astype(np.float64)
        y = convert(x, ref, fs, request.parameters["f0_method"], strength)
        return SynthesisResult(output_clip(y, fs))

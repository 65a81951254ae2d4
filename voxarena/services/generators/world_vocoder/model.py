"""WORLD analysis-resynthesis (pyworld): F0 (Harvest or DIO+StoneMask), spectral envelope
(CheapTrick) and aperiodicity (D4C), then WORLD's synthesiser. A DSP vocoder: no trained
parameters, deterministic. Works at 16 kHz; sources at other rates are resampled (soxr HQ, declared)."""

from __future__ import annotations

from voxarena.sdk import Option, SynthesisRequest, SynthesisResult
from voxarena.sdk.errors import InvalidArgument
from voxarena.sdk.vocoding import SignalVocoder, output_clip

# Analysis frames of one request: WORLD keeps about 12 kB per frame at 16 kHz (envelope and aperiodicity,
# 513 bins each, float64, and the synthesiser's copies): 145 MB per 12000 frames measured, so ~0.6 GB here.
# The default 5 ms frames on the longest source (120 s) are 24000; 1 ms frames on it would be 120000.
MAX_WORLD_FRAMES = 48_000


def world_features(x, fs: int, frame_period: float, f0_method: str):
    import pyworld as pw

    if f0_method == "harvest":
        f0, t = pw.harvest(x, fs, frame_period=frame_period)
    elif f0_method == "dio":
        f0, t = pw.dio(x, fs, frame_period=frame_period)
        f0 = pw.stonemask(x, f0, t, fs)
    else:
        raise InvalidArgument(f"option f0_method={f0_method!r}: use harvest or dio")
    return f0, pw.cheaptrick(x, f0, t, fs), pw.d4c(x, f0, t, fs)


class WorldVocoderModel(SignalVocoder):
    name = "world-vocoder"
    licence = "Apache-2.0 (VoxArena); WORLD and pyworld: modified BSD / MIT"
    timing_scope = "synthesis: WORLD analysis (F0, CheapTrick, D4C) + synthesis of the source clip"
    options = (
        Option("f0_method", "harvest (accurate) or dio (fast, with StoneMask)", "harvest"),
        Option("frame_period", "analysis frame period in ms, 1..20; source ms / frame_period at most 48000", "5.0"),
    )

    def load(self) -> None:
        import pyworld

        self.engine = f"pyworld {getattr(pyworld, '__version__', '')}"

    def synthesize(self, request: SynthesisRequest) -> SynthesisResult:
        import pyworld as pw

        fs = self.native_sample_rate
        period = self.float_option(request.parameters, "frame_period", 1.0, 20.0)
        x = self.source(request)
        frames = int(1000 * x.size / fs / period) + 1
        if frames > MAX_WORLD_FRAMES:
            raise InvalidArgument(
                f"frame_period={period:g} ms on a {x.size / fs:.1f} s source: {frames} analysis frames exceeds "
                f"{MAX_WORLD_FRAMES} (memory); use frame_period >= {1000 * x.size / fs / (MAX_WORLD_FRAMES - 1):.2f} "
                "or a shorter source"
            )
        f0, sp, ap = world_features(x, fs, period, request.parameters["f0_method"])
        y = pw.synthesize(f0, sp, ap, fs, period)[: x.size]
        return SynthesisResult(output_clip(y, fs))

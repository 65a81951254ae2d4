"""The channel DSP (``voxarena.dsp.channel``, the orchestrator's built-in channel steps) as a transform service,
kind CHANNEL: the same code, so with the same seed it gives the bytes the built-in steps give (without noise,
any seed). Each step is off by default; on, in this order: ``resample_hz`` (the clip stays at the new rate, as a channel
leaves it), ``codec`` (with ``compression`` for mp3/opus/vorbis; a telephone codec works at 8 kHz),
``noise`` at ``noise_snr_db``, ``gain_db``. The answer is PCM 16, clipped at full scale, as the built-in
conditions store it; the request's seed seeds the noise."""

from __future__ import annotations

from voxarena.dsp.channel import CODECS, COMPRESSIBLE, ChannelError, DspStep, apply_steps
from voxarena.sdk import InvalidArgument, Option, OptionRange, TransformModel, TransformRequest, TransformResult

RATES = ("off", "8000", "11025", "16000", "22050", "24000", "32000", "44100", "48000")


class ChannelModel(TransformModel):
    name = "channel"
    version = "0.1.0"
    licence = "MIT"
    kind = "CHANNEL"
    timing_scope = "transform"
    options = (
        Option("resample_hz", "new sample rate, Hz; off = none", "off"),
        Option("codec", "none, " + ", ".join(CODECS), "none"),
        Option("compression", "mp3/opus/vorbis compression level, 0 = best quality .. 0.99", "0.5"),
        Option("noise", "off, white or pink", "off"),
        Option("noise_snr_db", "additive noise SNR over the clip, dB", "20"),
        Option("gain_db", "gain, dB (0 = none); clipped at full scale", "0"),
    )
    ranges = {
        "resample_hz": OptionRange(choices=RATES),
        "codec": OptionRange(choices=("none", *CODECS)),
        "compression": OptionRange(0.0, 0.99),
        "noise": OptionRange(choices=("off", "white", "pink")),
        "noise_snr_db": OptionRange(-20.0, 100.0),
        "gain_db": OptionRange(-60.0, 40.0),
    }

    def load(self) -> None:
        pass

    def transform(self, request: TransformRequest) -> TransformResult:
        o = request.options
        steps: list[DspStep] = []
        if o["resample_hz"] != "off":
            steps.append(DspStep(resample=int(o["resample_hz"])))
        if o["codec"] != "none":
            compression = float(o["compression"]) if o["codec"] in COMPRESSIBLE else None
            steps.append(DspStep(codec=o["codec"], compression=compression))
        if o["noise"] != "off":
            steps.append(DspStep(noise_snr_db=float(o["noise_snr_db"]), noise=o["noise"]))
        if float(o["gain_db"]) != 0:
            steps.append(DspStep(gain_db=float(o["gain_db"])))
        try:
            clip, done = apply_steps(request.audio, steps, request.seed)
        except ChannelError as e:
            raise InvalidArgument(str(e)) from None
        except RuntimeError as e:  # libsndfile refusing an encoding
            raise InvalidArgument(f"codec {o['codec']}: {e}") from None
        said = [" ".join(f"{k}={v}" for k, v in step.items() if v is not None) for step in done["steps"]]
        return TransformResult(clip, said)

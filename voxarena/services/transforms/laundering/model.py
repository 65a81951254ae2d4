"""A laundering chain: what a forger does to a fake to hide the traces of its generator while keeping
the speech. Each step is off by default; on, in this fixed order:

1. ``reverb_rt60`` (s): light reverberation by a synthetic room impulse response drawn from the request's
   seed (exponentially decaying Gaussian noise reaching -60 dB at RT60, a direct path of 1), mixed in at
   ``reverb_wet``; the clip keeps its length.
2. ``highpass_hz`` (0 = none) / ``lowpass_hz`` (24000 = none; at or above half the clip's rate there
   is nothing to remove): band-limiting by 8th-order Butterworth filters run forward and backward (zero
   phase: the clip stays aligned with its source). The two ranges do not overlap: every pair is a band.
3. ``resample_hz``: down to that rate (soxr HQ, as everywhere in VoxArena) ...
4. ``codec`` (``compression`` for mp3/opus/vorbis): ... through a lossy codec (libsndfile, as the
   orchestrator's channel conditions; a telephone codec works at 8 kHz) ...
5. ... and back up to the input's rate: the output has the input's rate and length, so reference metrics
   (PESQ, STOI, SIM) compare it with the original directly.
6. ``noise_snr_db`` with ``noise`` white or pink: additive noise at that SNR over the clip, from the seed.

Deterministic: the same request and seed give the same bytes. The output is clipped at full scale.
"""

from __future__ import annotations

import numpy as np

from voxarena.codec import AudioClip, resample
from voxarena.dsp.channel import CODECS, COMPRESSIBLE, codec_roundtrip, coloured_noise
from voxarena.sdk import InvalidArgument, Option, OptionRange, TransformModel, TransformRequest, TransformResult

RATES = ("off", "8000", "11025", "16000", "22050", "24000")
FILTER_ORDER = 8


def room_impulse_response(rt60: float, rate: int, rng: np.random.Generator) -> np.ndarray:
    """Exponentially decaying noise (-60 dB at ``rt60`` seconds) after a direct path of 1, unit energy."""
    n = max(int(rt60 * rate), 1)
    t = np.arange(n) / rate
    h = rng.standard_normal(n) * np.exp(-6.9078 * t / rt60)  # ln(1000): -60 dB of amplitude at rt60
    h[0] = 1.0
    return h / np.sqrt(np.sum(h**2))


class LaunderingModel(TransformModel):
    name = "laundering"
    version = "0.1.0"
    licence = "MIT"
    kind = "LAUNDERING"
    timing_scope = "transform"
    max_seconds = 600.0
    options = (
        Option("reverb_rt60", "reverberation time of the synthetic room, seconds; 0 = no reverb", "0"),
        Option("reverb_wet", "share of the reverberant signal in the mix, 0..1", "0.3"),
        Option("highpass_hz", "high-pass edge, Hz; 0 = none", "0"),
        Option("lowpass_hz", "low-pass edge, Hz; at or above half the clip's rate (24000: always) = none", "24000"),
        Option("resample_hz", "rate to go down to and back up from; off = none", "off"),
        Option("codec", "lossy codec at the lowered rate: none, " + ", ".join(CODECS), "none"),
        Option("compression", "mp3/opus/vorbis compression level, 0 = best quality .. 0.99", "0.5"),
        Option("noise_snr_db", "additive noise SNR over the clip, dB; off with noise=off", "30"),
        Option("noise", "off, white or pink", "off"),
    )
    ranges = {
        "reverb_rt60": OptionRange(0.0, 1.0),
        "reverb_wet": OptionRange(0.0, 1.0),
        "highpass_hz": OptionRange(0.0, 1000.0),
        "lowpass_hz": OptionRange(2000.0, 24000.0),
        "resample_hz": OptionRange(choices=RATES),
        "codec": OptionRange(choices=("none", *CODECS)),
        "compression": OptionRange(0.0, 0.99),
        "noise_snr_db": OptionRange(-20.0, 100.0),
        "noise": OptionRange(choices=("off", "white", "pink")),
    }

    def load(self) -> None:
        from scipy import signal  # noqa: F401  (the filters and the convolution; imported before SERVING)

    def transform(self, request: TransformRequest) -> TransformResult:
        from scipy import signal

        o = request.options
        clip = request.audio
        rate = clip.sample_rate
        x = clip.as_float32().astype(np.float64)
        rng = np.random.default_rng(request.seed)
        steps: list[str] = []
        rt60 = float(o["reverb_rt60"])
        if rt60 > 0:
            wet = float(o["reverb_wet"])
            h = room_impulse_response(rt60, rate, rng)
            x = (1 - wet) * x + wet * signal.oaconvolve(x, h)[: x.size]
            steps.append(f"reverb rt60={rt60:g} s wet={wet:g}")
        high, low = float(o["highpass_hz"]), float(o["lowpass_hz"])
        bands = [("highpass", high)] if high else []
        bands += [("lowpass", low)] if low < rate / 2 else []
        for kind, edge in bands:
            if x.size <= 3 * (FILTER_ORDER + 1):
                raise InvalidArgument(f"the clip ({x.size} samples) is too short to filter")
            x = signal.sosfiltfilt(signal.butter(FILTER_ORDER, edge, kind, fs=rate, output="sos"), x)
            steps.append(f"{kind} {edge:g} Hz")
        y, y_rate = x.astype(np.float32), rate
        if o["resample_hz"] != "off":
            y, y_rate = resample(y, rate, int(o["resample_hz"])), int(o["resample_hz"])
            steps.append(f"resample {y_rate} Hz")
        if o["codec"] != "none":
            compression = float(o["compression"]) if o["codec"] in COMPRESSIBLE else None
            y, y_rate, kbps = codec_roundtrip(y, y_rate, o["codec"], compression)
            steps.append(f"codec {o['codec']} ({kbps:.1f} kbit/s at {y_rate} Hz)")
        if y_rate != rate:
            y = resample(y, y_rate, rate)
            steps.append(f"resample {rate} Hz")
        y = _same_length(y.astype(np.float64), clip.samples.size)
        if o["noise"] != "off":
            power = float(np.mean(y**2))
            if power == 0.0:
                raise InvalidArgument("noise at an SNR: the clip is silent (zero power)")
            snr = float(o["noise_snr_db"])
            noise = coloured_noise(y.size, o["noise"], rng)
            y = y + noise * np.sqrt(power / 10 ** (snr / 10) / np.mean(noise**2))
            steps.append(f"{o['noise']} noise {snr:g} dB SNR")
        return TransformResult(AudioClip(np.clip(y, -1.0, 1.0).astype(np.float32), rate), steps)


def _same_length(y: np.ndarray, n: int) -> np.ndarray:
    """A codec or a resampling round trip may add or drop a few samples: back to ``n``."""
    return y[:n] if y.size >= n else np.concatenate([y, np.zeros(n - y.size)])

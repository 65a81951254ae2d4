"""The channel DSP: what a transmission channel does to a clip, step by step, as plain signal processing.

Shared by the orchestrator's channel conditions (``voxarena.orchestrator.run.channel``, which adds the
steps that call services: transforms and attacks) and the transform services (``channel``: these steps
as a service, so with the same seed it gives the bytes the built-in conditions give; ``laundering``: the
codec round trip and the noise). A step is an object with ``DspStep``'s fields (a ``DspStep`` or the run
config's ``ChannelStep``), exactly one of them set:

- ``resample``      soxr HQ (the resampler VoxArena declares everywhere); the clip stays at the new rate.
- ``codec``         mp3|opus|vorbis|gsm|ulaw|alaw encoded and decoded by libsndfile (through soundfile);
  ``compression`` (0..1, libsndfile's compression level: 0 = best quality / highest bit rate) for mp3
  (constant bit rate; at most 0.99, libsndfile refuses 1.0), opus and vorbis. GSM 06.10, mu-law and
  A-law are narrowband telephone codecs: the clip is resampled to 8 kHz first. Opus runs at
  8/12/16/24/48 kHz: the clip goes to the lowest of those at or above its rate. MP3 comes back
  sample-aligned (libsndfile decodes gaplessly).
- ``noise_snr_db``  additive noise (``noise``: white or pink) scaled to the SNR over the whole clip's
  mean power, drawn from the seed's generator.
- ``gain_db``       a gain, clipped at full scale as a real channel would.

The result is PCM 16, clipped at full scale, with a record of what each step did.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import soundfile as sf

from voxarena.codec import AudioClip, resample

# libsndfile (format, subtype) for each codec, and the rates a codec accepts (None = any).
CODECS = {
    "mp3": ("MP3", "MPEG_LAYER_III", (8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000)),
    "opus": ("OGG", "OPUS", (8000, 12000, 16000, 24000, 48000)),
    "vorbis": ("OGG", "VORBIS", None),
    "gsm": ("WAV", "GSM610", (8000,)),
    "ulaw": ("WAV", "ULAW", (8000,)),
    "alaw": ("WAV", "ALAW", (8000,)),
}
COMPRESSIBLE = ("mp3", "opus", "vorbis")

# (a step that is none of the DSP steps, the clip so far, the condition's generator) -> (the clip after it,
# the record of what it did). The orchestrator's transform and attack steps come through here, drawing
# their seeds from the same generator as the noise, so a condition's bytes depend on its steps' order only.
OtherStep = Callable[[Any, AudioClip, np.random.Generator], tuple[AudioClip, dict[str, Any]]]


class ChannelError(ValueError):
    """A condition cannot be applied to a clip (names the condition, the clip and the reason)."""


@dataclass(frozen=True)
class DspStep:
    """One DSP step (exactly one of resample, codec, noise_snr_db, gain_db set); see the module docstring."""

    resample: int | None = None
    codec: str | None = None
    compression: float | None = None
    noise_snr_db: float | None = None
    noise: str = "white"
    gain_db: float | None = None


def _rate_for(codec: str, rate: int) -> int:
    allowed = CODECS[codec][2]
    if allowed is None or rate in allowed:
        return rate
    higher = [r for r in allowed if r >= rate]
    return min(higher) if higher else max(allowed)


def codec_roundtrip(x: np.ndarray, rate: int, codec: str, compression: float | None) -> tuple[np.ndarray, int, float]:
    """Encode and decode; returns (float32 samples, rate, measured bit rate in kbit/s)."""
    fmt, subtype, _ = CODECS[codec]
    target = _rate_for(codec, rate)
    if target != rate:
        x, rate = resample(x, rate, target), target
    buf = io.BytesIO()
    kwargs: dict[str, object] = {"compression_level": compression} if compression is not None else {}
    if codec == "mp3":
        kwargs["bitrate_mode"] = "CONSTANT"  # a channel's bit rate is what it is, not the encoder's choice
    sf.write(buf, x, rate, format=fmt, subtype=subtype, **kwargs)
    encoded = buf.getvalue()
    kbps = len(encoded) * 8 / (len(x) / rate) / 1000 if len(x) else 0.0
    buf.seek(0)
    y, out_rate = sf.read(buf, dtype="float32", always_2d=False)
    return np.ascontiguousarray(y, dtype=np.float32), int(out_rate), kbps


def coloured_noise(n: int, colour: str, rng: np.random.Generator) -> np.ndarray:
    white = rng.standard_normal(n)
    if colour == "white":
        return white
    # Pink (1/f power): shape white noise's spectrum by 1/sqrt(f), DC left out.
    spec = np.fft.rfft(white)
    f = np.arange(spec.size, dtype=np.float64)
    f[0] = 1.0
    spec /= np.sqrt(f)
    spec[0] = 0.0
    return np.fft.irfft(spec, n)


def apply_steps(
    clip: AudioClip, steps: Sequence[Any], seed: int, other: OtherStep | None = None
) -> tuple[AudioClip, dict[str, Any]]:
    """Apply ``steps`` in order; returns the PCM-16 clip and what was done. A step that is none of the DSP
    steps goes to ``other`` (what it raises passes through); without ``other`` it is a ``ChannelError``."""
    x = clip.as_float32().astype(np.float32)
    rate = clip.sample_rate
    done: list[dict[str, Any]] = []
    rng = np.random.default_rng(seed)
    for step in steps:
        if step.resample is not None:
            x, rate = resample(x, rate, step.resample), step.resample
            done.append({"resample": rate})
        elif step.codec is not None:
            x, rate, kbps = codec_roundtrip(x, rate, step.codec, step.compression)
            done.append({"codec": step.codec, "compression": step.compression, "rate": rate, "kbps": round(kbps, 3)})
        elif step.noise_snr_db is not None:
            power = float(np.mean(x.astype(np.float64) ** 2))
            if power == 0.0:
                raise ChannelError(f"noise at {step.noise_snr_db} dB SNR: the clip is silent (zero power)")
            noise = coloured_noise(x.size, step.noise, rng)
            noise *= np.sqrt(power / 10 ** (step.noise_snr_db / 10) / np.mean(noise**2))
            x = (x + noise).astype(np.float32)
            done.append({"noise_snr_db": step.noise_snr_db, "noise": step.noise})
        elif step.gain_db is not None:
            x = (x * 10 ** (step.gain_db / 20)).astype(np.float32)
            done.append({"gain_db": step.gain_db})
        elif other is not None:
            out, record = other(step, AudioClip(x, rate), rng)
            x, rate = out.as_float32().astype(np.float32), out.sample_rate
            done.append(record)
        else:
            raise ChannelError(f"{step!r}: sets none of resample, codec, noise_snr_db, gain_db")
    clipped = int(np.sum(np.abs(x) > 32767 / 32768))
    pcm = np.clip(np.round(x * 32768.0), -32768, 32767).astype(np.int16)
    return AudioClip(samples=pcm, sample_rate=rate), {"steps": done, "clipped_samples": clipped}

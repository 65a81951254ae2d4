"""Channel conditions: degrade a clip the way a transmission channel would, before detection.

A condition is a named chain of steps declared in the run config (``conditions:``), applied in
order to every clip a detector sees, bona fide and spoof alike, so each condition is a complete
trial set of its own and the detection matrix becomes generator x condition x detector:

- ``resample: 8000``             soxr HQ (the resampler VoxArena declares everywhere); the clip stays at the new rate
- ``codec: mp3|opus|vorbis|gsm|ulaw|alaw`` encoded and decoded by libsndfile (through soundfile);
  ``compression`` (0..1, libsndfile's compression level: 0 = best quality / highest bit rate)
  for mp3 (constant bit rate; at most 0.99, libsndfile refuses 1.0), opus and vorbis. GSM 06.10,
  mu-law and A-law are narrowband telephone codecs: the clip is resampled to 8 kHz first. Opus
  runs at 8/12/16/24/48 kHz: the clip goes to the lowest of those at or above its rate. MP3 comes
  back sample-aligned (libsndfile decodes gaplessly).
- ``noise_snr_db: 10``            additive noise (``noise: white`` or ``pink``) scaled to the SNR over the
  whole clip's mean power; the noise is seeded from the run seed, the condition and the clip id,
  so the same run degrades the same clip with the same noise.
- ``gain_db: -6``                 a gain, clipped at full scale as a real channel would.
- ``attack: {target: DETECTOR, queries: 100, snr_db: 30}``  an adaptive black-box attack on a spoofed
  clip against one of the run's detectors (``voxarena.attack``); bona fide clips pass unchanged.
- ``transform: NAME``             the clip through a transform service (``transforms:`` in the config, a
  TransformService: a laundering chain, a remote channel), with ``parameters``, seeded from the
  condition's seed; its answer is validated like any service's and its steps recorded.

The degraded clip is stored like any other artifact (content-addressed WAV, PCM 16) and recorded
with its steps, measured bit rate and sha256 in ``degradations.jsonl``; the condition ``clean``
(always present) is the clip as it is.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Callable
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


# (transform name, clip, parameters, seed) -> (the transformed clip, the steps it reports).
Transformer = Callable[[str, AudioClip, dict[str, str], int], tuple[AudioClip, list[str]]]
# (clip, the AttackStep config, seed) -> (the attacked clip, what the attack did).
Attacker = Callable[[AudioClip, Any, int], tuple[AudioClip, dict[str, Any]]]


class ChannelError(ValueError):
    """A condition cannot be applied to a clip (names the condition, the clip and the reason)."""


def condition_seed(run_seed: int, condition: str, clip_id: str) -> int:
    """A 64-bit seed that depends only on the run seed, the condition's name and the clip's id."""
    digest = hashlib.sha256(f"{run_seed}|{condition}|{clip_id}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


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


def apply_condition(
    clip: AudioClip, steps: list, seed: int, transform: Transformer | None = None, attack: Attacker | None = None
) -> tuple[AudioClip, dict]:
    """Apply ``steps`` (``ChannelStep`` configs) in order; returns the PCM-16 clip and what was done.
    ``transform`` calls a transform service (the run's fleet): what a failed call raises passes through."""
    x = clip.as_float32().astype(np.float32)
    rate = clip.sample_rate
    done: list[dict] = []
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
        elif step.transform is not None:
            if transform is None:
                raise ChannelError(f"transform {step.transform!r}: this run reaches no transform services")
            parameters = dict(step.parameters)
            out, did = transform(step.transform, AudioClip(x, rate), parameters, int(rng.integers(2**63)))
            x, rate = out.as_float32().astype(np.float32), out.sample_rate
            done.append({"transform": step.transform, "parameters": parameters, "steps": did})
        elif step.attack is not None:
            if attack is None:
                raise ChannelError(f"attack on {step.attack.target!r}: this run cannot reach detectors here")
            out, record = attack(AudioClip(x, rate), step.attack, int(rng.integers(2**63)))
            x, rate = out.as_float32().astype(np.float32), out.sample_rate
            done.append({"attack": record})
    clipped = int(np.sum(np.abs(x) > 32767 / 32768))
    pcm = np.clip(np.round(x * 32768.0), -32768, 32767).astype(np.int16)
    return AudioClip(samples=pcm, sample_rate=rate), {"steps": done, "clipped_samples": clipped}

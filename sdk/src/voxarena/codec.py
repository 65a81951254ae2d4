"""Conversion between the contract's ``Audio`` message and numpy, shared by every party.

Model code, the orchestrator and the scorer see :class:`AudioClip` (mono samples plus their rate);
only this module knows the wire encoding. Decoding validates and names what is wrong.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np
import soundfile as sf

from voxarena.v1 import common_pb2

_SAMPLE_DTYPES: dict[common_pb2.AudioEncoding, np.dtype[Any]] = {
    common_pb2.PCM_S16LE: np.dtype("<i2"),
    common_pb2.PCM_F32LE: np.dtype("<f4"),
}


# Sample rates a clip may declare, in Hz: below 1 kHz no speech fits (a clip "at 1 Hz" is junk, not
# audio); 384 kHz is the highest rate audio interfaces record. Outside them decoding refuses the clip.
MIN_SAMPLE_RATE = 1000
MAX_SAMPLE_RATE = 384000
# Largest float sample magnitude accepted: full scale is 1.0, so this is 40 dB of headroom; beyond it
# the samples are garbage (1e30), and feature extractors overflow on them.
MAX_FLOAT_MAGNITUDE = 100.0


class AudioFormatError(ValueError):
    """The bytes of an Audio message do not describe valid mono audio."""


class AudioTooLongError(AudioFormatError):
    """The clip is longer than the receiver accepts (found from its byte count, before any decoding)."""


@dataclass(frozen=True)
class AudioClip:
    """Mono audio: ``samples`` is int16 (full scale 32768) or float32 (full scale 1.0)."""

    samples: np.ndarray
    sample_rate: int

    @property
    def duration(self) -> float:
        return len(self.samples) / float(self.sample_rate) if self.sample_rate > 0 else 0.0

    def as_float32(self) -> np.ndarray:
        """The samples as float32 in [-1, 1]."""
        if self.samples.dtype == np.int16:
            return self.samples.astype(np.float32) / 32768.0
        return self.samples.astype(np.float32, copy=False)


def encode_audio(clip: AudioClip) -> common_pb2.Audio:
    """int16 samples go as PCM_S16LE, anything else as PCM_F32LE (bit-exact for float32)."""
    samples = np.asarray(clip.samples)
    if samples.ndim != 1:
        raise AudioFormatError(f"audio must be mono (1-D), got shape {samples.shape}")
    if samples.dtype == np.int16:
        encoding, data = common_pb2.PCM_S16LE, samples.astype("<i2").tobytes()
    else:
        encoding, data = common_pb2.PCM_F32LE, samples.astype("<f4").tobytes()
    return common_pb2.Audio(data=data, sample_rate=int(clip.sample_rate), channels=1, encoding=encoding)


def decode_audio(msg: common_pb2.Audio, what: str = "audio", max_seconds: float | None = None) -> AudioClip:
    """Decode and validate; raises AudioFormatError naming ``what`` and the reason.

    ``max_seconds``: refuse a longer clip (AudioTooLongError) from its header and byte count alone,
    before any sample is looked at, so an oversized request costs no decoding work.
    """
    if msg.encoding not in _SAMPLE_DTYPES:
        raise AudioFormatError(f"{what}: unknown encoding {msg.encoding}")
    if msg.sample_rate <= 0:
        raise AudioFormatError(f"{what}: sample_rate must be positive, got {msg.sample_rate}")
    if not MIN_SAMPLE_RATE <= msg.sample_rate <= MAX_SAMPLE_RATE:
        raise AudioFormatError(
            f"{what}: sample_rate {msg.sample_rate} Hz is outside [{MIN_SAMPLE_RATE}, {MAX_SAMPLE_RATE}] Hz"
        )
    if msg.channels != 1:
        raise AudioFormatError(f"{what}: expected mono audio, got {msg.channels} channels")
    dtype = _SAMPLE_DTYPES[msg.encoding]
    if len(msg.data) % dtype.itemsize:
        raise AudioFormatError(f"{what}: {len(msg.data)} bytes is not a whole number of {dtype.itemsize}-byte samples")
    n = len(msg.data) // dtype.itemsize
    if n == 0:
        raise AudioFormatError(f"{what}: empty audio")
    if max_seconds is not None and n / msg.sample_rate > max_seconds:
        raise AudioTooLongError(
            f"{what} is {n / msg.sample_rate:.1f} s ({n} samples at {msg.sample_rate} Hz); "
            f"at most {max_seconds:g} s accepted"
        )
    samples = np.frombuffer(msg.data, dtype=dtype)
    if dtype.kind == "f":
        if not np.all(np.isfinite(samples)):
            raise AudioFormatError(f"{what}: contains NaN or infinite samples")
        peak = float(np.max(np.abs(samples)))
        if peak > MAX_FLOAT_MAGNITUDE:
            raise AudioFormatError(
                f"{what}: sample magnitude {peak:g} exceeds {MAX_FLOAT_MAGNITUDE:g} (float full scale is 1.0)"
            )
    return AudioClip(samples=samples.astype(dtype.newbyteorder("=")), sample_rate=int(msg.sample_rate))


def clip_to_wav_bytes(clip: AudioClip) -> bytes:
    """A deterministic WAV file (PCM_16 for int16 clips, FLOAT otherwise): same samples, same bytes."""
    buf = io.BytesIO()
    subtype = "PCM_16" if clip.samples.dtype == np.int16 else "FLOAT"
    sf.write(buf, clip.samples, clip.sample_rate, format="WAV", subtype=subtype)
    return _without_peak_chunk(buf.getvalue())


def _without_peak_chunk(wav: bytes) -> bytes:
    """The RIFF file without libsndfile's PEAK chunk, which it adds to float WAVs with a write timestamp
    (so identical samples hashed differently from one second to the next). PEAK is optional metadata."""
    out, pos = [wav[:12]], 12
    while pos + 8 <= len(wav):
        size = int.from_bytes(wav[pos + 4 : pos + 8], "little")
        end = pos + 8 + size + (size & 1)
        if wav[pos : pos + 4] != b"PEAK":
            out.append(wav[pos:end])
        pos = end
    body = b"".join(out)
    return body[:4] + (len(body) - 8).to_bytes(4, "little") + body[8:]


def read_audio_file(path: str | os.PathLike[str] | BinaryIO, what: str | None = None) -> AudioClip:
    """Read a mono audio file (WAV, FLAC, ...; a path or a binary file object), keeping 16-bit files as int16."""
    info = sf.info(path)
    if info.channels != 1:
        raise AudioFormatError(f"{what or path}: expected mono audio, got {info.channels} channels")
    if hasattr(path, "seek"):
        path.seek(0)
    dtype = "int16" if info.subtype in ("PCM_16", "PCM_S8", "PCM_U8") else "float32"
    samples, rate = sf.read(path, dtype=dtype, always_2d=False)
    return AudioClip(samples=np.ascontiguousarray(samples), sample_rate=int(rate))


def resample(samples: np.ndarray, orig_rate: int, target_rate: int) -> np.ndarray:
    """float32 resampling with soxr 'HQ' (the one resampler VoxArena declares everywhere)."""
    x = samples.astype(np.float32) / 32768.0 if samples.dtype == np.int16 else samples.astype(np.float32)
    if orig_rate == target_rate:
        return x
    import soxr

    y: np.ndarray = soxr.resample(x, orig_rate, target_rate, quality="HQ").astype(np.float32)
    return y


RESAMPLER = "soxr-HQ"

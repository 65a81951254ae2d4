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


class AudioFormatError(ValueError):
    """The bytes of an Audio message do not describe valid mono audio."""


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


def decode_audio(msg: common_pb2.Audio, what: str = "audio") -> AudioClip:
    """Decode and validate; raises AudioFormatError naming ``what`` and the reason."""
    if msg.encoding not in _SAMPLE_DTYPES:
        raise AudioFormatError(f"{what}: unknown encoding {msg.encoding}")
    if msg.sample_rate <= 0:
        raise AudioFormatError(f"{what}: sample_rate must be positive, got {msg.sample_rate}")
    if msg.channels != 1:
        raise AudioFormatError(f"{what}: expected mono audio, got {msg.channels} channels")
    dtype = _SAMPLE_DTYPES[msg.encoding]
    if len(msg.data) % dtype.itemsize:
        raise AudioFormatError(f"{what}: {len(msg.data)} bytes is not a whole number of {dtype.itemsize}-byte samples")
    samples = np.frombuffer(msg.data, dtype=dtype)
    if samples.size == 0:
        raise AudioFormatError(f"{what}: empty audio")
    if dtype.kind == "f" and not np.all(np.isfinite(samples)):
        raise AudioFormatError(f"{what}: contains NaN or infinite samples")
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

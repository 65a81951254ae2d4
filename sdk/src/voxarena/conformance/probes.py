"""What the checks send beside valid requests' own fields: the two speech-like probe clips (or probes cut
from a recording), the bad audio every role must refuse, and an option name no service declares."""

from __future__ import annotations

import numpy as np

from voxarena.codec import AudioClip, AudioFormatError, encode_audio, read_audio_file
from voxarena.v1 import common_pb2

UNKNOWN_OPTION = "conformance-no-such-option"


def speech_like(seconds: float, f0: float, rate: int = 16000, seed: int = 0) -> AudioClip:
    """A deterministic speech-like probe: a harmonic tone at ``f0`` with syllable-rate (4 Hz) modulation."""
    t = np.arange(int(seconds * rate)) / rate
    tone = sum(np.sin(2 * np.pi * f0 * k * t) / k for k in range(1, 12))
    envelope = 0.5 * (1 - np.cos(2 * np.pi * 4 * t))
    x = 0.2 * tone * envelope / 3 + 0.005 * np.random.default_rng(seed).standard_normal(t.size)
    return AudioClip(x.astype(np.float32), rate)


def default_probes() -> tuple[AudioClip, AudioClip]:
    """Two different clips (3 s at 150 Hz, 2 s at 210 Hz), so a response can be told apart from another's."""
    return speech_like(3.0, 150.0, seed=0), speech_like(2.0, 210.0, seed=1)


def probes_from_file(path: str) -> tuple[AudioClip, AudioClip]:
    """Probes cut from a mono recording, for services that refuse synthetic audio: its first 3 s and the 2 s after."""
    clip = read_audio_file(path)
    rate = clip.sample_rate
    if clip.duration < 5.0:
        raise AudioFormatError(f"{path}: {clip.duration:.2f} s; the probes need at least 5 s of audio")
    return AudioClip(clip.samples[: 3 * rate], rate), AudioClip(clip.samples[3 * rate : 5 * rate], rate)


def bad_audio() -> list[tuple[str, common_pb2.Audio]]:
    """Audio no service can use (common.proto's Audio rules): no samples at all, NaN samples, samples of
    1e30 (full scale is 1.0), rates no audio has (1 Hz; above 384 kHz), and bytes that are no whole
    number of samples, two channels, an unspecified encoding."""
    empty = common_pb2.Audio(sample_rate=16000, channels=1, encoding=common_pb2.PCM_S16LE)
    nan = encode_audio(AudioClip(np.full(1600, np.nan, np.float32), 16000))
    huge = encode_audio(AudioClip(np.full(1600, 1e30, np.float32), 16000))
    tone = (0.3 * np.sin(np.arange(16000) / 10)).astype(np.float32)
    one_hz = encode_audio(AudioClip(tone[:8], 1))
    too_fast = encode_audio(AudioClip(tone, 10_000_000))
    good = encode_audio(AudioClip(tone, 16000))
    partial = common_pb2.Audio(data=good.data[:-1], sample_rate=16000, channels=1, encoding=good.encoding)
    stereo = common_pb2.Audio(data=good.data, sample_rate=16000, channels=2, encoding=good.encoding)
    unspecified = common_pb2.Audio(data=good.data, sample_rate=16000, channels=1)
    return [
        ("empty", empty),
        ("NaN", nan),
        ("huge samples", huge),
        ("1 Hz", one_hz),
        ("10 MHz", too_fast),
        ("partial sample", partial),
        ("2 channels", stereo),
        ("no encoding", unspecified),
    ]

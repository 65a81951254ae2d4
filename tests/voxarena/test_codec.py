"""Stored audio is byte-reproducible: the same samples always give the same WAV bytes (and sha256)."""

from __future__ import annotations

import io
import time

import numpy as np
import scipy.io.wavfile
import soundfile as sf

from voxarena.codec import AudioClip, clip_to_wav_bytes, read_audio_file


def _clip(dtype: str) -> AudioClip:
    x = np.random.default_rng(3).standard_normal(2001).astype(np.float32) * 0.2
    return AudioClip(samples=(x * 32767).astype(np.int16) if dtype == "int16" else x, sample_rate=16000)


def test_float_wav_bytes_do_not_depend_on_the_time_of_writing():
    clip = _clip("float32")
    first = clip_to_wav_bytes(clip)
    time.sleep(1.1)  # libsndfile's PEAK chunk carries a timestamp in seconds
    assert clip_to_wav_bytes(clip) == first
    assert b"PEAK" not in first


def test_wavs_without_peak_read_back_exactly_by_two_readers():
    for dtype in ("float32", "int16"):
        clip = _clip(dtype)
        wav = clip_to_wav_bytes(clip)
        assert int.from_bytes(wav[4:8], "little") == len(wav) - 8  # RIFF size consistent
        rate, data = scipy.io.wavfile.read(io.BytesIO(wav))  # an independent parser
        assert rate == 16000 and data.dtype == clip.samples.dtype
        np.testing.assert_array_equal(data, clip.samples)
        back = read_audio_file(io.BytesIO(wav))
        np.testing.assert_array_equal(back.samples, clip.samples)
        assert sf.info(io.BytesIO(wav)).frames == clip.samples.size

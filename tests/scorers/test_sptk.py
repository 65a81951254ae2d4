"""voxarena.scorers.sptk.sp2mc returns pysptk.sp2mc's numbers bit for bit (MCD's definition names pysptk)."""

from __future__ import annotations

import numpy as np
import pysptk
import pytest
import pyworld as pw

from voxarena.codec import read_audio_file
from voxarena.scorers.sptk import sp2mc


def world_envelope(x: np.ndarray, fs: int = 16000) -> np.ndarray:
    x = x.astype(np.float64)
    f0, t = pw.dio(x, fs, frame_period=5.0)
    return pw.cheaptrick(x, pw.stonemask(x, f0, t, fs), t, fs)


@pytest.mark.parametrize("order, alpha", [(24, 0.42), (0, 0.42), (1, 0.35), (39, 0.55), (24, 0.0)])
def test_equals_pysptk_on_random_spectra(order, alpha):
    sp = np.exp(np.random.default_rng(order).standard_normal((137, 513)))
    assert np.array_equal(sp2mc(sp, order, alpha), pysptk.sp2mc(sp, order, alpha))


def test_equals_pysptk_on_speech_envelopes(speech_dir):
    flacs = sorted((speech_dir / "LibriSpeech" / "test-clean").glob("*/*/*.flac"))[:3]
    for flac in flacs:
        sp = world_envelope(read_audio_file(str(flac)).as_float32())
        ours, theirs = sp2mc(sp, 24, 0.42), pysptk.sp2mc(sp, 24, 0.42)
        assert ours.shape == theirs.shape == (sp.shape[0], 25)
        assert np.array_equal(ours, theirs), flac.name


def test_bit_equality_is_a_sharp_check():
    """Equality above is not loose: a warping constant 1e-12 away already differs from pysptk's numbers."""
    sp = np.exp(np.random.default_rng(1).standard_normal((20, 513)))
    ours, theirs = sp2mc(sp, 24, 0.42 + 1e-12), pysptk.sp2mc(sp, 24, 0.42)
    assert not np.array_equal(ours, theirs)
    assert np.allclose(ours, theirs, rtol=0, atol=1e-9)


def test_rejects_a_single_frame_vector():
    with pytest.raises(ValueError, match="frames, bins"):
        sp2mc(np.ones(513), 24, 0.42)

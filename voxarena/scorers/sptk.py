"""pysptk's ``sp2mc`` (spectral envelope to mel-cepstrum): the same numbers, about 5x faster (its loop 17x).

``pysptk.sp2mc`` takes the log of the power spectrum, its inverse real FFT (c0 halved) and then SPTK's
``freqt`` (the frequency warping to the mel scale) frame by frame: a recursion over the 1024 cepstral
coefficients of each frame, in C, one frame per call through ``np.apply_along_axis``. That loop was half of
MCD's time per clip. Here ``freqt`` runs the same recursion (SPTK 3.x ``freqt.c``) with the frames as the
innermost loop, compiled by numba without fast-math: the same additions and multiplications in the same
order for every frame, only several frames per instruction. IEEE arithmetic makes the result bit-identical
to pysptk's (tests/scorers/test_sptk.py checks it on speech and on random spectra).
"""

from __future__ import annotations

import numba
import numpy as np


def _freqt(c: np.ndarray, order: int, alpha: float) -> np.ndarray:
    """SPTK's freqt of every column of ``c`` (coefficients x frames) to ``order`` + 1 coefficients."""
    frames = c.shape[1]
    b = 1.0 - alpha * alpha
    g = np.zeros((order + 1, frames))  # g[j]: SPTK's g[j] of each frame
    prev = np.empty(frames)  # SPTK's d[j - 1]: the g[j - 1] of the step before
    for i in range(c.shape[0] - 1, -1, -1):
        ci, g0 = c[i], g[0]
        for f in range(frames):
            prev[f] = g0[f]
            g0[f] = ci[f] + alpha * prev[f]
        if order >= 1:
            g1 = g[1]
            for f in range(frames):
                d1 = g1[f]
                g1[f] = b * prev[f] + alpha * d1
                prev[f] = d1
        for j in range(2, order + 1):
            gj, below = g[j], g[j - 1]
            for f in range(frames):
                dj = gj[f]
                gj[f] = prev[f] + alpha * (dj - below[f])
                prev[f] = dj
    return g


# Compiled when this module is imported: about 0.6 s, or read from numba's cache (NUMBA_CACHE_DIR, which local
# mode and the images set) when a process compiled it before. Without a writable cache it compiles each time.
_SIGNATURE = "float64[:, ::1](float64[:, ::1], int64, float64)"
try:
    _freqt_frames = numba.njit(_SIGNATURE, fastmath=False, cache=True)(_freqt)
except RuntimeError:  # numba: "cannot cache function ...: no locator available"
    _freqt_frames = numba.njit(_SIGNATURE, fastmath=False, cache=False)(_freqt)


def sp2mc(powerspec: np.ndarray, order: int, alpha: float) -> np.ndarray:
    """``pysptk.sp2mc(powerspec, order, alpha)`` for a (frames, bins) power spectrogram: (frames, order + 1)."""
    if powerspec.ndim != 2:
        raise ValueError(f"sp2mc takes a (frames, bins) spectrogram, not shape {powerspec.shape}")
    c = np.fft.irfft(np.log(powerspec.astype(np.float64, copy=False)))
    c[:, 0] /= 2.0
    return np.ascontiguousarray(_freqt_frames(np.ascontiguousarray(c.T), int(order), float(alpha)).T)

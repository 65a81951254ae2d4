"""STOI and extended STOI as pystoi computes them, with bounded memory on long clips.

``pystoi.stoi`` stacks every 30-frame segment of the 1/3-octave envelopes at once (segments x 15 bands x
30 frames, float64, in about ten arrays): 1.8 GB on a 600 s clip. Both measures are a mean over
segments of a statistic of one segment, after steps that look at the whole signal (silent-frame removal,
the STFT) and are done here on the whole signal as pystoi does them. So the segments are taken
SEGMENT_CHUNK at a time and their statistics summed: the same definition and the same value up to
floating-point summation order (tests: equal within 1e-12 of pystoi on a clip of several chunks).
"""

from __future__ import annotations

import numpy as np

SEGMENT_CHUNK = 2000  # segments per step: ~7 MB per array


def stoi(x: np.ndarray, y: np.ndarray, fs: int, extended: bool = False) -> float:
    """pystoi.stoi(x, y, fs, extended) with the segments processed SEGMENT_CHUNK at a time."""
    return stoi_and_estoi(x, y, fs)[1 if extended else 0]


def stoi_and_estoi(x: np.ndarray, y: np.ndarray, fs: int) -> tuple[float, float]:
    """(pystoi.stoi(x, y, fs), pystoi.stoi(x, y, fs, extended=True)): the two share everything up to the
    segments' statistic (resampling, silent-frame removal, STFT, 1/3-octave bands), computed once."""
    from pystoi import utils
    from pystoi.stoi import BETA, DYN_RANGE, FS, N_FRAME, NFFT, OBM, N

    if x.shape != y.shape:
        raise ValueError(f"x and y should have the same length, found {x.shape} and {y.shape}")
    if fs != FS:
        x = utils.resample_oct(x, FS, fs)
        y = utils.resample_oct(y, FS, fs)
    x, y = utils.remove_silent_frames(x, y, DYN_RANGE, N_FRAME, int(N_FRAME / 2))
    x_spec = utils.stft(x, N_FRAME, NFFT, overlap=2).transpose()
    y_spec = utils.stft(y, N_FRAME, NFFT, overlap=2).transpose()
    n = N
    if x_spec.shape[-1] < n:
        return 1e-5, 1e-5  # pystoi's answer (with a warning) when too few frames are left
    x_tob = np.sqrt(np.matmul(OBM, np.square(np.abs(x_spec))))
    y_tob = np.sqrt(np.matmul(OBM, np.square(np.abs(y_spec))))
    ends = range(n, x_tob.shape[1] + 1)
    total, total_extended = 0.0, 0.0
    for start in range(0, len(ends), SEGMENT_CHUNK):
        chunk = ends[start : start + SEGMENT_CHUNK]
        xs = np.array([x_tob[:, m - n : m] for m in chunk])
        ys = np.array([y_tob[:, m - n : m] for m in chunk])
        total_extended += _extended_sum(xs, ys, n)
        total += _stoi_sum(xs, ys, BETA)
    segments = len(ends)
    return float(total / (segments * x_tob.shape[0])), float(total_extended / segments)


def _extended_sum(xs: np.ndarray, ys: np.ndarray, n: int) -> float:
    """pystoi's ESTOI numerator over these segments: sum(x_n * y_n / N)."""
    from pystoi import utils

    return float(np.sum(utils.row_col_normalize(xs) * utils.row_col_normalize(ys) / n))


def _stoi_sum(xs: np.ndarray, ys: np.ndarray, beta: float) -> float:
    """pystoi's STOI numerator over these segments: the sum of the band correlations."""
    from pystoi import utils

    scale = np.linalg.norm(xs, axis=2, keepdims=True) / (np.linalg.norm(ys, axis=2, keepdims=True) + utils.EPS)
    y_primes = np.minimum(ys * scale, xs * (1 + 10 ** (-beta / 20)))
    y_primes = y_primes - np.mean(y_primes, axis=2, keepdims=True)
    xs = xs - np.mean(xs, axis=2, keepdims=True)
    y_primes /= np.linalg.norm(y_primes, axis=2, keepdims=True) + utils.EPS
    xs /= np.linalg.norm(xs, axis=2, keepdims=True) + utils.EPS
    return float(np.sum(y_primes * xs))

"""LFCC front end as the ASVspoof 2019 LA LFCC-GMM baseline defines it (``extract_lfcc.m``).

20 ms Hamming frames with 50% overlap (10 ms shift) at 16 kHz, 512-point FFT, power spectrum,
20 linearly spaced triangular filters from 0 to fs/2, log10 of the filter energies, orthonormal
DCT-II keeping 20 coefficients (c0 included), then deltas and double deltas with the ±1-frame
difference of ``deltas(x, 3)`` (edge frames repeated): 60 coefficients per frame.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
from scipy.fft import dct


@dataclass(frozen=True)
class LfccConfig:
    sample_rate: int = 16000
    window_ms: float = 20.0
    shift_ms: float = 10.0
    n_fft: int = 512
    n_filters: int = 20
    n_ceps: int = 20
    max_freq: float = 8000.0
    delta_window: int = 3

    def as_dict(self) -> dict:
        return asdict(self)


def linear_filterbank(cfg: LfccConfig) -> np.ndarray:
    """(n_fft/2+1, n_filters) triangular filters with linearly spaced edges over [0, max_freq]."""
    freqs = np.linspace(0.0, cfg.sample_rate / 2.0, cfg.n_fft // 2 + 1)
    edges = np.linspace(0.0, cfg.max_freq, cfg.n_filters + 2)
    bank = np.zeros((freqs.size, cfg.n_filters))
    for k in range(cfg.n_filters):
        lo, mid, hi = edges[k], edges[k + 1], edges[k + 2]
        rising = (freqs - lo) / (mid - lo)
        falling = (hi - freqs) / (hi - mid)
        bank[:, k] = np.clip(np.minimum(rising, falling), 0.0, None)
    return bank


def deltas(x: np.ndarray, window: int = 3) -> np.ndarray:
    """Regression-free deltas of Ellis' ``deltas.m``: sum_k k*(x[t+k]-x[t-k]) over k<=window//2."""
    half = window // 2
    padded = np.concatenate([np.repeat(x[:1], half, axis=0), x, np.repeat(x[-1:], half, axis=0)])
    out = np.zeros_like(x)
    n = x.shape[0]
    for k in range(1, half + 1):
        out += k * (padded[half + k : half + k + n] - padded[half - k : half - k + n])
    return out


def cepstra(signal: np.ndarray, cfg: LfccConfig = LfccConfig()) -> np.ndarray:
    """(frames, n_ceps) static LFCCs of a float signal at ``cfg.sample_rate`` (a signal shorter than one
    window is zero-padded to one frame). Each frame depends on its own samples only, so the frames of
    a signal's stretch are those of the whole signal: the streaming detector computes them as audio comes."""
    win, hop = frame_sizes(cfg)
    x = np.asarray(signal, dtype=np.float64)
    if x.size < win:
        x = np.pad(x, (0, win - x.size))
    n_frames = 1 + (x.size - win) // hop
    idx = np.arange(win)[None, :] + hop * np.arange(n_frames)[:, None]
    frames = x[idx] * np.hamming(win)[None, :]
    power = np.abs(np.fft.rfft(frames, n=cfg.n_fft, axis=1)) ** 2
    energies = power @ linear_filterbank(cfg)
    ceps: np.ndarray = dct(np.log10(energies + np.finfo(float).eps), type=2, norm="ortho", axis=1)[:, : cfg.n_ceps]
    return ceps


def frame_sizes(cfg: LfccConfig) -> tuple[int, int]:
    """The window and the shift, in samples at ``cfg.sample_rate``."""
    return int(round(cfg.window_ms * cfg.sample_rate / 1000)), int(round(cfg.shift_ms * cfg.sample_rate / 1000))


def with_deltas(ceps: np.ndarray, cfg: LfccConfig = LfccConfig()) -> np.ndarray:
    """Static coefficients, deltas and double deltas side by side: (frames, 3*n_ceps)."""
    d1 = deltas(ceps, cfg.delta_window)
    d2 = deltas(d1, cfg.delta_window)
    return np.hstack([ceps, d1, d2])


def lfcc(signal: np.ndarray, cfg: LfccConfig = LfccConfig()) -> np.ndarray:
    """(frames, 3*n_ceps) LFCC + delta + double delta of a float signal at ``cfg.sample_rate``."""
    return with_deltas(cepstra(signal, cfg), cfg)


def frame_segments(
    values: np.ndarray, n_segments: int, hop_seconds: float, cfg: LfccConfig = LfccConfig()
) -> np.ndarray:
    """Per-frame ``values`` as ``n_segments`` segment scores of ``hop_seconds``: the mean of the frames whose
    centre falls in each segment; a segment no centre falls in (the clip's end) takes the nearest frame's.
    Positions are counted in samples at the front end's rate, so a centre on a boundary is placed exactly."""
    win, shift = frame_sizes(cfg)
    width = int(round(hop_seconds * cfg.sample_rate))
    centre_samples = np.arange(values.size) * shift + win // 2
    which = np.minimum(centre_samples // width, n_segments - 1)
    sums, counts = np.bincount(which, values, minlength=n_segments), np.bincount(which, minlength=n_segments)
    out = np.empty(n_segments)
    have = counts > 0
    out[have] = sums[have] / counts[have]
    segment_centres = (np.arange(n_segments) + 0.5) * hop_seconds
    nearest = np.abs(segment_centres[~have, None] - centre_samples[None, :] / cfg.sample_rate).argmin(axis=1)
    out[~have] = values[nearest]
    return out


def frame_truth(fake_spans: list[tuple[float, float]], n_frames: int, cfg: LfccConfig = LfccConfig()) -> np.ndarray:
    """1 for each frame whose 10 ms cell around its centre holds no fake sample, 0 otherwise; ``fake_spans``
    in seconds [start, end). The training target of frame-level detectors."""
    win, shift = frame_sizes(cfg)
    centres = (np.arange(n_frames) * shift + win // 2) / cfg.sample_rate
    half = shift / cfg.sample_rate / 2
    out = np.ones(n_frames, dtype=np.float32)
    for start, end in fake_spans:
        out[(centres + half > start) & (centres - half < end)] = 0.0
    return out

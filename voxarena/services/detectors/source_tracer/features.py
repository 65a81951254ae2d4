"""The source tracer's front end: one fixed-length vector per clip, at 16 kHz, numpy only.

What makes a system recognisable is less in any one frame than in its habits over a whole clip: the
spectral envelope it favours, how its frames move, how its silences look. The vector holds

- the mean and standard deviation over frames of the ASVspoof LFCCs with deltas and double deltas
  (``voxarena.services.detectors.lfcc_gmm.lfcc``: 20 ms Hamming frames, 10 ms shift, 20 linear filters
  to 8 kHz, 60 coefficients): 120 values;
- the long-term average spectrum: the log10 of the mean power in ``LTAS_BANDS`` equal bands of 0-8 kHz,
  minus their mean (the shape, not the level): vocoders and codecs leave their marks in the band
  edges and the highs;
- the frame log-energy (dB re full scale) at the 5th, 50th and 95th percentiles and the share of
  frames more than 60 dB below the loudest: digital silence, noise floors and dynamics.

Every input is resampled to 16 kHz first (soxr HQ): the native rate would be a giveaway that any
channel erases, so the tracer never sees it.
"""

from __future__ import annotations

import numpy as np

from voxarena.codec import resample
from voxarena.services.detectors.lfcc_gmm.lfcc import LfccConfig, frame_sizes, lfcc

SAMPLE_RATE = 16000
LTAS_BANDS = 64
SILENCE_DB = 60.0
_CFG = LfccConfig()


def _frames(x: np.ndarray) -> np.ndarray:
    win, hop = frame_sizes(_CFG)
    if x.size < win:
        x = np.pad(x, (0, win - x.size))
    n = 1 + (x.size - win) // hop
    return x[np.arange(win)[None, :] + hop * np.arange(n)[:, None]]


def clip_features(samples: np.ndarray, sample_rate: int) -> np.ndarray:
    """The feature vector (``dimension()`` values, float64) of one mono clip."""
    x = resample(np.asarray(samples, dtype=np.float32), sample_rate, SAMPLE_RATE).astype(np.float64)
    ceps = lfcc(x, _CFG)
    frames = _frames(x) * np.hamming(frame_sizes(_CFG)[0])[None, :]
    power = np.abs(np.fft.rfft(frames, n=_CFG.n_fft, axis=1)) ** 2  # (frames, 257)
    bands = np.array_split(np.arange(power.shape[1] - 1), LTAS_BANDS)  # DC..just below Nyquist
    ltas = np.log10(np.array([power[:, b].mean() for b in bands]) + 1e-12)
    energy_db = 10 * np.log10(power.sum(axis=1) / _CFG.n_fft + 1e-12)
    quiet = np.mean(energy_db < energy_db.max() - SILENCE_DB)
    return np.concatenate(
        [
            ceps.mean(axis=0),
            ceps.std(axis=0),
            ltas - ltas.mean(),
            np.percentile(energy_db, [5, 50, 95]),
            [quiet],
        ]
    )


def dimension() -> int:
    return 2 * 3 * _CFG.n_ceps + LTAS_BANDS + 4

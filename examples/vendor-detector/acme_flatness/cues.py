"""Acme Flatness's scorer: three spectral cues of a clip and how far they lie from natural speech's.

Per 32 ms frame (Hann window, half overlap, at 16 kHz) of the clip's active part (frames within
40 dB of its loudest), the spectral flatness: the geometric over the arithmetic mean of the power
spectrum, 0 for a pure tone, 1 for white noise. The cues:

- ``flatness_spread``: the standard deviation of log flatness over active frames. Speech alternates
  peaky voiced frames with flatter fricatives and breath; a rule-based source alternates far harder.
- ``high_band``: log of the 4-8 kHz share of the energy (breath and frication live up there; a
  voice made at 8 kHz and upsampled has none).
- ``mean_log_flatness``: the average log flatness (a recording's noise floor fills the spectral
  valleys that a clean synthetic source leaves empty).

The model is one diagonal Gaussian of bona fide speech over the cues: the score is its log density up
to a constant, ``-0.5 * sum(((cue - mean) / scale) ** 2)``, so 0 is "typical natural speech" and a
clip scores lower the further it lies from it: higher = more bona fide. ``NATURAL`` holds round numbers
near what read speech at 16 kHz gives, set by hand, not fitted; the score is no log-likelihood ratio
(the service declares itself not calibrated). A real vendor would fit a two-class model on labelled
dev data and calibrate it. Nothing here knows about VoxArena: this is the vendor's model, which
``service.py`` wraps.
"""

from __future__ import annotations

import numpy as np

RATE = 16000
FRAME = 512  # samples: 32 ms
CUES = ("flatness_spread", "high_band", "mean_log_flatness")
# cue -> (mean, scale) for natural read speech
NATURAL = {"flatness_spread": (2.0, 0.5), "high_band": (-4.5, 2.0), "mean_log_flatness": (-5.5, 1.5)}
ACTIVE_DB = 40.0  # frames this far under the loudest one are silence and ignored
EPS = 1e-10


def frames(x: np.ndarray, frame: int = FRAME) -> np.ndarray:
    """Hann-windowed frames with half overlap; a clip shorter than one frame is zero-padded to one."""
    if len(x) < frame:
        x = np.pad(x, (0, frame - len(x)))
    hop = frame // 2
    count = 1 + (len(x) - frame) // hop
    index = np.arange(frame)[None, :] + hop * np.arange(count)[:, None]
    windowed: np.ndarray = x[index] * np.hanning(frame)
    return windowed


def cues(x: np.ndarray) -> np.ndarray | None:
    """The three cues (in ``CUES`` order) of float samples at ``RATE``; None for a silent clip."""
    power = np.abs(np.fft.rfft(frames(x.astype(np.float64)), axis=1)) ** 2
    energy = power.sum(axis=1)
    active = (energy > EPS) & (10 * np.log10(energy + EPS) > 10 * np.log10(energy.max() + EPS) - ACTIVE_DB)
    if not active.any():
        return None
    p = power[active] + EPS
    log_flatness = np.mean(np.log(p), axis=1) - np.log(np.mean(p, axis=1))
    high = p[:, np.fft.rfftfreq(FRAME, 1 / RATE) >= 4000].sum() / p.sum()
    return np.array([np.std(log_flatness), np.log(high + EPS), np.mean(log_flatness)])


def score(x: np.ndarray) -> float:
    """Higher = more bona fide: 0 at natural speech's typical cues, lower the further from them.
    A silent clip has no cues: it scores as far from speech as this model reports (-100)."""
    c = cues(x)
    if c is None:
        return -100.0
    mean, scale = (np.array([NATURAL[name][k] for name in CUES]) for k in (0, 1))
    return float(max(-100.0, -0.5 * np.sum(((c - mean) / scale) ** 2)))

"""The attack's perturbation: per-band gains plus per-band shaped noise, projected onto a perceptual budget.

A candidate is a point ``z`` of the unit box ``[-1, 1]^d`` (the search works there, so one step size
fits every parameter); :meth:`Perturbation.apply` maps it to decibels and to audio:

- ``n_bands`` gains, ``z * max_gain_db`` dB each, spread over frequency by a fixed filterbank: band
  centres equally spaced on the mel scale from 0 Hz to Nyquist, and the gain in dB of every STFT bin
  linearly interpolated between the two nearest centres (the weights of a bin sum to 1, so equal gains
  are a flat gain);
- with ``noise``, ``n_bands`` noise levels, from ``noise_floor_db`` (z = -1) to 0 dB (z = +1) relative to
  the clip's RMS, shaping one seeded white noise through the same filterbank.

Then the budget (:class:`Budget`): the perturbation ``attacked - original`` is scaled down until its SNR
against the original is at least ``snr_db``. Scaling the difference is the Euclidean projection onto the
ball ``||y - x|| <= ||x|| 10^(-snr_db/20)``, so the attacked clip stays the nearest point of the budget
to what the parameters asked for. The SNR is measured on the float32 samples actually sent (rounding
and clipping to [-1, 1] included), so the budget holds for the bytes a detector receives.

Everything here is a pure function of the clip, the parameters and the seed (numpy / scipy only).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.signal import istft, stft

from voxarena.codec import AudioClip

N_FFT = 512  # 32 ms at 16 kHz: the usual speech analysis frame
HOP = 128  # 75 % overlap: the Hann window's constant-overlap-add condition holds, so a 0 dB gain gives the clip back
MAX_SHRINKS = 50  # rounding needs one or two; more means a bug


class AttackArgumentError(ValueError):
    """A bad argument to the attack: the message names the argument and the reason."""


@dataclass(frozen=True)
class Budget:
    """The perceptual budget every queried candidate satisfies.

    ``snr_db``: minimum SNR of the perturbation (attacked - original) against the original, in dB.
    ``max_gain_db``: bound on every band gain, in dB (+-).
    """

    snr_db: float = 30.0
    max_gain_db: float = 6.0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.snr_db) and self.snr_db > 0):
            raise AttackArgumentError(f"snr_db: must be a positive number of dB, got {self.snr_db}")
        if not (math.isfinite(self.max_gain_db) and self.max_gain_db > 0):
            raise AttackArgumentError(f"max_gain_db: must be a positive number of dB, got {self.max_gain_db}")


@dataclass(frozen=True)
class Candidate:
    """One attacked clip: the parameters in dB, the scale the budget applied (1 = untouched) and the SNR."""

    clip: AudioClip
    gains_db: tuple[float, ...]
    noise_db: tuple[float, ...]
    scale: float
    snr_db: float


def snr_db(original: np.ndarray, attacked: np.ndarray) -> float:
    """SNR of ``attacked - original`` against ``original``, in dB (float64; inf for no change)."""
    x = original.astype(np.float64)
    d = attacked.astype(np.float64) - x
    noise = float(np.sum(d * d))
    return math.inf if noise == 0 else 10 * math.log10(float(np.sum(x * x)) / noise)


def mel(hz: np.ndarray) -> np.ndarray:
    return 2595.0 * np.log10(1.0 + hz / 700.0)


def band_weights(n_bands: int, sample_rate: int, n_fft: int = N_FFT) -> np.ndarray:
    """(bins, n_bands): the share of each band in each STFT bin's gain; every row sums to 1."""
    freqs = np.fft.rfftfreq(n_fft, 1.0 / sample_rate)
    centres = np.linspace(0.0, float(mel(np.array(sample_rate / 2.0))), n_bands)
    eye = np.eye(n_bands)
    return np.stack([np.interp(mel(freqs), centres, eye[k]) for k in range(n_bands)], axis=1)


@dataclass
class Perturbation:
    """The parameterisation of one clip (its STFT and noise computed once; :meth:`apply` is pure)."""

    clip: AudioClip
    budget: Budget
    n_bands: int = 8
    noise: bool = True
    noise_floor_db: float = -60.0
    seed: int = 0
    _x: np.ndarray = field(init=False, repr=False)
    _spec: np.ndarray = field(init=False, repr=False)
    _noise_spec: np.ndarray = field(init=False, repr=False)
    _weights: np.ndarray = field(init=False, repr=False)
    _radius: float = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.n_bands < 2:
            raise AttackArgumentError(f"n_bands: at least 2 bands, got {self.n_bands}")
        if not (math.isfinite(self.noise_floor_db) and self.noise_floor_db < 0):
            raise AttackArgumentError(f"noise_floor_db: must be negative, got {self.noise_floor_db}")
        x = self.clip.as_float32().astype(np.float64)
        if x.ndim != 1:
            raise AttackArgumentError(f"clip: must be mono (1-D samples), got shape {x.shape}")
        if x.size < 4 * N_FFT:
            raise AttackArgumentError(
                f"clip: {x.size} samples ({self.clip.duration:.3f} s at {self.clip.sample_rate} Hz) is shorter "
                f"than the {4 * N_FFT} samples the {N_FFT}-point filterbank needs"
            )
        if not np.all(np.isfinite(x)) or float(np.max(np.abs(x))) > 1.0:
            raise AttackArgumentError("clip: samples must be finite and within full scale [-1, 1]")
        energy = float(np.sum(x * x))
        if energy == 0:
            raise AttackArgumentError("clip: is silent (zero energy), so no SNR budget can be met")
        self._x = x
        self._spec = self._stft(x)
        rng = np.random.default_rng(self.seed)
        self._noise_spec = self._stft(rng.standard_normal(x.size) * math.sqrt(energy / x.size))
        self._weights = band_weights(self.n_bands, self.clip.sample_rate)
        self._radius = math.sqrt(energy) * 10 ** (-self.budget.snr_db / 20)

    @property
    def dimension(self) -> int:
        return self.n_bands * (2 if self.noise else 1)

    def start(self) -> np.ndarray:
        """The search's starting point: flat gains, noise at its floor."""
        z = np.zeros(self.dimension)
        z[self.n_bands :] = -1.0
        return z

    def to_db(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(gains, noise levels) in dB for a point of the unit box (clipped to it)."""
        z = np.clip(np.asarray(z, dtype=np.float64), -1.0, 1.0)
        if z.shape != (self.dimension,):
            raise AttackArgumentError(f"parameters: expected {self.dimension} values, got shape {z.shape}")
        gains = z[: self.n_bands] * self.budget.max_gain_db
        noise = self.noise_floor_db * (1 - z[self.n_bands :]) / 2
        return gains, noise

    def apply(self, z: np.ndarray) -> Candidate:
        """The attacked clip for parameters ``z``, projected onto the budget (float32 samples)."""
        gains, noise = self.to_db(z)
        spec = self._spec * 10 ** ((self._weights @ gains) / 20)[:, None]
        if self.noise:
            spec = spec + self._noise_spec * 10 ** ((self._weights @ noise) / 20)[:, None]
        delta = self._istft(spec) - self._x
        norm = float(np.linalg.norm(delta))
        scale = 1.0 if norm <= self._radius else self._radius / norm
        samples, measured = self._project(delta, scale)
        # float32 rounding and clipping can cost a few 1e-6 dB: shrink until the bytes sent meet the budget
        shrinks = 0
        while measured < self.budget.snr_db:
            shrinks += 1
            if shrinks > MAX_SHRINKS:
                raise RuntimeError(f"budget: could not bring the SNR to {self.budget.snr_db} dB (at {measured} dB)")
            scale *= 10 ** (-(self.budget.snr_db - measured + 1e-6) / 20)
            samples, measured = self._project(delta, scale)
        return Candidate(
            AudioClip(samples, self.clip.sample_rate),
            tuple(float(g) for g in gains),
            tuple(float(n) for n in noise) if self.noise else (),
            scale,
            measured,
        )

    def _project(self, delta: np.ndarray, scale: float) -> tuple[np.ndarray, float]:
        samples = np.clip(self._x + scale * delta, -1.0, 1.0).astype(np.float32)
        return samples, snr_db(self._x, samples)

    def _stft(self, x: np.ndarray) -> np.ndarray:
        return stft(x, nperseg=N_FFT, noverlap=N_FFT - HOP, window="hann", boundary="even", padded=True)[2]

    def _istft(self, spec: np.ndarray) -> np.ndarray:
        y = istft(spec, nperseg=N_FFT, noverlap=N_FFT - HOP, window="hann", boundary=True)[1]
        return np.asarray(y[: self._x.size], dtype=np.float64)

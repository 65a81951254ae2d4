"""Sinc band-pass filter bank (Ravanelli & Bengio's SincNet), as the first layer of RawNet2 and AASIST.

Fixed (not learned) band-pass filters whose cut-off frequencies are equally spaced on the mel scale,
windowed by a Hamming window: in RawNet2 and AASIST the sinc layer's filters stay fixed. Built with
numpy so the filter bank is exactly reproducible; the networks hold it as a convolution buffer.
"""

from __future__ import annotations

import numpy as np


def mel_sinc_filters(n_filters: int, kernel_size: int, sample_rate: int = 16000) -> np.ndarray:
    """(n_filters, kernel_size) band-pass impulse responses; kernel_size must be odd."""
    if kernel_size % 2 == 0:
        raise ValueError(f"kernel_size {kernel_size} must be odd")
    nfft = 512
    freqs = np.linspace(0, sample_rate / 2, nfft // 2 + 1)
    mel = 2595 * np.log10(1 + freqs / 700)
    edges_mel = np.linspace(mel.min(), mel.max(), n_filters + 1)
    edges_hz = 700 * (10 ** (edges_mel / 2595) - 1)
    t = np.arange(-(kernel_size - 1) / 2, (kernel_size - 1) / 2 + 1) / sample_rate
    window = np.hamming(kernel_size)
    filters = np.empty((n_filters, kernel_size))
    for i in range(n_filters):
        lo, hi = edges_hz[i], edges_hz[i + 1]
        # ideal band-pass = difference of two low-pass sincs (np.sinc is sin(pi x)/(pi x)), with
        # frequencies normalised by the sample rate so the pass band has unit gain
        filters[i] = (2 * hi * np.sinc(2 * hi * t) - 2 * lo * np.sinc(2 * lo * t)) * window / sample_rate
    return filters.astype(np.float32)

"""Perth-Net (Resemble AI's implicit audio watermarker, ``resemble-perth`` 1.0.1, MIT) served without torch.

The package works on the STFT magnitude at 32 kHz (2048-point periodic Hann window and FFT, hop 320,
torchaudio's centred reflect-padded STFT): each magnitude is mapped to dB (floor 1e-9), then to
[0, 1] over [-180, +15] dB. Only the 128 lowest bins (0-2 kHz) carry the mark.

- **Embed**: a convolution stack (``encoder.onnx``) turns those 128 bins into a residual, kept only on
  the loud frames (``magmask``: a frame whose summed normalised magnitude is above 5 % of the loudest
  frame's), added to the magnitude; the signal is resynthesised with the original phase (torch's
  ``istft``: window-square normalised overlap-add, so the output is hop x (frames - 1) samples long).
- **Detect**: three convolution stacks (``decoder.onnx``) read the 128 bins at three time scales (the
  frames linearly stretched to 1.25x and 0.75x, align_corners) and each answer a per-frame mark and
  attention; their means over the loud frames are mixed by the softmax of the attentions into one
  value per clip: near 1 marked, near 0 not (the package clips it to [0, 1] and rounds it).

The convolution stacks are the converted part (``voxarena/convert/perth.py``, checked against the package
on the check clips); everything here is numpy and equals the package's torch arithmetic to float32
rounding. Rates other than 32 kHz are resampled as the package does: soxr HQ to embed and back
(librosa's ``soxr_hq``), scipy's polyphase filter to detect (librosa's ``polyphase``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voxarena.converted import SourceWeights

SOURCE = SourceWeights(
    package="resemble-perth",
    version="1.0.1",
    file="perth/perth_net/pretrained/implicit/perth_net_250000.pth.tar",
    sha256="a15bce457ebc53ce5e6c9c3f11df78cf7ee2bf9cdab0a798902135b4c4027670",
    licence="MIT",
    upstream="Resemble AI, Perth-Net implicit watermarker (github.com/resemble-ai/Perth), step 250,000",
)
ENCODER_FILE = "encoder.onnx"
DECODER_FILE = "decoder.onnx"
CONVERTED_NAME = "perth"

SAMPLE_RATE = 32000
N_FFT = 2048
HOP = 320
SUBBAND = 128  # round(1025 x 2000 / 16000): the bins below max_wmark_freq 2 kHz
MAGNITUDE_MIN = 1e-9
HEADROOM_DB = 15.0
MASK_SHARE = 0.05
MIN_SAMPLES = N_FFT // 2 + 1  # the reflect padding needs more samples than half a window
_MIN_DB = 20 * math.log10(MAGNITUDE_MIN)


def _window() -> np.ndarray:
    return 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(N_FFT) / N_FFT)  # periodic Hann (torch.hann_window)


def stft(x: np.ndarray) -> np.ndarray:
    """(N_FFT // 2 + 1, 1 + len(x) // HOP) complex spectrum, as torchaudio's centred reflect-padded one."""
    padded = np.pad(np.asarray(x, dtype=np.float64), N_FFT // 2, mode="reflect")
    frames = np.lib.stride_tricks.sliding_window_view(padded, N_FFT)[::HOP]
    spec: np.ndarray = np.fft.rfft(frames * _window(), axis=1).T
    return spec


def istft(spec: np.ndarray) -> np.ndarray:
    """torch.istft with center=True and no length: HOP x (frames - 1) samples."""
    n = spec.shape[1]
    w = _window()
    frames = np.fft.irfft(spec.T, n=N_FFT, axis=1) * w
    total = N_FFT + HOP * (n - 1)
    y, wsum = np.zeros(total), np.zeros(total)
    for t in range(n):
        y[t * HOP : t * HOP + N_FFT] += frames[t]
        wsum[t * HOP : t * HOP + N_FFT] += w * w
    y = y[N_FFT // 2 : total - N_FFT // 2]
    out: np.ndarray = y / wsum[N_FFT // 2 : total - N_FFT // 2]
    return out


def normalised_magnitude(spec: np.ndarray) -> np.ndarray:
    db = 20 * np.log10(np.maximum(np.abs(spec), MAGNITUDE_MIN))
    out: np.ndarray = (db - _MIN_DB) / (-_MIN_DB + HEADROOM_DB)
    return out


def with_magnitude(normalised: np.ndarray, spec: np.ndarray) -> np.ndarray:
    """The spectrum with ``normalised`` as its magnitude and ``spec``'s phase."""
    db = normalised * (-_MIN_DB + HEADROOM_DB) + _MIN_DB
    out: np.ndarray = 10.0 ** np.minimum(db / 20, 10) * np.exp(1j * np.angle(spec))
    return out


def loud_frames(magnitude: np.ndarray) -> np.ndarray:
    """``magmask``: 1.0 for the frames whose summed magnitude is above MASK_SHARE of the loudest's."""
    s = magnitude.sum(axis=0)
    return (s > s.max() * MASK_SHARE).astype(np.float64)


def stretch_linear(x: np.ndarray, size: int) -> np.ndarray:
    """F.interpolate(mode='linear', align_corners=True) along the last axis."""
    n = x.shape[-1]
    if size == 1 or n == 1:
        return np.repeat(x[..., :1], size, axis=-1)
    pos = np.arange(size) * ((n - 1) / (size - 1))
    lo = np.minimum(np.floor(pos).astype(int), n - 1)
    hi = np.minimum(lo + 1, n - 1)
    frac = pos - lo
    out: np.ndarray = x[..., lo] * (1 - frac) + x[..., hi] * frac
    return out


def stretch_nearest(x: np.ndarray, size: int) -> np.ndarray:
    """F.interpolate(mode='nearest') along the last axis."""
    n = x.shape[-1]
    idx = np.minimum(np.floor(np.arange(size) * np.float32(n / size)).astype(int), n - 1)
    out: np.ndarray = x[..., idx]
    return out


def to_model_rate(x: np.ndarray, rate: int, polyphase: bool) -> np.ndarray:
    """``librosa.resample`` to 32 kHz as the package calls it (length ceil(n x ratio))."""
    if rate == SAMPLE_RATE:
        return np.asarray(x, dtype=np.float64)
    return _resample(x, rate, SAMPLE_RATE, polyphase)


def _resample(x: np.ndarray, rate: int, target: int, polyphase: bool) -> np.ndarray:
    n = int(math.ceil(x.size * target / rate))
    if polyphase:
        from scipy.signal import resample_poly

        g = math.gcd(rate, target)
        y = resample_poly(np.asarray(x, dtype=np.float64), target // g, rate // g)
    else:
        import soxr

        y = soxr.resample(np.asarray(x, dtype=np.float64), rate, target, quality="HQ")
    out: np.ndarray = np.pad(y[:n], (0, max(0, n - y.size)))
    return out


@dataclass
class PerthNet:
    """The converted stacks (onnxruntime sessions) and the arithmetic around them."""

    encoder: object
    decoder: object

    @classmethod
    def load(cls, directory: Path, threads: int = 1) -> PerthNet:
        import onnxruntime

        opts = onnxruntime.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        make = lambda f: onnxruntime.InferenceSession(  # noqa: E731
            str(directory / f), sess_options=opts, providers=["CPUExecutionProvider"]
        )
        return cls(make(ENCODER_FILE), make(DECODER_FILE))

    def embed(self, x: np.ndarray, rate: int) -> np.ndarray:
        """The watermarked signal at ``rate`` (float64), as ``PerthImplicitWatermarker.apply_watermark``."""
        y = to_model_rate(x, rate, polyphase=False)
        if y.size < MIN_SAMPLES:
            raise ValueError(f"{y.size} samples at 32 kHz: Perth-Net needs at least {MIN_SAMPLES}")
        spec = stft(y)
        mag = normalised_magnitude(spec)
        sub = mag[None, :SUBBAND].astype(np.float32)
        residual = self.encoder.run(None, {"subband": sub})[0][0]  # type: ignore[attr-defined]
        mag[:SUBBAND] += residual * loud_frames(mag)[None, :]
        marked = istft(with_magnitude(mag, spec))
        return marked if rate == SAMPLE_RATE else _resample(marked, SAMPLE_RATE, rate, polyphase=False)

    def detect(self, x: np.ndarray, rate: int) -> float:
        """The decoder's unclipped confidence that ``x`` is marked (``get_watermark(round=False)`` before
        its clip to [0, 1])."""
        y = to_model_rate(x, rate, polyphase=True)
        if y.size < MIN_SAMPLES:
            raise ValueError(f"{y.size} samples at 32 kHz: Perth-Net needs at least {MIN_SAMPLES}")
        mag = normalised_magnitude(stft(y))
        mask = loud_frames(mag)
        sub = mag[:SUBBAND]
        n = sub.shape[1]
        inputs = {
            "slow": stretch_linear(sub, int(n * 1.25))[None].astype(np.float32),
            "normal": sub[None].astype(np.float32),
            "fast": stretch_linear(sub, int(n * 0.75))[None].astype(np.float32),
        }
        outs = self.decoder.run(None, inputs)  # type: ignore[attr-defined]
        attn, marks = [], []
        for out in outs:
            m = stretch_nearest(mask, out.shape[2])
            attn.append(float((out[0, 0] * m).sum() / m.sum()))
            marks.append(float((out[0, 1] * m).sum() / m.sum()))
        a = np.exp(np.array(attn) - max(attn))
        return float(np.dot(a / a.sum(), marks))

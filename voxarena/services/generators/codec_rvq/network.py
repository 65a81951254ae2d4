"""codec-rvq's networks (training side, torch): a SoundStream-style convolutional encoder and decoder, the
residual vector quantiser trained with EMA codebooks, and the multi-resolution log-mel loss.

Encoder (16 kHz waveform (B, 1, T) -> latent (B, 64, T / 320), 50 frames/s): a kernel-7 convolution to
``CHANNELS[0]``, then one block per stride in ``STRIDES`` (2, 4, 5, 8): residual units (a dilated kernel-7
convolution and a 1x1 convolution, ELU before each, added back) at the block's rate, then a strided
convolution (kernel 2 x stride) that doubles the channels; a kernel-3 convolution to the latent. Residual
units are where the rate is low enough to afford them (``DILATIONS`` per block: none at 16 kHz, one at
8 kHz, dilations 1, 3, 9 at 2 kHz and 400 Hz). The decoder mirrors it with transposed convolutions and ends in
tanh. Non-causal, zero-padded: every output sample sees a bounded window (``receptive_frames``), which lets
the service run long sources in chunks.

Residual VQ (``ResidualVQ``): ``N_CODEBOOKS`` codebooks of ``CODEBOOK_SIZE`` 64-dim codes; codebook k
quantises what codebooks 1..k-1 left (nearest code by squared distance). Codebooks are not trained by the
gradient but by exponential moving averages of the latents assigned to each code (decay 0.99, VQ-VAE-2), and
a code unused for ``DEAD_AFTER`` steps restarts at a latent of the batch. The encoder gets the commitment loss
and the decoder's gradient through the straight-through estimator. Quantiser dropout: each batch item uses
a random number 1..8 of codebooks, so every rung of the bit-rate ladder decodes.
"""

from __future__ import annotations

from typing import cast

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

SAMPLE_RATE = 16000
STRIDES = (2, 4, 5, 8)
HOP = int(np.prod(STRIDES))  # 320 samples = 20 ms per latent frame
CHANNELS = (16, 32, 64, 128, 256)  # at 16 kHz, 8 kHz, 2 kHz, 400 Hz, 50 Hz
DILATIONS: tuple[tuple[int, ...], ...] = ((), (1,), (1, 3, 9), (1, 3, 9))  # residual units per block's rate
LATENT_DIM = 64
N_CODEBOOKS = 8
CODEBOOK_SIZE = 1024
EMA_DECAY = 0.99
DEAD_AFTER = 100  # steps without an assignment before a code restarts at a batch latent
EPSILON = 1e-5
# Multi-resolution log-mel loss: (n_fft, hop, mel bands); log10 of the mel magnitude, clamped at 1e-5 (DAC's).
MEL_SCALES = ((256, 64, 32), (512, 128, 64), (1024, 256, 80), (2048, 512, 128))


class ResidualUnit(nn.Module):
    def __init__(self, channels: int, dilation: int) -> None:
        super().__init__()
        self.dilated = nn.Conv1d(channels, channels, 7, dilation=dilation, padding=3 * dilation)
        self.pointwise = nn.Conv1d(channels, channels, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.pointwise(F.elu(self.dilated(F.elu(x))))


class Down(nn.Module):
    """Strided convolution, kernel 2s, padded so that T samples give exactly T / s."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.stride = stride
        self.conv = nn.Conv1d(c_in, c_out, 2 * stride, stride=stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = self.stride
        return self.conv(F.pad(F.elu(x), ((s + 1) // 2, s // 2)))


class Up(nn.Module):
    """Transposed convolution, kernel 2s, trimmed so that T frames give exactly T * s."""

    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.stride = stride
        self.conv = nn.ConvTranspose1d(c_in, c_out, 2 * stride, stride=stride)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = self.stride
        y = self.conv(F.elu(x))  # (T + 1) * s samples
        return y[..., s // 2 : y.shape[-1] - (s + 1) // 2]


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Conv1d(1, CHANNELS[0], 7, padding=3)]
        for i, stride in enumerate(STRIDES):
            layers += [ResidualUnit(CHANNELS[i], d) for d in DILATIONS[i]]
            layers.append(Down(CHANNELS[i], CHANNELS[i + 1], stride))
        layers += [nn.ELU(), nn.Conv1d(CHANNELS[-1], LATENT_DIM, 3, padding=1)]
        self.net = nn.Sequential(*layers)

    def forward(self, audio: torch.Tensor) -> torch.Tensor:
        return self.net(audio)


class Decoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        layers: list[nn.Module] = [nn.Conv1d(LATENT_DIM, CHANNELS[-1], 7, padding=3)]
        for i in reversed(range(len(STRIDES))):
            layers.append(Up(CHANNELS[i + 1], CHANNELS[i], STRIDES[i]))
            layers += [ResidualUnit(CHANNELS[i], d) for d in DILATIONS[i]]
        layers += [nn.ELU(), nn.Conv1d(CHANNELS[0], 1, 7, padding=3), nn.Tanh()]
        self.net = nn.Sequential(*layers)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        return self.net(latent)


def receptive_frames() -> int:
    """How many latent frames, each side, one output sample can depend on through encoder and decoder
    (rounded up): the chunking context of the service must exceed it."""
    reach = 3.0  # encoder input conv, samples
    rate = 1
    for i, stride in enumerate(STRIDES):
        reach += sum(3 * d for d in DILATIONS[i]) * rate + 2 * stride * rate
        rate *= stride
    reach += 1 * rate  # latent conv (kernel 3)
    encoder = reach / HOP
    reach, rate = 3.0 * HOP, HOP  # decoder input conv (kernel 7): 3 frames
    for i in reversed(range(len(STRIDES))):
        reach += 2 * rate  # transposed conv, kernel 2s: 2 input frames at its rate
        rate //= STRIDES[i]
        reach += sum(3 * d for d in DILATIONS[i]) * rate
    reach += 3  # output conv
    return int(np.ceil(encoder + reach / HOP))


class ResidualVQ(nn.Module):
    """EMA residual vector quantiser (see the module docstring); codebooks (K, N, D) are a buffer."""

    codebooks: torch.Tensor
    cluster_size: torch.Tensor
    code_sum: torch.Tensor
    idle_steps: torch.Tensor

    def __init__(self) -> None:
        super().__init__()
        shape = (N_CODEBOOKS, CODEBOOK_SIZE, LATENT_DIM)
        self.register_buffer("codebooks", torch.zeros(shape))
        self.register_buffer("cluster_size", torch.zeros(N_CODEBOOKS, CODEBOOK_SIZE))
        self.register_buffer("code_sum", torch.zeros(shape))
        self.register_buffer("idle_steps", torch.zeros(N_CODEBOOKS, CODEBOOK_SIZE, dtype=torch.long))
        self.initialised = False

    @staticmethod
    def nearest(vectors: torch.Tensor, codebook: torch.Tensor) -> torch.Tensor:
        """Index of the nearest code (squared distance) of each row of ``vectors`` (M, D)."""
        distance = (codebook * codebook).sum(1)[None, :] - 2 * vectors @ codebook.T
        return distance.argmin(dim=1)

    def forward(
        self, latent: torch.Tensor, n_used: torch.Tensor, rng: np.random.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(quantised latent with the straight-through gradient, commitment loss). ``latent`` (B, D, F);
        ``n_used`` (B,) codebooks per item. Updates the codebooks when training (``rng`` draws restarts)."""
        z = latent.transpose(1, 2)  # (B, F, D)
        batch, frames, dim = z.shape
        flat = z.detach().reshape(-1, dim)
        per_row = n_used.repeat_interleave(frames)  # (B * F,)
        if self.training and not self.initialised:
            self._initialise(flat, rng)
        residual = flat.clone()
        quantised = torch.zeros_like(flat)
        for k in range(N_CODEBOOKS):
            active = per_row > k
            if not bool(active.any()):
                break
            codes = self.nearest(residual, self.codebooks[k])
            chosen = self.codebooks[k][codes] * active[:, None]
            if self.training:
                self._update(k, residual[active], codes[active], rng)
            quantised = quantised + chosen
            residual = residual - chosen
        q = quantised.reshape(batch, frames, dim)
        commitment = F.mse_loss(z, q)
        out = z + (q - z).detach()
        return out.transpose(1, 2), commitment

    @torch.no_grad()
    def _initialise(self, flat: torch.Tensor, rng: np.random.Generator | None) -> None:
        """Every codebook starts at latents of the first batch (the k-th at the residuals left by k-1)."""
        if rng is None:
            raise ValueError("the quantiser trains with a numpy generator for its restarts")
        residual = flat.clone()
        for k in range(N_CODEBOOKS):
            pick = torch.from_numpy(rng.integers(0, residual.shape[0], CODEBOOK_SIZE))
            self.codebooks[k] = residual[pick]
            self.code_sum[k] = residual[pick]
            self.cluster_size[k] = 1.0
            residual = residual - self.codebooks[k][self.nearest(residual, self.codebooks[k])]
        self.initialised = True

    @torch.no_grad()
    def _update(self, k: int, vectors: torch.Tensor, codes: torch.Tensor, rng: np.random.Generator | None) -> None:
        counts = torch.zeros(CODEBOOK_SIZE).index_add_(0, codes, torch.ones(codes.shape[0]))
        sums = torch.zeros(CODEBOOK_SIZE, LATENT_DIM).index_add_(0, codes, vectors)
        self.cluster_size[k].mul_(EMA_DECAY).add_(counts, alpha=1 - EMA_DECAY)
        self.code_sum[k].mul_(EMA_DECAY).add_(sums, alpha=1 - EMA_DECAY)
        n = self.cluster_size[k].sum()
        smoothed = (self.cluster_size[k] + EPSILON) / (n + CODEBOOK_SIZE * EPSILON) * n  # Laplace smoothing
        self.codebooks[k] = self.code_sum[k] / smoothed[:, None]
        self.idle_steps[k] = torch.where(counts > 0, 0, self.idle_steps[k] + 1)
        dead = torch.nonzero(self.idle_steps[k] >= DEAD_AFTER).flatten()
        if dead.numel() and vectors.shape[0] and rng is not None:
            pick = torch.from_numpy(rng.integers(0, vectors.shape[0], dead.numel()))
            self.codebooks[k][dead] = vectors[pick]
            self.code_sum[k][dead] = vectors[pick]
            self.cluster_size[k][dead] = 1.0
            self.idle_steps[k][dead] = 0


class MelLoss(nn.Module):
    """Mean over ``MEL_SCALES`` of the L1 distance between log10 mel magnitudes (|STFT| through Slaney mel
    filters, clamped at 1e-5)."""

    def __init__(self) -> None:
        super().__init__()
        import librosa

        self.scales = MEL_SCALES
        for n_fft, _, n_mels in MEL_SCALES:
            fb = librosa.filters.mel(sr=SAMPLE_RATE, n_fft=n_fft, n_mels=n_mels, fmin=0.0, fmax=SAMPLE_RATE / 2)
            self.register_buffer(f"fb{n_fft}", torch.from_numpy(fb.astype(np.float32)))
            self.register_buffer(f"win{n_fft}", torch.hann_window(n_fft))

    def log_mel(self, audio: torch.Tensor, n_fft: int, hop: int) -> torch.Tensor:
        spec = torch.stft(audio, n_fft, hop, window=getattr(self, f"win{n_fft}"), return_complex=True)
        magnitude = torch.sqrt(spec.real**2 + spec.imag**2 + 1e-9)  # the epsilon keeps sqrt's gradient finite
        return torch.log10(torch.clamp(getattr(self, f"fb{n_fft}") @ magnitude, min=1e-5))

    def forward(self, output: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        """``output`` and ``target`` (B, T)."""
        losses = [
            (self.log_mel(output, n_fft, hop) - self.log_mel(target, n_fft, hop)).abs().mean()
            for n_fft, hop, _ in self.scales
        ]
        return torch.stack(losses).mean()


def initialise(codec: nn.Module) -> None:
    """Variance-preserving weights, zero biases, residual branches that start closed and a quiet output
    layer. PyTorch's default (a third of the variance per layer, random biases) drowned the signal in the
    biases' constants, and training sat on a plateau of speech-shaped noise for hundreds of steps."""
    for module in codec.modules():
        if isinstance(module, nn.Conv1d):
            nn.init.kaiming_normal_(module.weight, nonlinearity="linear")
        elif isinstance(module, nn.ConvTranspose1d):
            c_in, _, kernel = module.weight.shape
            nn.init.normal_(module.weight, std=float(np.sqrt(module.stride[0] / (c_in * kernel))))
        if isinstance(module, (nn.Conv1d, nn.ConvTranspose1d)) and module.bias is not None:
            nn.init.zeros_(module.bias)
        if isinstance(module, ResidualUnit):
            nn.init.zeros_(module.pointwise.weight)
    if isinstance(codec, Codec):
        with torch.no_grad():
            cast(nn.Conv1d, codec.decoder.net[-2]).weight.mul_(0.1)  # the output convolution


class Codec(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.encoder = Encoder()
        self.decoder = Decoder()
        self.quantiser = ResidualVQ()
        initialise(self)

    def forward(
        self, audio: torch.Tensor, n_used: torch.Tensor, rng: np.random.Generator | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(B, T) with T a multiple of ``HOP`` -> (reconstruction (B, T), commitment loss)."""
        latent = self.encoder(audio[:, None])
        quantised, commitment = self.quantiser(latent, n_used, rng)
        return self.decoder(quantised)[:, 0], commitment

"""diffwave-small's denoiser in torch (training and export only; serving runs the ONNX export).

DiffWave (Kong et al., 2021), section 3, made small for two CPU cores: the noisy waveform enters a 1x1
convolution to ``CHANNELS``; ``LAYERS`` residual layers, each a dilated convolution (kernel 3, dilation
2^(i mod ``CYCLE``)) to 2C channels plus the diffusion-step embedding and the layer's projection of the
upsampled mel, a gated tanh x sigmoid unit and a 1x1 convolution split into a residual and a skip output; the
skips' sum (scaled by 1/sqrt(layers)) through two 1x1 convolutions predicts the noise. The mel (80 bands per
256 samples) is upsampled by two transposed 2-D convolutions of stride 16 along time, as in the paper, after a
1x1 projection to ``COND`` channels at the frame rate (the small model's one change: the layers' conditioning
convolutions then run on 24 channels, not 80, at the sample rate, which halves a training step here). The
step embedding is the paper's sinusoidal one, computed for a continuous step so that the fast schedule's
fractional steps (``diffusion.fast_steps``) need no interpolation.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812

CHANNELS, LAYERS, CYCLE, N_MELS, COND, HOP = 32, 10, 5, 80, 24, 256
EMBED = 128  # sinusoidal step-embedding size (64 sines and 64 cosines)


def step_embedding(step: torch.Tensor) -> torch.Tensor:
    """(batch,) float steps -> (batch, EMBED): sin / cos of step * 10^(4 j / 63), j < 64 (DiffWave eq. in 3.1)."""
    j = torch.arange(EMBED // 2, dtype=torch.float32)
    angles = step[:, None] * torch.pow(10.0, j * 4.0 / (EMBED // 2 - 1))[None]
    return torch.cat([torch.sin(angles), torch.cos(angles)], dim=1)


class ResidualLayer(nn.Module):
    def __init__(self, dilation: int) -> None:
        super().__init__()
        self.dilated = nn.Conv1d(CHANNELS, 2 * CHANNELS, 3, padding=dilation, dilation=dilation)
        self.step = nn.Linear(4 * EMBED, CHANNELS)
        self.cond = nn.Conv1d(COND, 2 * CHANNELS, 1)
        self.out = nn.Conv1d(CHANNELS, 2 * CHANNELS, 1)

    def forward(self, x: torch.Tensor, cond: torch.Tensor, step: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        y = self.dilated(x + self.step(step)[:, :, None]) + self.cond(cond)
        gate, filt = torch.chunk(y, 2, dim=1)
        residual, skip = torch.chunk(self.out(torch.sigmoid(gate) * torch.tanh(filt)), 2, dim=1)
        return (x + residual) / math.sqrt(2.0), skip


class DiffWave(nn.Module):
    """(audio (B, L), step (B,), log-mel (B, 80, L / 256)) -> predicted noise (B, L)."""

    mel_mean: torch.Tensor  # buffers: the training mels' mean and standard deviation
    mel_std: torch.Tensor

    def __init__(self, mel_mean: float = 0.0, mel_std: float = 1.0) -> None:
        super().__init__()
        self.register_buffer("mel_mean", torch.tensor(float(mel_mean)))
        self.register_buffer("mel_std", torch.tensor(float(mel_std)))
        self.inp = nn.Conv1d(1, CHANNELS, 1)
        self.embed1 = nn.Linear(EMBED, 4 * EMBED)
        self.embed2 = nn.Linear(4 * EMBED, 4 * EMBED)
        self.project = nn.Conv1d(N_MELS, COND, 1)
        self.up1 = nn.ConvTranspose2d(1, 1, (1, 32), stride=(1, 16), padding=(0, 8))
        self.up2 = nn.ConvTranspose2d(1, 1, (1, 32), stride=(1, 16), padding=(0, 8))
        self.layers = nn.ModuleList(ResidualLayer(2 ** (i % CYCLE)) for i in range(LAYERS))
        self.skip = nn.Conv1d(CHANNELS, CHANNELS, 1)
        self.final = nn.Conv1d(CHANNELS, 1, 1)
        nn.init.zeros_(self.final.weight)

    def forward(self, audio: torch.Tensor, step: torch.Tensor, mel: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.inp(audio[:, None, :]))
        e = F.silu(self.embed2(F.silu(self.embed1(step_embedding(step)))))
        c = self.project((mel - self.mel_mean) / self.mel_std)[:, None]
        c = F.leaky_relu(self.up2(F.leaky_relu(self.up1(c), 0.4)), 0.4)[:, 0]
        skips = torch.zeros_like(x)
        for layer in self.layers:
            x, s = layer(x, c, e)
            skips = skips + s
        return self.final(F.relu(self.skip(skips / math.sqrt(LAYERS))))[:, 0]


def receptive_field() -> int:
    """Samples either side one output sample depends on through the dilated convolutions."""
    return sum(2 ** (i % CYCLE) for i in range(LAYERS))

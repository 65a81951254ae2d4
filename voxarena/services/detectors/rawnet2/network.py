"""RawNet2 network (training side, torch), after Tak et al., ICASSP 2021 (the ASVspoof 2021 baseline).

Raw waveform -> fixed mel-spaced sinc filters -> |.| -> max pool 3 -> BN -> LeakyReLU -> six residual
blocks (two 1-D convolutions, batch norm, LeakyReLU, max pool 3, filter-wise feature map scaling:
x * s + s with s = sigmoid(FC(avgpool(x)))) -> BN -> LeakyReLU -> GRU -> last state -> FC -> 2 logits.
CPU-sized: 20 sinc filters of 251 taps (the paper: 20 of 1024), GRU of 256 (the paper: 3 x 1024).
"""

from __future__ import annotations

import torch
from torch import nn

from voxarena.services.detectors.sinc import mel_sinc_filters


class FixedSincConv(nn.Module):
    filters: torch.Tensor  # a buffer (register_buffer), not a parameter

    def __init__(self, n_filters: int, kernel_size: int) -> None:
        super().__init__()
        self.register_buffer("filters", torch.from_numpy(mel_sinc_filters(n_filters, kernel_size)).unsqueeze(1))
        self.padding = kernel_size // 2

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, 1, T) -> (B, n_filters, T)
        return nn.functional.conv1d(x, self.filters, padding=self.padding)


class ResidualBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, first: bool = False) -> None:
        super().__init__()
        self.pre = nn.Identity() if first else nn.Sequential(nn.BatchNorm1d(c_in), nn.LeakyReLU(0.3))
        self.body = nn.Sequential(
            nn.Conv1d(c_in, c_out, 3, padding=1),
            nn.BatchNorm1d(c_out),
            nn.LeakyReLU(0.3),
            nn.Conv1d(c_out, c_out, 3, padding=1),
        )
        self.skip = nn.Identity() if c_in == c_out else nn.Conv1d(c_in, c_out, 1)
        self.pool = nn.MaxPool1d(3)
        self.fms = nn.Linear(c_out, c_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.pool(self.body(self.pre(x)) + self.skip(x))
        s = torch.sigmoid(self.fms(h.mean(dim=-1))).unsqueeze(-1)
        return h * s + s


class RawNet2(nn.Module):
    def __init__(
        self,
        sinc_filters: int = 20,
        sinc_kernel: int = 251,
        channels: tuple[int, int] = (20, 128),
        gru_hidden: int = 256,
    ) -> None:
        super().__init__()
        c1, c2 = channels
        self.sinc = FixedSincConv(sinc_filters, sinc_kernel)
        self.front = nn.Sequential(nn.MaxPool1d(3), nn.BatchNorm1d(sinc_filters), nn.LeakyReLU(0.3))
        self.blocks = nn.Sequential(
            ResidualBlock(sinc_filters, c1, first=True),
            ResidualBlock(c1, c1),
            ResidualBlock(c1, c2),
            ResidualBlock(c2, c2),
            ResidualBlock(c2, c2),
            ResidualBlock(c2, c2),
        )
        self.post = nn.Sequential(nn.BatchNorm1d(c2), nn.LeakyReLU(0.3))
        self.gru = nn.GRU(c2, gru_hidden, batch_first=True)
        self.out = nn.Sequential(nn.Linear(gru_hidden, gru_hidden), nn.Linear(gru_hidden, 2))

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T) waveform
        h = self.front(self.sinc(x.unsqueeze(1)).abs())
        h = self.post(self.blocks(h))  # (B, C, T')
        out, _ = self.gru(h.transpose(1, 2))
        return self.out(out[:, -1])

"""frame-lcnn's network (training side, torch): a light CNN and a BLSTM that score every 10 ms LFCC frame.

The LFCC-LCNN design (max-feature-map convolutions, batch norm; Wang & Yamagishi's ASVspoof 2021 baseline)
with the pooling kept off the time axis, so that every 10 ms frame keeps its own output, as the frame-level
countermeasures of PartialSpoof (Zhang et al., 2021-2023) do: four MFM convolutions pooling only along
frequency (60 -> 3 bands), one bidirectional LSTM over the whole clip, and a linear layer giving each frame
its bona fide log-odds. Input (batch, 60, frames) LFCC normalised with the training set's mean and standard
deviation (buffers, so inside the ONNX file); output (batch, frames). The time axis is dynamic: a clip is
scored whole.

The utterance score is the frames' soft minimum, -log(mean(exp(-m_t))): one confidently fake frame pulls it
down, as one fake word makes a clip fake (``utterance_margin``; the service computes it in numpy).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


class MaxFeatureMap(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = torch.chunk(x, 2, dim=1)
        return torch.maximum(a, b)


def _block(c_in: int, c_out: int, kernel: int) -> list[nn.Module]:
    return [
        nn.Conv2d(c_in, 2 * c_out, kernel, padding=kernel // 2),
        MaxFeatureMap(),
        nn.BatchNorm2d(c_out),
        nn.MaxPool2d((1, 2)),  # (time, frequency): frequency only
    ]


class FrameLcnn(nn.Module):
    mean: torch.Tensor
    std: torch.Tensor

    def __init__(self, n_features: int = 60, feature_mean=None, feature_std=None, dropout: float = 0.3) -> None:
        super().__init__()
        mean = np.zeros(n_features) if feature_mean is None else feature_mean
        std = np.ones(n_features) if feature_std is None else feature_std
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(1, -1, 1))
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(1, -1, 1))
        self.cnn = nn.Sequential(
            *_block(1, 16, 5), *_block(16, 24, 3), *_block(24, 32, 3), *_block(32, 32, 3), nn.Dropout(dropout)
        )
        width = 32 * (n_features // 16)
        self.lstm = nn.LSTM(width, width // 2, batch_first=True, bidirectional=True)
        self.out = nn.Linear(width, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = (x - self.mean) / self.std  # (B, F, T)
        h = self.cnn(x.transpose(1, 2).unsqueeze(1))  # (B, C, T, F/16)
        h = h.permute(0, 2, 1, 3).flatten(2)  # (B, T, C * F/16)
        return self.out(self.lstm(h)[0]).squeeze(-1)  # (B, T): bona fide log-odds per frame


def utterance_margin(frames: torch.Tensor) -> torch.Tensor:
    """The soft minimum of each row's frame margins, -log(mean(exp(-m))): (B, T) -> (B,)."""
    n = torch.tensor(float(frames.shape[-1]))
    return -(torch.logsumexp(-frames, dim=-1) - torch.log(n))

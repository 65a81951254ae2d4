"""LFCC-LCNN network (training side, torch): the ASVspoof 2021 LA/DF baseline's design.

Light CNN (Wu et al.) as used by Lavrentyeva et al. for anti-spoofing: convolutions whose outputs
pass through max-feature-map (MFM: the element-wise max of the two halves of the channels), batch
norm and max pooling; then, as in the ASVspoof 2021 LFCC-LCNN baseline (Wang & Yamagishi), two
bidirectional LSTM layers with a skip connection, average pooling over time and a linear layer.
Input: (batch, 60, frames) LFCC (20 static + delta + delta-delta), normalised with the training
set's mean and standard deviation, which the network holds as buffers (and so the ONNX file).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


class MaxFeatureMap(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        a, b = torch.chunk(x, 2, dim=1)
        return torch.maximum(a, b)


def _mfm_conv(c_in: int, c_out: int, kernel: int) -> list[nn.Module]:
    return [nn.Conv2d(c_in, 2 * c_out, kernel, padding=kernel // 2), MaxFeatureMap()]


class Lcnn(nn.Module):
    mean: torch.Tensor  # buffers (register_buffer): the training features' normalisation
    std: torch.Tensor

    def __init__(
        self,
        n_features: int = 60,
        feature_mean: np.ndarray | None = None,
        feature_std: np.ndarray | None = None,
        dropout: float = 0.7,
    ) -> None:
        super().__init__()
        mean = np.zeros(n_features) if feature_mean is None else feature_mean
        std = np.ones(n_features) if feature_std is None else feature_std
        self.register_buffer("mean", torch.tensor(mean, dtype=torch.float32).view(1, -1, 1))
        self.register_buffer("std", torch.tensor(std, dtype=torch.float32).view(1, -1, 1))
        self.cnn = nn.Sequential(
            *_mfm_conv(1, 32, 5),
            nn.MaxPool2d(2),
            *_mfm_conv(32, 32, 1),
            nn.BatchNorm2d(32),
            *_mfm_conv(32, 48, 3),
            nn.MaxPool2d(2),
            nn.BatchNorm2d(48),
            *_mfm_conv(48, 48, 1),
            nn.BatchNorm2d(48),
            *_mfm_conv(48, 64, 3),
            nn.MaxPool2d(2),
            *_mfm_conv(64, 64, 1),
            nn.BatchNorm2d(64),
            *_mfm_conv(64, 32, 3),
            nn.BatchNorm2d(32),
            *_mfm_conv(32, 32, 1),
            nn.BatchNorm2d(32),
            *_mfm_conv(32, 32, 3),
            nn.MaxPool2d(2),
            nn.Dropout(dropout),
        )
        width = 32 * (n_features // 16)
        self.lstm1 = nn.LSTM(width, width // 2, batch_first=True, bidirectional=True)
        self.lstm2 = nn.LSTM(width, width // 2, batch_first=True, bidirectional=True)
        self.out = nn.Linear(width, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = (x - self.mean) / self.std  # (B, F, T)
        h = self.cnn(x.transpose(1, 2).unsqueeze(1))  # (B, C, T/16, F/16)
        h = h.permute(0, 2, 1, 3).flatten(2)  # (B, T/16, C * F/16)
        h = h + self.lstm2(self.lstm1(h)[0])[0]
        return self.out(h.mean(dim=1))

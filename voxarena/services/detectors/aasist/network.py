"""AASIST network (training side, torch), after Jung et al., ICASSP 2022, at AASIST-L-like size.

Raw waveform -> fixed sinc filters -> |.| -> 2-D max pool -> residual 2-D encoder -> two graphs:
a spectral one (nodes = sub-bands, max over time) and a temporal one (nodes = frames, max over
sub-bands), each through a graph attention layer and graph pooling; then heterogeneous stacking
graph attention (HS-GAL) over the union of both graphs with a learned master node, in two
branches whose results are combined by element-wise max; readout = max |.| and mean of each node
type plus the master node -> linear -> 2 logits.
CPU-sized (to train in minutes on 2 cores): 2 s windows (the paper: ~4 s), 70 sinc filters of 129
taps as AASIST, but a (3, 6) max pool after them (the paper: 3) and five encoder blocks of 8..24
channels (AASIST-L: six of 32..24), about 60k parameters (AASIST-L: 85k).
"""

from __future__ import annotations

from typing import cast

import torch
from torch import nn

from voxarena.services.detectors.sinc import mel_sinc_filters


def _pairwise(x: torch.Tensor) -> torch.Tensor:
    """(B, N, D) -> (B, N, N, D) element-wise products of every node pair."""
    return x.unsqueeze(2) * x.unsqueeze(1)


class GraphAttention(nn.Module):
    def __init__(self, d_in: int, d_out: int, temperature: float) -> None:
        super().__init__()
        self.att_proj = nn.Linear(d_in, d_out)
        self.att_weight = nn.Linear(d_out, 1, bias=False)
        self.with_att = nn.Linear(d_in, d_out)
        self.without_att = nn.Linear(d_in, d_out)
        self.bn = nn.BatchNorm1d(d_out)
        self.drop = nn.Dropout(0.2)
        self.temperature = temperature

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.drop(x)
        att = self.att_weight(torch.tanh(self.att_proj(_pairwise(x)))).squeeze(-1) / self.temperature
        att = torch.softmax(att, dim=-1)  # (B, N, N)
        h = self.with_att(att @ x) + self.without_att(x)
        return nn.functional.selu(self.bn(h.transpose(1, 2)).transpose(1, 2))


class HeterogeneousGraphAttention(nn.Module):
    """HS-GAL: attention over the union of temporal and spectral nodes, type-pair-specific weights, master node."""

    def __init__(self, d_in: int, d_out: int, temperature: float) -> None:
        super().__init__()
        self.proj_t = nn.Linear(d_in, d_in)
        self.proj_s = nn.Linear(d_in, d_in)
        self.att_proj = nn.Linear(d_in, d_out)
        self.att_master_proj = nn.Linear(d_in, d_out)
        self.w_tt = nn.Linear(d_out, 1, bias=False)
        self.w_ss = nn.Linear(d_out, 1, bias=False)
        self.w_ts = nn.Linear(d_out, 1, bias=False)
        self.w_master = nn.Linear(d_out, 1, bias=False)
        self.with_att = nn.Linear(d_in, d_out)
        self.without_att = nn.Linear(d_in, d_out)
        self.master_with_att = nn.Linear(d_in, d_out)
        self.master_without_att = nn.Linear(d_in, d_out)
        self.bn = nn.BatchNorm1d(d_out)
        self.drop = nn.Dropout(0.2)
        self.temperature = temperature

    def forward(self, t: torch.Tensor, s: torch.Tensor, master: torch.Tensor):
        n_t = t.shape[1]
        x = self.drop(torch.cat([self.proj_t(t), self.proj_s(s)], dim=1))  # (B, N, D)
        pre = torch.tanh(self.att_proj(_pairwise(x)))  # (B, N, N, d_out)
        n = x.shape[1]
        is_t = torch.arange(n, device=x.device) < n_t
        same_t = (is_t.unsqueeze(1) & is_t.unsqueeze(0)).unsqueeze(-1)
        same_s = (~is_t.unsqueeze(1) & ~is_t.unsqueeze(0)).unsqueeze(-1)
        att = torch.where(same_t, self.w_tt(pre), torch.where(same_s, self.w_ss(pre), self.w_ts(pre)))
        att = torch.softmax(att.squeeze(-1) / self.temperature, dim=-1)
        # master node attends to every node
        m_att = self.w_master(torch.tanh(self.att_master_proj(x * master))).squeeze(-1) / self.temperature
        m_att = torch.softmax(m_att, dim=-1).unsqueeze(1)  # (B, 1, N)
        master = self.master_with_att(m_att @ x) + self.master_without_att(master)
        h = self.with_att(att @ x) + self.without_att(x)
        h = nn.functional.selu(self.bn(h.transpose(1, 2)).transpose(1, 2))
        return h[:, :n_t], h[:, n_t:], master


class GraphPool(nn.Module):
    """Keep the top ``ratio`` of nodes by a learned sigmoid score (scaled by it)."""

    def __init__(self, d: int, ratio: float) -> None:
        super().__init__()
        self.score = nn.Linear(d, 1)
        self.ratio = ratio

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        s = torch.sigmoid(self.score(x))  # (B, N, 1)
        k = max(int(x.shape[1] * self.ratio), 1)
        idx = torch.topk(s.squeeze(-1), k, dim=1).indices
        idx = torch.sort(idx, dim=1).values.unsqueeze(-1).expand(-1, -1, x.shape[-1])
        return torch.gather(x * s, 1, idx)


class ResidualBlock2d(nn.Module):
    def __init__(self, c_in: int, c_out: int, first: bool = False) -> None:
        super().__init__()
        self.pre = nn.Identity() if first else nn.Sequential(nn.BatchNorm2d(c_in), nn.SELU())
        self.body = nn.Sequential(
            nn.Conv2d(c_in, c_out, (2, 3), padding=(1, 1)),
            nn.BatchNorm2d(c_out),
            nn.SELU(),
            nn.Conv2d(c_out, c_out, (2, 3), padding=(0, 1)),
        )
        self.skip = nn.Identity() if c_in == c_out else nn.Conv2d(c_in, c_out, (1, 3), padding=(0, 1))
        self.pool = nn.MaxPool2d((1, 3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(self.body(self.pre(x)) + self.skip(x))


class Aasist(nn.Module):
    filters: torch.Tensor  # a buffer (register_buffer): the fixed sinc filters

    def __init__(
        self,
        sinc_filters: int = 70,
        sinc_kernel: int = 129,
        front_pool: tuple[int, int] = (3, 6),
        encoder: tuple[tuple[int, int], ...] = ((1, 8), (8, 16), (16, 24), (24, 24), (24, 24)),
        gat_dims: tuple[int, int] = (24, 32),
        pool_ratios: tuple[float, ...] = (0.4, 0.5, 0.7, 0.5),
        temperatures: tuple[float, ...] = (2.0, 2.0, 100.0, 100.0),
    ) -> None:
        super().__init__()
        self.register_buffer("filters", torch.from_numpy(mel_sinc_filters(sinc_filters, sinc_kernel)).unsqueeze(1))
        self.front = nn.Sequential(nn.MaxPool2d(front_pool), nn.BatchNorm2d(1), nn.SELU())
        self.encoder = nn.Sequential(*[ResidualBlock2d(a, b, first=(i == 0)) for i, (a, b) in enumerate(encoder)])
        c = encoder[-1][1]
        n_bands = sinc_filters // front_pool[0]
        self.pos_s = nn.Parameter(torch.zeros(1, n_bands, c))
        self.master1 = nn.Parameter(torch.randn(1, 1, gat_dims[0]))
        self.master2 = nn.Parameter(torch.randn(1, 1, gat_dims[0]))
        self.gat_s = GraphAttention(c, gat_dims[0], temperatures[0])
        self.gat_t = GraphAttention(c, gat_dims[0], temperatures[1])
        self.pool_s = GraphPool(gat_dims[0], pool_ratios[0])
        self.pool_t = GraphPool(gat_dims[0], pool_ratios[1])
        self.hs_gal = nn.ModuleList()
        self.hs_pools = nn.ModuleList()
        for _ in range(2):  # two branches
            self.hs_gal.append(
                nn.ModuleList(
                    [
                        HeterogeneousGraphAttention(gat_dims[0], gat_dims[1], temperatures[2]),
                        HeterogeneousGraphAttention(gat_dims[1], gat_dims[1], temperatures[2]),
                    ]
                )
            )
            self.hs_pools.append(
                nn.ModuleList([GraphPool(gat_dims[1], pool_ratios[2]), GraphPool(gat_dims[1], pool_ratios[2])])
            )
        self.drop = nn.Dropout(0.5)
        self.out = nn.Linear(5 * gat_dims[1], 2)

    def _branch(self, i: int, t: torch.Tensor, s: torch.Tensor, master: torch.Tensor):
        first, second = cast(nn.ModuleList, self.hs_gal[i])  # ModuleList items are typed as Module
        pool_t, pool_s = cast(nn.ModuleList, self.hs_pools[i])
        t1, s1, m1 = first(t, s, master)
        t1, s1 = pool_t(t1), pool_s(s1)
        t2, s2, m2 = second(t1, s1, m1)
        return t1 + t2, s1 + s2, m1 + m2

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, T) waveform
        h = nn.functional.conv1d(x.unsqueeze(1), self.filters, padding=self.filters.shape[-1] // 2).abs()
        h = self.encoder(self.front(h.unsqueeze(1)))  # (B, C, F, T')
        s = h.abs().amax(dim=3).transpose(1, 2) + self.pos_s  # (B, F, C) spectral nodes
        t = h.abs().amax(dim=2).transpose(1, 2)  # (B, T', C) temporal nodes
        s = self.pool_s(self.gat_s(s))
        t = self.pool_t(self.gat_t(t))
        b = x.shape[0]
        t1, s1, m1 = self._branch(0, t, s, self.master1.expand(b, -1, -1))
        t2, s2, m2 = self._branch(1, t, s, self.master2.expand(b, -1, -1))
        t, s, m = torch.maximum(t1, t2), torch.maximum(s1, s2), torch.maximum(m1, m2)
        readout = torch.cat(
            [t.abs().amax(dim=1), t.mean(dim=1), s.abs().amax(dim=1), s.mean(dim=1), m.squeeze(1)], dim=1
        )
        return self.out(self.drop(readout))

"""Diagonal-covariance GMM log-likelihoods in numpy (serving needs no scikit-learn)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DiagonalGmm:
    weights: np.ndarray  # (K,)
    means: np.ndarray  # (K, D)
    variances: np.ndarray  # (K, D)

    def frame_log_likelihood(self, x: np.ndarray) -> np.ndarray:
        """log p(x_t) for each row of x (T, D)."""
        precision = 1.0 / self.variances
        const = -0.5 * (x.shape[1] * np.log(2 * np.pi) + np.log(self.variances).sum(axis=1))
        quad = (x**2) @ precision.T - 2.0 * x @ (self.means * precision).T + (self.means**2 * precision).sum(axis=1)
        comp = np.log(self.weights)[None, :] + const[None, :] - 0.5 * quad
        top = comp.max(axis=1, keepdims=True)
        return (top + np.log(np.exp(comp - top).sum(axis=1, keepdims=True)))[:, 0]

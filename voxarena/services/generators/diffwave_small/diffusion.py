"""The diffusion schedules of diffwave-small and its reverse process (numpy; training and serving share them).

Training (DiffWave, section 3 and appendix): T = 50 steps, beta linear from 1e-4 to 0.05; the network learns to
predict the noise eps of x_t = sqrt(abar_t) x_0 + sqrt(1 - abar_t) eps.

Inference: the paper's fast 6-step schedule for the T = 50 model, beta = (1e-4, 1e-3, 1e-2, 0.05, 0.2, 0.5).
Each fast step s runs the network at the training step whose abar matches the fast schedule's abar_s,
interpolated between the two training steps that bracket it (``fast_steps``, a fractional step: the
embedding is continuous). The ``full`` schedule runs the 50 training steps themselves (DiffWave's algorithm
2). The reverse step is eq. (5): x <- (x - beta_s / sqrt(1 - abar_s) eps) / sqrt(alpha_s),
plus sigma_s z with sigma_s^2 = (1 - abar_{s-1}) / (1 - abar_s) beta_s, except at the last step. The noise (the
start and every z) comes from one ``numpy.random.Generator`` seeded with the request's seed.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

TRAIN_BETAS = np.linspace(1e-4, 0.05, 50)
FAST_BETAS = np.array([1e-4, 1e-3, 1e-2, 0.05, 0.2, 0.5])


def alpha_bars(betas: np.ndarray) -> np.ndarray:
    return np.cumprod(1.0 - betas)


def fast_steps() -> np.ndarray:
    """The (fractional) training step each fast step runs the network at."""
    train, fast = alpha_bars(TRAIN_BETAS), alpha_bars(FAST_BETAS)
    steps = []
    for a in fast:
        t = int(np.flatnonzero(train >= a)[-1]) if a <= train[0] else 0
        t = min(t, train.size - 2)
        lo, hi = np.sqrt(train[t]), np.sqrt(train[t + 1])
        steps.append(t + (lo - np.sqrt(a)) / (lo - hi))
    return np.array(steps)


SCHEDULES = ("fast", "full")  # the paper's 6 steps; all 50 training steps (slower by 50/6, cleaner when undertrained)


def schedule(name: str) -> tuple[np.ndarray, np.ndarray]:
    """(betas, the training step each runs the network at) of a reverse schedule."""
    if name == "full":
        return TRAIN_BETAS, np.arange(TRAIN_BETAS.size, dtype=float)
    return FAST_BETAS, fast_steps()


def reverse(
    denoise: Callable[[np.ndarray, float], np.ndarray], length: int, rng: np.random.Generator, name: str = "fast"
) -> np.ndarray:
    """x_0 of ``length`` samples from Gaussian noise by schedule ``name``; ``denoise(x, step)`` -> eps."""
    betas, steps = schedule(name)
    alphas, bars = 1.0 - betas, alpha_bars(betas)
    x = rng.standard_normal(length)
    for s in range(betas.size - 1, -1, -1):
        eps = denoise(x.astype(np.float32), float(steps[s])).astype(np.float64)
        x = (x - betas[s] / np.sqrt(1.0 - bars[s]) * eps) / np.sqrt(alphas[s])
        if s > 0:
            sigma = np.sqrt((1.0 - bars[s - 1]) / (1.0 - bars[s]) * betas[s])
            x = x + sigma * rng.standard_normal(length)
    return np.clip(x, -1.0, 1.0)

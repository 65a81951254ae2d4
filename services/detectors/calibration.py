"""Score calibration to natural-log likelihood ratios, fitted on a dev set (training time only).

Prior-weighted logistic regression (BOSARIS-style): with the bona fide and spoof trials weighted to
an effective prior of 0.5, the fitted log-odds a*s + b is the LLR log p(s|bona fide) - log p(s|spoof).
A detector stores (a, b) with its weights; the SDK applies it when serving and answers ``is_llr``.
"""
from __future__ import annotations

import numpy as np


def fit_llr_calibration(bonafide: np.ndarray, spoof: np.ndarray) -> tuple[float, float]:
    """(a, b) with LLR = a * score + b. Raises ValueError without both classes."""
    from sklearn.linear_model import LogisticRegression

    b, s = np.asarray(bonafide, float), np.asarray(spoof, float)
    if b.size == 0 or s.size == 0:
        raise ValueError(f"calibration needs both classes, got {b.size} bona fide and {s.size} spoof scores")
    x = np.concatenate([b, s])[:, None]
    y = np.concatenate([np.ones(b.size), np.zeros(s.size)])
    weights = np.concatenate([np.full(b.size, 0.5 / b.size), np.full(s.size, 0.5 / s.size)]) * x.shape[0]
    model = LogisticRegression(C=1e4, max_iter=1000).fit(x, y, sample_weight=weights)
    return float(model.coef_[0, 0]), float(model.intercept_[0])

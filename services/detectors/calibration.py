"""Score calibration to natural-log likelihood ratios, fitted on a dev set (training time only).

Prior-weighted logistic regression (BOSARIS-style): with the bona fide and spoof trials weighted to
an effective prior of 0.5, the fitted log-odds a*s + b is the LLR log p(s|bona fide) - log p(s|spoof).
A detector stores (a, b) with its weights; the SDK applies it when serving and answers ``is_llr``.

Platt's target smoothing keeps the fit finite on a dev set the detector separates perfectly (the
usual case on seen attacks): a bona fide trial's target is (N+ + 1)/(N+ + 2) instead of 1 and a
spoof trial's 1/(N- + 2) instead of 0, Laplace's rule of succession for N+ bona fide and N- spoof
trials. The smoothed cross-entropy is strictly convex and coercive for any two distinct scores, so
the minimiser exists and is unique; with no overlap it puts a bona fide trial near LLR log(N+ + 1)
and a spoof trial near -log(N- + 1) instead of at infinity. We chose it over a regularisation
strength picked by cross-validation because on separable data every held-out fold is separable
too, so cross-validated log-loss keeps asking for less regularisation: the very divergence we
need to stop. The smoothing has no free parameter; it fades as the dev set grows or overlaps.

For a detector trained elsewhere (a black box, a Hugging Face checkpoint), fit (a, b) on the raw
scores of a dev run: ``python -m services.detectors.calibration RUN_DIR --detector NAME`` prints
``A,B`` for ``--calibration``.
"""
from __future__ import annotations

import numpy as np

METHOD = "prior-weighted logistic regression (P=0.5), Platt target smoothing"
NEWTON_STEPS = 100


def platt_targets(n_bonafide: int, n_spoof: int) -> tuple[float, float]:
    """Platt's smoothed targets: (N+ + 1)/(N+ + 2) for bona fide, 1/(N- + 2) for spoof."""
    return (n_bonafide + 1) / (n_bonafide + 2), 1 / (n_spoof + 2)


def _objective(params: np.ndarray, x: np.ndarray, t: np.ndarray, w: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Weighted cross-entropy (nats) of soft targets ``t`` against sigmoid(a*x + b); value, gradient, Hessian."""
    m = params[0] * x + params[1]
    p = np.exp(-np.logaddexp(0.0, -m))                  # sigmoid(m) without overflow
    value = float(np.sum(w * (t * np.logaddexp(0.0, -m) + (1 - t) * np.logaddexp(0.0, m))))
    r = w * (p - t)
    grad = np.array([np.sum(r * x), np.sum(r)])
    h = w * p * (1 - p)
    hess = np.array([[np.sum(h * x * x), np.sum(h * x)], [np.sum(h * x), np.sum(h)]])
    return value, grad, hess


def fit_llr_calibration(bonafide: np.ndarray, spoof: np.ndarray) -> tuple[float, float]:
    """(a, b) with LLR = a * score + b, by damped Newton on the smoothed, prior-weighted cross-entropy.

    Raises ValueError without both classes, with non-finite scores, when every score is the same
    (no slope to fit), or when the best slope is not positive (the scores rank spoofs above bona fide).
    """
    b, s = np.asarray(bonafide, float).ravel(), np.asarray(spoof, float).ravel()
    if b.size == 0 or s.size == 0:
        raise ValueError(f"calibration needs both classes, got {b.size} bona fide and {s.size} spoof scores")
    x = np.concatenate([b, s])
    if not np.all(np.isfinite(x)):
        raise ValueError("calibration scores must be finite")
    if np.ptp(x) == 0:
        raise ValueError(f"calibration needs at least two distinct scores, all {x.size} are {x[0]}")
    t_bona, t_spoof = platt_targets(b.size, s.size)
    t = np.concatenate([np.full(b.size, t_bona), np.full(s.size, t_spoof)])
    w = np.concatenate([np.full(b.size, 0.5 / b.size), np.full(s.size, 0.5 / s.size)])
    # Standardise the scores so Newton starts well conditioned whatever the detector's scale.
    centre, scale = float(np.mean(x)), float(np.std(x))
    z = (x - centre) / scale
    params = np.zeros(2)
    value, grad, hess = _objective(params, z, t, w)
    for _ in range(NEWTON_STEPS):
        step = np.linalg.solve(hess, grad)
        shrink = 1.0
        while True:                                   # backtracking: the objective must go down
            trial = params - shrink * step
            trial_value, trial_grad, trial_hess = _objective(trial, z, t, w)
            if trial_value <= value:
                break
            shrink /= 2
            if shrink < 1e-10:                        # no descent left at double precision: done
                break
        if trial_value > value:
            break
        converged = value - trial_value < 1e-15 or np.max(np.abs(trial_grad)) < 1e-12
        params, value, grad, hess = trial, trial_value, trial_grad, trial_hess
        if converged:
            break
    a = params[0] / scale
    if not a > 0:
        raise ValueError(f"calibration slope {a:.4g} is not positive: these scores rank spoofs above bona fide")
    return float(a), float(params[1] - a * centre)


def calibration_record(a: float, b: float, n_bonafide: int, n_spoof: int, fitted_on: str) -> dict:
    """What ``metadata.json`` stores about a calibration: the map, the method and its parameters."""
    t_bona, t_spoof = platt_targets(n_bonafide, n_spoof)
    return {"a": a, "b": b, "method": METHOD, "effective_prior": 0.5, "n_bonafide": n_bonafide, "n_spoof": n_spoof,
            "target_bonafide": t_bona, "target_spoof": t_spoof, "fitted_on": fitted_on}


def parse_calibration(text: str) -> tuple[float, float]:
    """``"A,B"`` -> (a, b); a must be positive (a higher score must stay more bona fide)."""
    try:
        a, b = (float(x) for x in text.split(","))
    except ValueError:
        raise ValueError(f"calibration {text!r} is not 'A,B' (two numbers)") from None
    if not a > 0:
        raise ValueError(f"calibration slope {a} must be positive")
    return a, b


def main(argv: list[str] | None = None) -> None:
    import argparse
    import json
    from pathlib import Path

    p = argparse.ArgumentParser(prog="python -m services.detectors.calibration",
                                description="Fit LLR calibration A,B on a dev run's raw (uncalibrated) scores.")
    p.add_argument("run_dir", type=Path)
    p.add_argument("--detector", required=True)
    args = p.parse_args(argv)
    rows = [json.loads(line) for line in (args.run_dir / "detections.jsonl").read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r["detector"] == args.detector and r["status"] == "ok"]
    if not rows:
        raise SystemExit(f"{args.run_dir}: no scored clips for detector {args.detector!r}")
    if any(r.get("is_llr") for r in rows):
        raise SystemExit(f"{args.detector}: the run's scores are already LLRs; fit on the uncalibrated scores")
    try:
        a, b = fit_llr_calibration(np.array([r["score"] for r in rows if r["kind"] == "bonafide"]),
                                   np.array([r["score"] for r in rows if r["kind"] == "spoof"]))
    except ValueError as e:
        raise SystemExit(f"{args.run_dir}: {args.detector}: {e}") from None
    print(f"{a!r},{b!r}")


if __name__ == "__main__":
    main()

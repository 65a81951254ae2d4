"""Score calibration to natural-log likelihood ratios, fitted on a dev set (training time only).

Prior-weighted logistic regression (BOSARIS-style): with the bona fide and spoof trials weighted to
an effective prior of 0.5, the fitted log-odds a*s + b is the LLR log p(s|bona fide) - log p(s|spoof).
A detector stores (a, b) with its weights; the SDK applies it when serving and answers ``is_llr``.

For a detector trained elsewhere (a black box, a Hugging Face checkpoint), fit (a, b) on the raw
scores of a dev run: ``python -m services.detectors.calibration RUN_DIR --detector NAME`` prints
``A,B`` for ``--calibration``.
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
    a, b = fit_llr_calibration(np.array([r["score"] for r in rows if r["kind"] == "bonafide"]),
                               np.array([r["score"] for r in rows if r["kind"] == "spoof"]))
    print(f"{a!r},{b!r}")


if __name__ == "__main__":
    main()

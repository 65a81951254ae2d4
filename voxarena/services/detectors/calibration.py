"""Score calibration to natural-log likelihood ratios, fitted on a dev set (training time only).

Prior-weighted logistic regression (BOSARIS-style) with Platt's target smoothing, which keeps the
fit finite on a dev set the detector separates perfectly: the one-score case of
``voxarena.stats.llr`` (the fit, and why smoothing rather than cross-validated regularisation, are
documented there; score fusion uses the same fit on several detectors' scores). A detector stores
(a, b) with its weights; the SDK applies it when serving and answers ``is_llr``.

For a detector trained elsewhere (a black box, a Hugging Face checkpoint), fit (a, b) on the raw
scores of a dev run: ``python -m voxarena.services.detectors.calibration RUN_DIR --detector NAME`` prints
``A,B`` for ``--calibration``.
"""

from __future__ import annotations

import numpy as np

from voxarena.stats.llr import METHOD, fit_linear_llr, platt_targets

__all__ = ["METHOD", "calibration_record", "fit_llr_calibration", "parse_calibration", "platt_targets"]


def fit_llr_calibration(bonafide: np.ndarray, spoof: np.ndarray) -> tuple[float, float]:
    """(a, b) with LLR = a * score + b: the one-feature case of ``voxarena.stats.llr.fit_linear_llr``.

    Raises ValueError without both classes, with non-finite scores, when every score is the same
    (no slope to fit), or when the best slope is not positive (the scores rank spoofs above bona fide).
    """
    fit = fit_linear_llr(
        np.asarray(bonafide, float).reshape(-1, 1), np.asarray(spoof, float).reshape(-1, 1), names=["calibration"]
    )
    a = fit.weights[0]
    if not a > 0:
        raise ValueError(f"calibration slope {a:.4g} is not positive: these scores rank spoofs above bona fide")
    return a, fit.bias


def calibration_record(a: float, b: float, n_bonafide: int, n_spoof: int, fitted_on: str) -> dict:
    """What ``metadata.json`` stores about a calibration: the map, the method and its parameters."""
    t_bona, t_spoof = platt_targets(n_bonafide, n_spoof)
    return {
        "a": a,
        "b": b,
        "method": METHOD,
        "effective_prior": 0.5,
        "n_bonafide": n_bonafide,
        "n_spoof": n_spoof,
        "target_bonafide": t_bona,
        "target_spoof": t_spoof,
        "fitted_on": fitted_on,
    }


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

    p = argparse.ArgumentParser(
        prog="python -m voxarena.services.detectors.calibration",
        description="Fit LLR calibration A,B on a dev run's raw (uncalibrated) scores.",
    )
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
        a, b = fit_llr_calibration(
            np.array([r["score"] for r in rows if r["kind"] == "bonafide"]),
            np.array([r["score"] for r in rows if r["kind"] == "spoof"]),
        )
    except ValueError as e:
        raise SystemExit(f"{args.run_dir}: {args.detector}: {e}") from None
    print(f"{a!r},{b!r}")


if __name__ == "__main__":
    main()

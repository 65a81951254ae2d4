"""Detection metrics with their speaker-cluster bootstrap: the cost of one trial set's CIs.

    python benchmarks/detection_bootstrap.py [--resamples 1000] [--trials 120]

Every trial set of a run (detector x generator x channel condition, and per label) gets a
1000-resample bootstrap of EER, minDCF, actDCF, Cllr and minCllr; minCllr needs a PAV per resample.
This times one trial set's intervals with the scorer's PAV (tied scores pooled, scipy's isotonic
regression) against the same bootstrap with sklearn's IsotonicRegression (the previous
implementation), in one run, and checks both give the same intervals. Prints both times and the ratio.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from unittest import mock

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from voxarena.scorers.trial_sets import detection_intervals  # noqa: E402
from voxarena.stats import detection  # noqa: E402


def sklearn_pav(bonafide: np.ndarray, spoof: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    from sklearn.isotonic import IsotonicRegression

    scores = np.concatenate([bonafide, spoof])
    labels = np.concatenate([np.ones(bonafide.size), np.zeros(spoof.size)])
    posterior = IsotonicRegression(y_min=0.0, y_max=1.0, increasing=True).fit_transform(scores, labels)
    with np.errstate(divide="ignore"):
        llr = np.log(posterior) - np.log1p(-posterior) - np.log(bonafide.size / spoof.size)
    return llr[: bonafide.size], llr[bonafide.size :]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--resamples", type=int, default=1000)
    ap.add_argument("--trials", type=int, default=120, help="bona fide and spoof trials each")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    bona, spoof = rng.normal(1.0, 1.0, args.trials), rng.normal(-0.5, 1.5, args.trials)
    speakers = [f"spk{i % 20}" for i in range(args.trials)]
    s = SimpleNamespace(bonafide_clusters=speakers, spoof_clusters=speakers)
    boot = SimpleNamespace(resamples=args.resamples, seed=1, confidence=0.95)
    t0 = time.perf_counter()
    fast = detection_intervals(s, bona, spoof, detection.ASVSPOOF5_COSTS, boot)
    t_fast = time.perf_counter() - t0
    with mock.patch.object(detection, "pav_llrs", sklearn_pav):
        t0 = time.perf_counter()
        slow = detection_intervals(s, bona, spoof, detection.ASVSPOOF5_COSTS, boot)
        t_slow = time.perf_counter() - t0
    same = all(np.isclose(fast[i][k], slow[i][k]) for i in (0, 1) for k in fast[i])
    print(f"one trial set ({args.trials}+{args.trials} trials, {args.resamples} resamples, 20 speakers)")
    print(
        f"  sklearn PAV: {t_slow:.2f} s   scipy PAV (scorer): {t_fast:.2f} s   ratio {t_slow / t_fast:.1f}x   "
        f"same intervals: {same}"
    )


if __name__ == "__main__":
    main()

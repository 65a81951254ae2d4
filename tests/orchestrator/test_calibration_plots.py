"""Calibration in the metrics and the report: the calibration_loss column (value and bootstrap CI from
an in-process scorer), Tippett and reliability data computed by hand, and their inline SVG."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest

from voxarena.orchestrator.metrics.detection import DETECTION_COLUMNS, detection_rows
from voxarena.orchestrator.report.calibration_plots import (
    calibration_data,
    calibration_section,
    reliability_bins,
    tippett_curve,
)
from voxarena.orchestrator.store.records import DetectionRecord
from voxarena.scorers.service import ScorerServicer


def test_tippett_curve_by_hand():
    # share of LLRs >= x at each distinct value: 4 of 4 at -1, 3 of 4 at 2 (a tie), 1 of 4 at 5
    assert tippett_curve([5.0, 2.0, -1.0, 2.0]) == [(-1.0, 1.0), (2.0, 0.75), (5.0, 0.25)]
    assert tippett_curve([]) == []
    assert len(tippett_curve(list(np.arange(1000.0)), max_points=50)) == 51


def test_reliability_bins_by_hand():
    ln3 = math.log(3)  # sigmoid(ln 3) = 0.75, sigmoid(-ln 3) = 0.25
    rows = reliability_bins([ln3, 0.0], [0.0, -ln3])
    assert [(r["bin_low"], r["n_bonafide"], r["n_spoof"]) for r in rows] == [(0.2, 0, 1), (0.5, 1, 1), (0.7, 1, 0)]
    assert [r["mean_posterior"] for r in rows] == pytest.approx([0.25, 0.5, 0.75])
    assert [r["observed"] for r in rows] == pytest.approx([0.0, 0.5, 1.0])
    # Classes weighted equally (prior 0.5): 1 bona fide and 3 spoof trials at LLR 0 are perfectly calibrated.
    (row,) = reliability_bins([0.0], [0.0, 0.0, 0.0])
    assert row["observed"] == pytest.approx(0.5) and row["mean_posterior"] == pytest.approx(0.5)
    assert reliability_bins([1.0], []) == []


class InProcessScorer:
    """The real scorer servicer behind the client's ``call`` interface (no gRPC needed for metrics)."""

    def __init__(self) -> None:
        self.servicer = ScorerServicer()

    def call(self, method: str, request):
        return getattr(self.servicer, method)(request, None), 1


def test_calibration_loss_column_with_its_interval():
    rng = np.random.default_rng(2)
    rows = []
    for k in range(10):  # 10 speakers; overconfident LLRs (3x the true LLR 2s of N(+-1, 1))
        for j in range(4):
            rows.append(
                {
                    "detector": "d",
                    "kind": "bonafide",
                    "status": "ok",
                    "score": 6 * rng.normal(1, 1),
                    "speaker": f"s{k}",
                    "generator": "bonafide",
                    "item": f"b{k}{j}",
                    "is_llr": True,
                }
            )
            rows.append(
                {
                    "detector": "d",
                    "kind": "spoof",
                    "status": "ok",
                    "score": 6 * rng.normal(-1, 1),
                    "speaker": f"s{k}",
                    "generator": "g",
                    "item": f"g{k}{j}",
                    "is_llr": True,
                }
            )
    records = [DetectionRecord.from_dict({"id": f"d|{r['item']}", "clip": r["item"], "task": "", **r}) for r in rows]
    store = SimpleNamespace(detections=SimpleNamespace(sorted_rows=lambda: records))
    cfg = SimpleNamespace(
        scorer=SimpleNamespace(bootstrap_resamples=100, confidence=0.95), protocol=SimpleNamespace(seed=1)
    )
    out = detection_rows(store, InProcessScorer(), cfg, ["g"], ["d"], {})
    pooled = next(r for r in out if r["generator"] == "pooled")
    assert (
        pooled["calibration_loss"] == pytest.approx(pooled["cllr"] - pooled["min_cllr"])
        and pooled["calibration_loss"] > 0.1
    )
    assert 0 <= pooled["calibration_loss_ci_low"] <= pooled["calibration_loss"] <= pooled["calibration_loss_ci_high"]
    i = DETECTION_COLUMNS.index("calibration_loss")
    assert DETECTION_COLUMNS[i - 2 : i] == ["cllr", "min_cllr"]
    assert {"calibration_loss_ci_low", "calibration_loss_ci_high"} <= set(DETECTION_COLUMNS)


def test_calibration_section_svg():
    rng = np.random.default_rng(0)
    data = {
        "llr-det": calibration_data(list(rng.normal(2, 2, 50)), list(rng.normal(-2, 2, 80))),
        "raw-det": calibration_data(list(rng.normal(0.7, 0.1, 50)), list(rng.normal(0.3, 0.1, 80))),
    }
    page = calibration_section(data, {"llr-det"})
    assert 'id="tippett-llr-det"' in page and 'id="tippett-raw-det"' in page
    assert page.count("<polyline") == 2 * 2 + 1  # two classes per Tippett plot, one reliability line
    reliability = page[page.index('id="reliability"') :]
    assert "llr-det" in reliability and "raw-det" not in reliability
    # The staircase of a survival curve starts at 1 on the left edge and ends at 0 on the right.
    assert data["llr-det"]["tippett"]["bonafide"][0][1] == 1.0
    assert calibration_section(data, set()).count('id="reliability"') == 0

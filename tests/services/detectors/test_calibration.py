"""Calibration to LLRs against the analytic LLR of two Gaussians, and the SDK serving it."""

import numpy as np
import pytest

from voxarena.codec import encode_audio
from voxarena.sdk import AudioClip, DetectorModel
from voxarena.sdk.testing import serve_in_process
from voxarena.services.detectors.calibration import fit_llr_calibration
from voxarena.stats.detection import cllr, min_cllr
from voxarena.v1 import common_pb2, detector_pb2


def gaussian_scores(rng, n, mu_b=2.0, mu_s=-1.0, sigma=1.5):
    return rng.normal(mu_b, sigma, n), rng.normal(mu_s, sigma, n)


def test_fit_recovers_the_analytic_llr():
    # Equal-variance Gaussians: LLR(s) = (mu_b - mu_s)/sigma^2 * s - (mu_b^2 - mu_s^2) / (2 sigma^2)
    rng = np.random.default_rng(0)
    bona, spoof = gaussian_scores(rng, 20000)
    a, b = fit_llr_calibration(bona, spoof[:5000])  # unequal counts: the prior weighting must undo them
    assert a == pytest.approx(3.0 / 2.25, rel=0.05)
    assert b == pytest.approx(-(4.0 - 1.0) / (2 * 2.25), abs=0.05)


def test_calibrated_scores_reach_min_cllr_on_held_out_data():
    rng = np.random.default_rng(1)
    a, b = fit_llr_calibration(*gaussian_scores(rng, 2000))
    bona, spoof = gaussian_scores(rng, 2000)
    raw = cllr(bona, spoof)
    calibrated = cllr(a * bona + b, a * spoof + b)
    assert calibrated < raw and calibrated == pytest.approx(min_cllr(bona, spoof), abs=0.03)
    with pytest.raises(ValueError, match="both classes"):
        fit_llr_calibration([], [1.0])


def test_two_valued_separated_set_lands_on_the_platt_targets():
    # Every bona fide trial at one score, every spoof at another: the affine map can put each class
    # exactly on its smoothed target, logit((N+ + 1)/(N+ + 2)) = log(N+ + 1) and logit(1/(N- + 2)) = -log(N- + 1).
    a, b = fit_llr_calibration(np.full(25, 3.0), np.full(75, -2.0))
    assert a * 3.0 + b == pytest.approx(np.log(26), abs=1e-6)
    assert a * -2.0 + b == pytest.approx(-np.log(76), abs=1e-6)


def test_perfectly_separated_set_gives_bounded_llrs_and_keeps_the_ranking():
    bona = np.array([1.0, 2.0, 3.0, 10.0])
    spoof = np.array([-10.0, -3.0, -2.0, -1.0])
    a, b = fit_llr_calibration(bona, spoof)
    # Bound by hand (N+ = N- = 4, targets 5/6 and 1/6, both with entropy H = 0.4506 nats): the
    # objective J = 1/4 sum CE(bona) + 1/4 sum CE(spoof) is at most J(a=0, b=0) = 2 ln 2 at the
    # optimum; each CE(t, sigmoid(m)) is at least H, and at least (1 - t) * m = m / 6 for a bona fide
    # trial at m > 0 (t * m / 6 similarly for spoof at m < 0). So one trial's |m| / 6 / 4 plus the
    # other seven trials' 7 H / 4 is at most 2 ln 2: |m| <= 24 * (2 ln 2 - 1.75 * 0.4506) = 14.35.
    h = -(5 / 6 * np.log(5 / 6) + 1 / 6 * np.log(1 / 6))
    bound = 24 * (2 * np.log(2) - 1.75 * h)
    assert bound == pytest.approx(14.35, abs=0.01)
    llr = a * np.concatenate([bona, spoof]) + b
    assert np.all(np.abs(llr) <= bound)
    assert a > 0 and np.all(np.argsort(bona) == np.argsort(a * bona + b))
    assert np.all(llr[:4] > 0) and np.all(llr[4:] < 0)  # the separation itself survives


def test_agrees_with_scipy_on_the_smoothed_objective():
    from scipy.optimize import minimize

    rng = np.random.default_rng(7)
    bona, spoof = rng.normal(40.0, 3.0, 30), rng.normal(10.0, 8.0, 90)  # separated, off-centre, unequal counts
    tb, ts = 31 / 32, 1 / 92

    def loss(p):
        mb, ms = p[0] * bona + p[1], p[0] * spoof + p[1]
        ce_b = tb * np.logaddexp(0, -mb) + (1 - tb) * np.logaddexp(0, mb)
        ce_s = ts * np.logaddexp(0, -ms) + (1 - ts) * np.logaddexp(0, ms)
        return 0.5 * np.mean(ce_b) + 0.5 * np.mean(ce_s)

    ref = minimize(
        loss, x0=[0.1, -2.5], method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-14, "maxiter": 20000}
    ).x
    a, b = fit_llr_calibration(bona, spoof)
    assert loss([a, b]) <= loss(ref) + 1e-12
    assert a == pytest.approx(ref[0], rel=1e-4) and b == pytest.approx(ref[1], rel=1e-4)


def test_refuses_what_it_cannot_calibrate():
    with pytest.raises(ValueError, match="two distinct scores"):
        fit_llr_calibration([1.0, 1.0], [1.0])
    with pytest.raises(ValueError, match="not positive"):
        fit_llr_calibration([-1.0, -2.0], [1.0, 2.0])
    with pytest.raises(ValueError, match="finite"):
        fit_llr_calibration([np.inf, 1.0], [0.0])


class Mean(DetectorModel):
    name = "mean"
    family = "HANDCRAFTED_FRONT_END"
    timing_scope = "score: test"

    def load(self):
        pass

    def score_batch(self, clips):
        return [float(np.mean(c.as_float32())) for c in clips]


def test_sdk_serves_calibrated_llrs():
    model = Mean()
    model.calibration = (2.0, -1.0)
    served = serve_in_process(model, "[::]:0")
    stub = served.stub()
    try:
        audio = encode_audio(AudioClip(np.full(100, 0.25, np.float32), 16000))
        resp = stub.Score(detector_pb2.ScoreRequest(request_id="c", audio=audio))
        assert resp.is_llr and resp.score == pytest.approx(2.0 * 0.25 - 1.0)
        batch = stub.ScoreBatch(
            detector_pb2.ScoreBatchRequest(items=[detector_pb2.ScoreRequest(request_id="d", audio=audio)])
        )
        assert batch.items[0].result.is_llr and batch.items[0].result.score == pytest.approx(-0.5)
        assert stub.GetInfo(common_pb2.GetInfoRequest()).calibrated
    finally:
        served.stop()


def test_calibration_command_fits_a_dev_runs_raw_scores(tmp_path):
    import json
    import subprocess
    import sys

    rng = np.random.default_rng(3)
    rows = [
        {"detector": "box", "status": "ok", "kind": k, "score": float(s), "is_llr": False}
        for k, mu in (("bonafide", 1.0), ("spoof", -1.0))
        for s in rng.normal(mu, 1.0, 400)
    ]
    (tmp_path / "detections.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = subprocess.run(
        [sys.executable, "-m", "voxarena.services.detectors.calibration", str(tmp_path), "--detector", "box"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    a, b = (float(x) for x in out.split(","))
    assert a == pytest.approx(2.0, abs=0.4) and b == pytest.approx(0.0, abs=0.3)  # analytic LLR: 2s
    missing = subprocess.run(
        [sys.executable, "-m", "voxarena.services.detectors.calibration", str(tmp_path), "--detector", "x"],
        capture_output=True,
        text=True,
    )
    assert missing.returncode != 0 and "no scored clips for detector 'x'" in missing.stderr

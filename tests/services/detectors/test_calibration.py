"""Calibration to LLRs against the analytic LLR of two Gaussians, and the SDK serving it."""
import grpc
import numpy as np
import pytest

from scorers.detection import cllr, min_cllr
from services.detectors.calibration import fit_llr_calibration
from services.sdk import AudioClip, DetectorModel
from services.sdk.server import create_model_server
from voxarena.codec import encode_audio
from voxarena.v1 import common_pb2, detector_pb2, detector_pb2_grpc


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
    model.mark_ready()
    running = create_model_server(model, "[::]:0")
    running.server.start()
    ch = grpc.insecure_channel(f"localhost:{running.port}")
    stub = detector_pb2_grpc.DetectorServiceStub(ch)
    try:
        audio = encode_audio(AudioClip(np.full(100, 0.25, np.float32), 16000))
        resp = stub.Score(detector_pb2.ScoreRequest(request_id="c", audio=audio))
        assert resp.is_llr and resp.score == pytest.approx(2.0 * 0.25 - 1.0)
        batch = stub.ScoreBatch(detector_pb2.ScoreBatchRequest(items=[detector_pb2.ScoreRequest(request_id="d", audio=audio)]))
        assert batch.items[0].result.is_llr and batch.items[0].result.score == pytest.approx(-0.5)
        assert stub.GetInfo(common_pb2.GetInfoRequest()).calibrated
    finally:
        ch.close()
        running.server.stop(0)


def test_calibration_command_fits_a_dev_runs_raw_scores(tmp_path):
    import json
    import subprocess
    import sys

    rng = np.random.default_rng(3)
    rows = [{"detector": "box", "status": "ok", "kind": k, "score": float(s), "is_llr": False}
            for k, mu in (("bonafide", 1.0), ("spoof", -1.0)) for s in rng.normal(mu, 1.0, 400)]
    (tmp_path / "detections.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = subprocess.run([sys.executable, "-m", "services.detectors.calibration", str(tmp_path), "--detector", "box"],
                         capture_output=True, text=True, check=True).stdout
    a, b = (float(x) for x in out.split(","))
    assert a == pytest.approx(2.0, abs=0.4) and b == pytest.approx(0.0, abs=0.3)  # analytic LLR: 2s
    missing = subprocess.run([sys.executable, "-m", "services.detectors.calibration", str(tmp_path), "--detector", "x"],
                             capture_output=True, text=True)
    assert missing.returncode != 0 and "no scored clips for detector 'x'" in missing.stderr

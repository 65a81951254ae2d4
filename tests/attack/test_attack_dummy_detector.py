"""The attack against the real dummy detector service (a gRPC server on port 0), through the
orchestrator's DetectorClient: only ScoreBatch answers reach the search, the dummy-generator clip's
score goes up within a 30 dB budget and 100 queries, and the log's scores are the service's."""

from __future__ import annotations

import json

import numpy as np
import pytest

from voxarena.attack import Budget, SearchSettings, attack
from voxarena.attack.__main__ import main
from voxarena.attack.client import DetectorScore
from voxarena.attack.search import AttackQueryError
from voxarena.codec import clip_to_wav_bytes, read_audio_file
from voxarena.orchestrator.fleet.clients import DetectorClient
from voxarena.sdk.testing import serve_in_process
from voxarena.services.testing.dummy_detector import DummyDetector


class Counting(DummyDetector):
    """The dummy detector, counting the clips it scores."""

    def __init__(self) -> None:
        super().__init__()
        self.scored = 0

    def score_batch(self, clips):
        self.scored += len(clips)
        return super().score_batch(clips)


@pytest.fixture
def detector():
    model = Counting()
    with serve_in_process(model, "[::]:0") as served:
        client = DetectorClient("dummy-detector", served.address, deadline=30, retries=2, backoff=0.1)
        yield model, client
        client.close()


def test_the_attack_raises_the_dummy_detectors_score(detector, buzz_clip):
    model, client = detector
    score = DetectorScore(client, "dummy-detector")
    result = attack(buzz_clip, score, Budget(snr_db=30, max_gain_db=6), SearchSettings(queries=100, seed=1))
    assert result.queries == score.queries == model.scored == 100
    # the service's own answer for the clips, scored here without the network
    assert result.original_score == pytest.approx(DummyDetector().score_batch([buzz_clip])[0], abs=1e-6)
    assert result.score == pytest.approx(DummyDetector().score_batch([result.clip])[0], abs=1e-6)
    # the buzz has almost nothing above 4 kHz (score about -10.4); 30 dB of perturbation put there is
    # a ratio near 1e-3, log about -6.9: the search gets most of the way
    assert result.score - result.original_score > 2.0
    assert result.snr_db >= 30 - 1e-6
    x = buzz_clip.as_float32().astype(np.float64)
    d = result.clip.samples.astype(np.float64) - x
    assert 10 * np.log10(np.sum(x**2) / np.sum(d**2)) >= 30 - 1e-6


def test_a_refused_clip_names_the_query(detector, buzz_clip):
    _, client = detector
    score = DetectorScore(client, "dummy-detector", parameters={"no_such_option": "1"})
    with pytest.raises(AttackQueryError, match="dummy-detector: attack-0 refused"):
        attack(buzz_clip, score, Budget(), SearchSettings(queries=5))


def test_the_cli_writes_the_attacked_clip_the_log_and_the_result(detector, buzz_clip, tmp_path, capsys):
    model, client = detector
    wav = tmp_path / "buzz.wav"
    wav.write_bytes(clip_to_wav_bytes(buzz_clip))
    out = tmp_path / "out"
    args = ["--detector", client.address, "--clip", str(wav), "--queries", "12", "--seed", "3", "--out", str(out)]
    assert main(args) == 0
    result = json.loads((out / "result.json").read_text())
    rows = [json.loads(line) for line in (out / "queries.jsonl").read_text().splitlines()]
    assert result["queries"] == len(rows) == model.scored == 12
    assert result["score"] == max(r["score"] for r in rows) > result["original_score"] == rows[0]["score"]
    attacked = read_audio_file(out / "attacked.wav")
    assert DummyDetector().score_batch([attacked])[0] == pytest.approx(result["score"], abs=1e-6)
    assert "after 12 queries" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("extra", "message"),
    [(["--queries", "0"], "queries: at least 2"), (["--snr-db", "-3"], "snr_db: must be a positive")],
)
def test_the_cli_names_a_bad_argument(detector, buzz_clip, tmp_path, capsys, extra, message):
    _, client = detector
    wav = tmp_path / "buzz.wav"
    wav.write_bytes(clip_to_wav_bytes(buzz_clip))
    assert main(["--detector", client.address, "--clip", str(wav), "--out", str(tmp_path / "o"), *extra]) == 2
    assert message in capsys.readouterr().err


def test_the_cli_refuses_a_missing_clip(tmp_path, capsys):
    assert main(["--detector", "localhost:1", "--clip", str(tmp_path / "none.wav"), "--out", str(tmp_path)]) == 2
    assert "--clip:" in capsys.readouterr().err


def test_the_cli_fails_with_1_naming_an_unreachable_detector(buzz_clip, tmp_path, capsys):
    wav = tmp_path / "buzz.wav"
    wav.write_bytes(clip_to_wav_bytes(buzz_clip))
    args = ["--detector", "localhost:1", "--clip", str(wav), "--deadline", "5", "--out", str(tmp_path / "o")]
    assert main(args) == 1
    assert "localhost:1: ScoreBatch failed: UNAVAILABLE" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()

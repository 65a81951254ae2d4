"""The attack against the real dummy detector service (a gRPC server on port 0), through the
orchestrator's DetectorClient: only ScoreBatch answers reach the search, the dummy-generator clip's
score goes up within a 30 dB budget and 100 queries, and the log's scores are the service's."""

from __future__ import annotations

import numpy as np
import pytest

from voxarena.attack import Budget, SearchSettings, attack
from voxarena.attack.client import DetectorScore
from voxarena.attack.search import AttackQueryError
from voxarena.orchestrator.clients import DetectorClient
from voxarena.sdk.server import create_model_server
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
    running = create_model_server(model)
    model.load()
    model.mark_ready()
    running.server.start()
    running.set_serving(True)
    client = DetectorClient("dummy-detector", f"localhost:{running.port}", deadline=30, retries=2, backoff=0.1)
    yield model, client
    client.close()
    running.server.stop(0)


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

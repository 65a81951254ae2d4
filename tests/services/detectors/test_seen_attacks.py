"""Each trained detector beats chance clearly on its seen attacks (espeak-ng, flite, griffin-lim),
for evaluation speakers that never appear in training or dev, in a real arena run."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import yaml

from voxarena.services.detectors.training.api import TRAINERS

pytestmark = pytest.mark.slow
SEEN = ("espeak-ng", "flite", "griffin-lim")


@pytest.fixture(scope="module")
def seen_attack_run(tmp_path_factory, speech_dir) -> Path:
    from voxarena.orchestrator.run.config import load_config
    from voxarena.orchestrator.run.pipeline import Arena

    tmp = tmp_path_factory.mktemp("seen")
    cfg = {
        "name": "seen-attacks",
        "dataset": {
            "root": str(speech_dir / "LibriSpeech"),
            "subsets": ["test-clean", "test-other"],
            "prompts": str(speech_dir / "prompts" / "librispeech-test-clean.trans.txt"),
            "max_per_speaker": 1,
        },
        "protocol": {"seed": 7, "tasks": ["TTS", "RECONSTRUCT"]},
        "generators": {g: {} for g in SEEN},
        "detectors": {d: {} for d in sorted(TRAINERS)},
        "scorer": {"metrics": ["rtf"], "bootstrap_resamples": 0},
    }
    path = tmp / "seen.yaml"
    path.write_text(yaml.safe_dump(cfg))
    Arena(load_config(path), tmp / "run", progress=False).run()
    return tmp / "run"


def test_evaluation_speakers_never_trained_on(seen_attack_run):
    eval_speakers = {
        json.loads(line)["speaker"] for line in (seen_attack_run / "manifest.jsonl").read_text().splitlines()
    }
    for name, (module, _) in TRAINERS.items():
        weights = Path(__import__(module, fromlist=["_"]).__file__).parent / "weights" / "training_manifest.jsonl"
        trained = {json.loads(line)["speaker"] for line in weights.read_text().splitlines()}
        assert eval_speakers and not eval_speakers & trained, name


@pytest.mark.parametrize("detector", sorted(TRAINERS))
def test_beats_chance_on_seen_attacks(seen_attack_run, detector):
    from sklearn.metrics import roc_curve

    rows = [json.loads(line) for line in (seen_attack_run / "detections.jsonl").read_text().splitlines()]
    mine = [r for r in rows if r["detector"] == detector and r["status"] == "ok"]
    assert all(r["is_llr"] for r in mine)
    bona = np.array([r["score"] for r in mine if r["kind"] == "bonafide"])
    spoof = np.array([r["score"] for r in mine if r["kind"] == "spoof"])
    assert len(bona) == 20 and len(spoof) == 60
    y = np.r_[np.ones(len(bona)), np.zeros(len(spoof))]
    fpr, tpr, _ = roc_curve(y, np.r_[bona, spoof])  # EER independent of the scorer's code
    i = int(np.argmin(np.abs(1 - tpr - fpr)))
    assert (fpr[i] + 1 - tpr[i]) / 2 < 0.25
    with open(seen_attack_run / "metrics" / "detection_metrics.csv", newline="") as f:
        pooled = next(r for r in csv.DictReader(f) if r["detector"] == detector and r["generator"] == "pooled")
    assert float(pooled["eer"]) < 0.25

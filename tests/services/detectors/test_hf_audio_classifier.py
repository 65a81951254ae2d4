"""hf-audio-classifier with a tiny randomly initialised wav2vec 2.0 classifier the test creates and
saves (no download): served over gRPC, repeatable, label mapping, refusals."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import grpc
import numpy as np
import pytest

from voxarena.codec import AudioClip, encode_audio, read_audio_file
from voxarena.sdk.testing import serve_in_process
from voxarena.services.detectors.hf_audio_classifier.model import HfAudioClassifierModel
from voxarena.v1 import common_pb2, detector_pb2

REPO = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    import torch
    from transformers import Wav2Vec2Config, Wav2Vec2FeatureExtractor, Wav2Vec2ForSequenceClassification

    cfg = Wav2Vec2Config(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        conv_dim=(16, 16),
        conv_stride=(5, 4),
        conv_kernel=(10, 4),
        num_feat_extract_layers=2,
        num_labels=2,
        id2label={0: "spoof", 1: "bonafide"},
        label2id={"spoof": 0, "bonafide": 1},
        classifier_proj_size=16,
    )
    torch.manual_seed(0)
    directory = tmp_path_factory.mktemp("tiny-w2v2")
    Wav2Vec2ForSequenceClassification(cfg).save_pretrained(directory)
    Wav2Vec2FeatureExtractor(sampling_rate=16000).save_pretrained(directory)
    return directory


def clips(speech_dir, n=3):
    paths = sorted((speech_dir / "LibriSpeech" / "test-clean").glob("*/*/*.flac"))[:n]
    return [read_audio_file(str(p)) for p in paths]


def test_served_scores_are_finite_and_repeatable(checkpoint, speech_dir):
    served = serve_in_process(HfAudioClassifierModel(checkpoint), "[::]:0")
    stub = served.stub()
    try:
        info = stub.GetInfo(common_pb2.GetInfoRequest())
        assert info.family == detector_pb2.PRETRAINED_FRONT_END and not info.calibrated
        from transformers import AutoModelForAudioClassification

        expected = AutoModelForAudioClassification.from_pretrained(checkpoint, local_files_only=True).num_parameters()
        assert info.model.parameter_count == expected > 0
        assert len(info.model.weights_sha256) == 64 and info.model.native_sample_rate == 16000
        items = [
            detector_pb2.ScoreRequest(request_id=f"c{i}", audio=encode_audio(c))
            for i, c in enumerate(clips(speech_dir))
        ]
        resp = stub.ScoreBatch(detector_pb2.ScoreBatchRequest(items=items))
        scores = [it.result.score for it in resp.items]
        assert all(np.isfinite(scores)) and not any(it.result.is_llr for it in resp.items)
        empty = stub.ScoreBatch(
            detector_pb2.ScoreBatchRequest(
                items=[
                    detector_pb2.ScoreRequest(
                        request_id="e",
                        audio=common_pb2.Audio(sample_rate=16000, channels=1, encoding=common_pb2.PCM_S16LE),
                    )
                ]
            )
        )
        assert empty.items[0].error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0]
    finally:
        served.stop()
    second = HfAudioClassifierModel(checkpoint)  # a second start gives the same scores
    second.load()
    assert second.score_batch(clips(speech_dir)) == scores


def test_bonafide_label_is_configurable(checkpoint, speech_dir):
    a, b = HfAudioClassifierModel(checkpoint, "bonafide"), HfAudioClassifierModel(checkpoint, "SPOOF")
    a.load()
    b.load()
    clip = clips(speech_dir, 1)[0]
    assert a.score_clip(clip) == pytest.approx(-b.score_clip(clip))  # two classes: log-odds flip sign
    eight_k = AudioClip(clip.samples[::2].copy(), 8000)  # any rate is resampled to the extractor's
    assert np.isfinite(a.score_clip(eight_k))


def test_refusals(checkpoint, tmp_path):
    with pytest.raises(RuntimeError, match="not one of the model's labels"):
        HfAudioClassifierModel(checkpoint, "real").load()
    with pytest.raises(RuntimeError, match="has no config.json"):
        HfAudioClassifierModel(tmp_path).load()


def test_service_entry_point_takes_its_options(checkpoint):
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "voxarena.services.detectors.hf_audio_classifier",
            "--port",
            "0",
            "--model-dir",
            str(checkpoint),
            "--bonafide-label",
            "nope",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 1 and "not one of the model's labels" in out.stderr


def test_in_an_arena_run(checkpoint, speech_dir, tmp_path):
    import json

    import yaml

    from voxarena.orchestrator.run.config import load_config
    from voxarena.orchestrator.run.pipeline import Arena

    cfg = {
        "name": "hf",
        "dataset": {"root": str(speech_dir / "LibriSpeech"), "subsets": ["test-clean"], "max_items": 3},
        "generators": {"dummy-generator": {}},
        "detectors": {
            "my-w2v2": {
                "module": "voxarena.services.detectors.hf_audio_classifier",
                "args": ["--model-dir", str(checkpoint), "--bonafide-label", "bonafide"],
            }
        },
        "scorer": {"metrics": ["rtf"], "bootstrap_resamples": 0},
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    record = Arena(load_config(path), tmp_path / "run", progress=False).run()
    assert record["services"]["my-w2v2"]["info"]["model"]["name"] == "hf-audio-classifier"
    rows = [json.loads(line) for line in (tmp_path / "run" / "detections.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and all(r["status"] == "ok" for r in rows)


def test_calibration_option_serves_llrs(checkpoint, speech_dir):
    raw = HfAudioClassifierModel(checkpoint)
    cal = HfAudioClassifierModel(checkpoint, calibration="2.5,-1")
    raw.load()
    cal.load()
    c = clips(speech_dir, 2)
    assert not raw.serves_llr and cal.serves_llr
    np.testing.assert_allclose(cal.llr_scores(c), [2.5 * s - 1 for s in raw.llr_scores(c)])
    for bad, reason in (("1", "not 'A,B'"), ("-1,0", "must be positive")):
        with pytest.raises(ValueError, match=reason):
            HfAudioClassifierModel(checkpoint, calibration=bad)


def test_conforms_to_the_contract(checkpoint, tmp_path):
    from voxarena.conformance import run_conformance
    from voxarena.orchestrator.fleet.local_services import LocalService

    svc = LocalService("hf-audio-classifier", None, tmp_path / "hf.log", ["--model-dir", str(checkpoint)])
    svc.start()
    try:
        checks = run_conformance(svc.wait_ready(120), timeout=60)
    finally:
        svc.stop()
    assert not [c for c in checks if c.status == "FAIL"], checks

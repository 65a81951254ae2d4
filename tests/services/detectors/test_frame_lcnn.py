"""frame-lcnn: frame truth and segment placement by hand, its training recipe on a tiny partial-fake run
(weights that load, segments that find a spliced tone), the committed weights, conformance with segments."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from voxarena.codec import AudioClip, read_audio_file
from voxarena.services.detectors.frame_lcnn.model import FrameLcnnModel, soft_minimum
from voxarena.services.detectors.lfcc_gmm.lfcc import LfccConfig, frame_segments, frame_truth
from voxarena.services.detectors.trained import METADATA_FILE


def test_frame_truth_marks_every_frame_whose_cell_touches_a_fake_sample():
    # frame k is centred at 10 ms + k * 10 ms; its cell is [5 + 10k, 15 + 10k) ms
    truth = frame_truth([(0.0305, 0.0400)], 8)
    assert truth.tolist() == [1, 1, 0, 0, 1, 1, 1, 1]  # cells [25, 35) and [35, 45) hold fake samples
    assert frame_truth([], 3).tolist() == [1, 1, 1]


def test_frame_segments_average_the_frames_centred_in_each_segment():
    values = np.arange(6, dtype=float)  # centres 10, 20, 30, 40, 50, 60 ms
    out = frame_segments(values, 4, 0.02, LfccConfig())
    # segment 0 [0, 20): centre 10 -> 0; [20, 40): 20, 30 -> 1.5; [40, 60): 40, 50 -> 3.5; [60, 80): 60 -> 5
    assert out.tolist() == [0.0, 1.5, 3.5, 5.0]
    # a segment without a centre takes the nearest frame's value
    assert frame_segments(np.array([7.0]), 3, 0.02, LfccConfig()).tolist() == [7.0, 7.0, 7.0]


def test_soft_minimum():
    assert soft_minimum(np.array([2.0, 2.0])) == pytest.approx(2.0)
    m = np.array([5.0, -3.0, 4.0])
    assert soft_minimum(m) == pytest.approx(-np.log(np.mean(np.exp(-m))))
    assert soft_minimum(np.array([1e4, -1e4])) == pytest.approx(-1e4 + np.log(2))  # no overflow


@pytest.fixture
def tiny_partial_run(speech_dir: Path, tmp_path: Path) -> Path:
    """A run directory: 8 speakers' first 3 s, and per speaker a partial fake with a tone over [1.0, 1.6) s."""
    import soundfile as sf

    from voxarena.hashing import sha256_file

    flacs = sorted((speech_dir / "LibriSpeech" / "test-clean").glob("*/*/*.flac"))
    by_speaker: dict[str, Path] = {}
    for p in flacs:
        by_speaker.setdefault(p.stem.split("-")[0], p)
    items, gens = [], []
    (tmp_path / "audio").mkdir()
    for k, (spk, p) in enumerate(sorted(by_speaker.items())[:8]):
        x = read_audio_file(str(p)).as_float32()[:48000]
        bona = tmp_path / "audio" / f"{spk}.wav"
        sf.write(bona, x, 16000, subtype="PCM_16")
        items.append({"id": p.stem, "speaker": spk, "audio_path": str(bona), "audio_sha256": sha256_file(bona)})
        y = x.copy()
        t = np.arange(16000, 25600)
        y[t] = 0.2 * np.sin(2 * np.pi * (300 + 25 * k) * t / 16000)
        fake = tmp_path / "audio" / f"fake-{spk}.wav"
        sf.write(fake, y, 16000, subtype="PCM_16")
        span = {"start": 16000, "end": 25600, "start_seconds": 1.0, "end_seconds": 1.6}
        gens.append(
            {
                "id": f"tone|PARTIAL_VOCODED|{p.stem}",
                "item": p.stem,
                "generator": "tone",
                "status": "ok",
                "audio": f"audio/{fake.name}",
                "audio_sha256": sha256_file(fake),
                "partial": {"method": "vocoded", "spans": [span], "fake_fraction": 0.2},
            }
        )
    (tmp_path / "manifest.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    (tmp_path / "generations.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gens))
    return tmp_path


@pytest.mark.slow
def test_the_recipe_trains_weights_that_load_and_find_the_splice(tiny_partial_run, tmp_path):
    pytest.importorskip("torch")
    from voxarena.services.detectors.frame_lcnn.train import main

    out = tmp_path / "weights"
    main(["--data", str(tiny_partial_run), "--out", str(out), "--max-epochs", "5", "--dev-fraction", "0.25"])
    meta = json.loads((out / METADATA_FILE).read_text())
    assert meta["seen_generators"] == ["tone"] and meta["onnx_max_margin_gap"] < 1e-3
    assert meta["n_train_bonafide"] == 6 and meta["n_dev_spoof"] == 2
    model = FrameLcnnModel(out)
    model.load()
    fake_row = json.loads((tiny_partial_run / "generations.jsonl").read_text().splitlines()[0])
    clip = read_audio_file(str(tiny_partial_run / fake_row["audio"]))
    [segments] = model.segment_batch([clip], [{}])
    assert len(segments) == 150  # 3 s at 20 ms
    s = np.array(segments)
    assert s[52:78].mean() < s[:45].mean() and s[52:78].mean() < s[85:].mean()  # the tone scores fake
    # the same recipe on the same data gives the same bytes
    again = tmp_path / "again"
    main(["--data", str(tiny_partial_run), "--out", str(again), "--max-epochs", "5", "--dev-fraction", "0.25"])
    assert (again / "model.onnx").read_bytes() == (out / "model.onnx").read_bytes()


@pytest.fixture(scope="module")
def committed() -> FrameLcnnModel:
    model = FrameLcnnModel()
    model.load()
    return model


def test_the_committed_weights_record_their_training(committed):
    meta = committed.training
    assert meta["seen_generators"] == ["flite", "griffin-lim", "mlsa-vocoder", "piper-vits", "world-vocoder"]
    assert "hifigan" not in meta["seen_generators"] and "kokoro" not in meta["seen_generators"]
    assert meta["calibration"]["a"] > 0 and meta["dev_frame_eer"] < 0.5


def test_segments_cover_the_clip_and_long_clips_are_scored_in_chunks(committed, speech_dir):
    clip = read_audio_file(str(sorted((speech_dir / "LibriSpeech" / "test-clean").glob("*/*/*.flac"))[0]))
    frames = committed.frame_margins(clip)
    [segments] = committed.segment_batch([clip], [{}])
    assert len(segments) == int(np.ceil(clip.samples.size / 320))
    # a clip longer than a chunk: the frames of its first chunk equal those of the first 20 s alone
    x = clip.as_float32()
    long = AudioClip(np.concatenate([x, x, x]), clip.sample_rate)
    assert long.samples.size > 2000 * 160
    head = committed.frame_margins(AudioClip(long.samples[: 2100 * 160 + 80], clip.sample_rate))
    np.testing.assert_allclose(committed.frame_margins(long)[:2000], head[:2000], atol=1e-5)
    assert np.isfinite(frames).all()
    [score] = committed.score_batch([clip])
    assert score == pytest.approx(soft_minimum(frames))


def test_conformance_in_process_with_segments(committed, in_process_model):
    from voxarena.conformance import run_conformance

    checks = run_conformance(in_process_model(FrameLcnnModel()), timeout=60)
    bad = [f"{c.name}: {c.status} {c.detail}" for c in checks if c.status in ("FAIL", "WARN")]
    assert not bad, bad
    passed = {c.name for c in checks if c.status == "PASS"}
    assert "segment hop valid" in passed and "segment scores (clip 1, ScoreBatch)" in passed

"""codec-rvq: the committed weights and their record, codec re-synthesis of real LibriSpeech (the source's length,
PESQ that rises with the codebooks used, the same bytes twice), the codebooks option refused out of range by
name, chunked coding equal to whole-clip coding, conformance in process, and the training recipe on a tiny
corpus (the same bytes twice, weights that load and reconstruct)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from voxarena.codec import AudioClip, read_audio_file, resample
from voxarena.conformance import run_conformance
from voxarena.sdk import InvalidArgument, SynthesisRequest
from voxarena.services.detectors.trained import METADATA_FILE
from voxarena.services.generators.codec_rvq import model as codec_model
from voxarena.services.generators.codec_rvq.model import CodecRvqModel, quantise

# PESQ (wb) of the committed weights on the first test-clean utterance, measured: 1.16 at 1 codebook, 1.54 at 4,
# 1.62 at 8 (README); the floor leaves a margin for other builds of onnxruntime.
PESQ_FLOOR_8 = 1.5


@pytest.fixture(scope="module")
def committed() -> CodecRvqModel:
    m = CodecRvqModel()
    m.load()
    return m


def _first_test_clean(speech_dir: Path) -> AudioClip:
    return read_audio_file(str(sorted((speech_dir / "LibriSpeech" / "test-clean").glob("*/*/*.flac"))[0]))


def _reconstruct(model: CodecRvqModel, clip: AudioClip, codebooks: str, seed: int = 1) -> AudioClip:
    request = SynthesisRequest("r", seed, "RECONSTRUCT", source_audio=clip, parameters={"codebooks": codebooks})
    return model.synthesize(request).audio


def test_the_committed_weights_record_their_training(committed):
    meta = committed.training
    files = [committed.weights_dir / f for f in (*CodecRvqModel.weight_files, METADATA_FILE)]
    assert sum(f.stat().st_size for f in files) < 20e6
    assert meta["onnx_max_gap"] < 1e-3 and 1e6 < meta["parameter_count"] < 4e6
    assert committed.parameter_count() == meta["parameter_count"] + 8 * 1024 * 64
    assert meta["steps"] == meta["history"][-1]["step"] and meta["n_dev_utterances"] > 0
    dev = meta["dev"]["codebooks"]
    assert dev["8"]["mel"] < dev["4"]["mel"] < dev["1"]["mel"]  # the ladder, on dev speakers
    assert meta["history"][-1]["dev_mel_8"] < meta["history"][0]["dev_mel_8"]  # it learned
    assert np.load(committed.weights_dir / "codebooks.npy").shape == (8, 1024, 64)
    info = committed.metadata()
    assert json.loads(info["steps"]) == meta["steps"] and "4 kbit/s at 8" in info["bit_rate"]


def test_quantise_picks_the_nearest_code_of_each_residual():
    codebooks = np.zeros((2, 3, 2), np.float32)
    codebooks[0] = [[0, 0], [1, 0], [0, 1]]
    codebooks[1] = [[0, 0], [0.25, 0], [0, -0.25]]
    latent = np.array([[[0.9, 0.1], [0.2, 0.7]]], np.float32)  # (B=1, D=2, F=2): frames (0.9, 0.2), (0.1, 0.7)
    one = quantise(latent, codebooks, 1)
    np.testing.assert_array_equal(one[0].T, [[1, 0], [0, 1]])
    # residuals (-0.1, 0.2) -> (0, 0); (0.1, -0.3) -> (0, -0.25)
    np.testing.assert_array_equal(quantise(latent, codebooks, 2)[0].T, [[1, 0], [0, 0.75]])


def test_every_rung_decodes_speech_of_the_source_length(committed, speech_dir):
    from pesq import pesq

    clip = _first_test_clean(speech_dir)
    reference = resample(clip.samples, clip.sample_rate, 16000).astype(np.float64)
    scores = {}
    for n in ("1", "4", "8"):
        out = _reconstruct(committed, clip, n)
        assert out.sample_rate == 16000 and out.samples.size == reference.size
        scores[n] = pesq(16000, reference, out.samples.astype(np.float64), "wb")
    print(f"\ncodec-rvq PESQ (wb): {scores}")
    # the bit-rate ladder: every rung of codebooks adds quality
    assert scores["1"] < scores["4"] < scores["8"] and scores["8"] > PESQ_FLOOR_8, scores
    again = _reconstruct(committed, clip, "8", seed=99)  # no randomness: the seed changes nothing
    assert np.array_equal(again.samples, _reconstruct(committed, clip, "8").samples)


@pytest.mark.parametrize("value", ["0", "9", "two"])
def test_codebooks_out_of_range_are_refused_by_name(committed, value):
    clip = AudioClip((0.1 * np.sin(np.arange(16000) / 5.0)).astype(np.float32), 16000)
    with pytest.raises(InvalidArgument, match=f"codebooks='{value}' is not an integer in 1-8"):
        _reconstruct(committed, clip, value)


def test_chunked_coding_equals_whole_clip_coding(committed, speech_dir, monkeypatch):
    x = _first_test_clean(speech_dir).as_float32().astype(np.float64)
    x = x[: x.size - x.size % codec_model.HOP]
    monkeypatch.setattr(codec_model, "CHUNK_FRAMES", 10_000)  # 200 s: the 10.4 s clip in one call
    whole = committed.code(x, 8)
    monkeypatch.setattr(codec_model, "CHUNK_FRAMES", 60)  # 1.2 s chunks: 9 of them
    chunked = committed.code(x, 8)
    assert chunked.size == whole.size == x.size and x.size > 8 * 60 * codec_model.HOP
    assert np.max(np.abs(chunked - whole)) < 1e-4


def test_the_chunk_context_covers_the_receptive_field():
    pytest.importorskip("torch")
    from voxarena.services.generators.codec_rvq import network

    assert codec_model.CONTEXT_FRAMES > network.receptive_frames()
    assert codec_model.HOP == network.HOP and codec_model.MAX_CODEBOOKS == network.N_CODEBOOKS


def test_codec_rvq_passes_conformance_in_process(committed, in_process_model):
    checks = run_conformance(in_process_model(CodecRvqModel()), timeout=60)
    failed = [f"{c.name}: {c.detail}" for c in checks if c.status == "FAIL"]
    assert not failed, failed


@pytest.fixture
def tiny_corpus(speech_dir: Path, tmp_path: Path) -> Path:
    """Symlinks to the 4 shortest train-clean-100 utterances (4 speakers), LibriSpeech's layout kept."""
    corpus = tmp_path / "train-clean-100"
    flacs = sorted((speech_dir / "LibriSpeech" / "train-clean-100").glob("*/*/*.flac"))
    for path in sorted(flacs, key=lambda p: (p.stat().st_size, p.name))[:4]:
        link = corpus / path.parent.parent.name / path.parent.name / path.name
        link.parent.mkdir(parents=True)
        link.symlink_to(path)
    return corpus


def test_the_recipe_trains_the_same_bytes_twice_and_they_load(tiny_corpus, tmp_path, speech_dir):
    pytest.importorskip("torch")
    from voxarena.services.generators.codec_rvq.train import main

    outs = [tmp_path / "a", tmp_path / "b"]
    for out in outs:
        main(["--corpus", str(tiny_corpus), "--out", str(out), "--steps", "6", "--dev-speakers", "1"])
    for name in CodecRvqModel.weight_files:
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name
    meta = json.loads((outs[0] / METADATA_FILE).read_text())
    assert meta["steps"] == 6 and meta["n_train_utterances"] == 3 and meta["n_dev_utterances"] == 1
    assert meta["onnx_max_gap"] < 1e-3 and meta["generator"] == "codec-rvq"
    model = CodecRvqModel(outs[0])
    model.load()
    clip = AudioClip(_first_test_clean(speech_dir).samples[:12345], 16000)
    assert _reconstruct(model, clip, "3").samples.size == 12345

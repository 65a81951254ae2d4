"""hf-tts with tiny randomly initialised checkpoints the test creates and saves (no download): a VITS
(character vocabulary written here) and a SpeechT5 (its sentencepiece model trained here on a few
sentences, a tiny HiFi-GAN vocoder, a random x-vector), each served over gRPC and checked by the
conformance suite; seeding, and the refusals of a directory it cannot serve."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from voxarena.codec import decode_audio
from voxarena.sdk import SynthesisRequest
from voxarena.sdk.testing import serve_in_process
from voxarena.services.generators.hf_tts.model import HfTtsModel
from voxarena.v1 import common_pb2, generator_pb2

CHARACTERS = " abcdefghijklmnopqrstuvwxyz'.,?!-"
SENTENCES = (
    "the quick brown fox jumps over the lazy dog.",
    "pack my box with five dozen liquor jugs.",
    "good morning to you. thank you very much!",
    "hello world, is this a test?",
)


@pytest.fixture(scope="module")
def vits_dir(tmp_path_factory) -> Path:
    """A 35k-parameter VITS: one layer everywhere, a 256x upsampling HiFi-GAN decoder, 16 kHz. Random
    weights with the default noise scales give ~0.06 s of audio per character (the duration predictor's
    random log-durations) at an RMS near 0.8 (the decoder's tanh): inside conformance's bounds as built,
    no weight edited."""
    import torch
    from transformers import VitsConfig, VitsModel, VitsTokenizer

    directory = tmp_path_factory.mktemp("tiny-vits")
    vocab = {c: i for i, c in enumerate(["<pad>", *CHARACTERS])}
    (directory / "vocab.json").write_text(json.dumps(vocab))
    VitsTokenizer(
        str(directory / "vocab.json"), pad_token="<pad>", add_blank=True, normalize=True, phonemize=False
    ).save_pretrained(directory)
    cfg = VitsConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        ffn_dim=32,
        flow_size=16,
        spectrogram_bins=33,
        upsample_initial_channel=32,
        upsample_rates=[8, 8, 4],
        upsample_kernel_sizes=[16, 16, 8],
        resblock_kernel_sizes=[3],
        resblock_dilation_sizes=[[1, 3]],
        prior_encoder_num_flows=1,
        prior_encoder_num_wavenet_layers=1,
        posterior_encoder_num_wavenet_layers=1,
        duration_predictor_num_flows=1,
        duration_predictor_filter_channels=16,
        depth_separable_num_layers=1,
        sampling_rate=16000,
    )
    torch.manual_seed(0)
    VitsModel(cfg).save_pretrained(directory)
    return directory


@pytest.fixture(scope="module")
def speecht5_dir(tmp_path_factory) -> Path:
    """A tiny SpeechT5 (hidden 16, one layer each way, 16 mel bins) and HiFi-GAN (256x, 16 kHz). Random
    weights need two edits to sound like an answer, both to the saved checkpoint, none to the service:
    the stop-token head's bias is set to -8 (a random head stops at the first frame, giving 32 ms for a
    sentence), so decoding runs to maxlenratio (20 frames per token / reduction 2: ~0.3 s per character);
    and the vocoder's output convolution is scaled up 10^7 (a random decoder's mels are near zero and the
    vocoder's output near -190 dBFS)."""
    spm = pytest.importorskip("sentencepiece", reason="SpeechT5's tokenizer needs sentencepiece (the hf-tts extra)")
    import torch
    from transformers import (
        SpeechT5Config,
        SpeechT5FeatureExtractor,
        SpeechT5ForTextToSpeech,
        SpeechT5HifiGan,
        SpeechT5HifiGanConfig,
        SpeechT5Processor,
        SpeechT5Tokenizer,
    )

    directory = tmp_path_factory.mktemp("tiny-speecht5")
    corpus = directory / "corpus.txt"
    corpus.write_text("\n".join(SENTENCES * 5))
    spm.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(directory / "spm_char"),
        model_type="char",
        vocab_size=40,
        character_coverage=1.0,
        bos_id=0,
        pad_id=1,
        eos_id=2,
        unk_id=3,
        minloglevel=2,
    )
    tokenizer = SpeechT5Tokenizer(str(directory / "spm_char.model"))
    SpeechT5Processor(tokenizer=tokenizer, feature_extractor=SpeechT5FeatureExtractor(num_mel_bins=16)).save_pretrained(
        directory
    )
    cfg = SpeechT5Config(
        vocab_size=len(tokenizer),
        hidden_size=16,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=32,
        decoder_ffn_dim=32,
        num_mel_bins=16,
        speech_decoder_prenet_layers=1,
        speech_decoder_prenet_units=16,
        speech_decoder_postnet_units=16,
        speech_decoder_postnet_layers=2,
        speaker_embedding_dim=8,
        reduction_factor=2,
        conv_dim=(16,),
        conv_stride=(5,),
        conv_kernel=(10,),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2,
    )
    vocoder_cfg = SpeechT5HifiGanConfig(
        model_in_dim=16,
        upsample_initial_channel=32,
        upsample_rates=[4, 4, 4, 4],
        upsample_kernel_sizes=[8, 8, 8, 8],
        resblock_kernel_sizes=[3],
        resblock_dilation_sizes=[[1, 3]],
        sampling_rate=16000,
    )
    torch.manual_seed(0)
    model, vocoder = SpeechT5ForTextToSpeech(cfg), SpeechT5HifiGan(vocoder_cfg)
    with torch.no_grad():
        model.speech_decoder_postnet.prob_out.bias.fill_(-8.0)
        vocoder.conv_post.weight.mul_(1e7)
    model.save_pretrained(directory)
    vocoder.save_pretrained(directory / "vocoder")
    np.save(directory / "xvector.npy", np.random.default_rng(0).standard_normal(8).astype(np.float32))
    return directory


def conformance_counts(address: str) -> Counter:
    from voxarena.conformance import run_conformance

    checks = run_conformance(address, timeout=120)
    assert not [c for c in checks if c.status == "FAIL"], [c for c in checks if c.status == "FAIL"]
    return Counter(c.status for c in checks)


def request(text: str, seed: int, **parameters: str) -> SynthesisRequest:
    return SynthesisRequest(request_id="r", seed=seed, task="TTS", text=text, parameters=parameters)


def test_vits_served_and_conforming(vits_dir):
    from transformers import VitsModel

    with serve_in_process(HfTtsModel(vits_dir)) as served:
        info = served.stub().GetInfo(common_pb2.GetInfoRequest())
        assert info.family == generator_pb2.FULLY_END_TO_END and list(info.tasks) == [generator_pb2.TTS]
        expected = VitsModel.from_pretrained(vits_dir, local_files_only=True).num_parameters()
        assert info.model.parameter_count == expected > 0 and info.model.deterministic
        assert len(info.model.weights_sha256) == 64 and info.model.native_sample_rate == 16000
        assert info.model.metadata["architecture"] == "VitsModel"
        assert {o.name for o in info.options} == {"noise_scale", "noise_scale_duration", "speaking_rate"}
        counts = conformance_counts(served.address)
    assert counts["PASS"] > 0


def test_vits_same_seed_same_bytes(vits_dir):
    first, second = HfTtsModel(vits_dir), HfTtsModel(vits_dir)  # two loads: nothing carried between them
    first.load()
    second.load()
    defaults = {o.name: o.default for o in first.options}
    a = first.synthesize(request("hello world.", 7, **defaults)).audio.samples
    b = second.synthesize(request("hello world.", 7, **defaults)).audio.samples
    c = first.synthesize(request("hello world.", 8, **defaults)).audio.samples
    assert a.tobytes() == b.tobytes() and a.tobytes() != c.tobytes()
    quiet = {**defaults, "noise_scale": "0", "noise_scale_duration": "0"}  # no noise: the seed does not matter
    assert (
        first.synthesize(request("hello world.", 7, **quiet)).audio.samples.tobytes()
        == first.synthesize(request("hello world.", 8, **quiet)).audio.samples.tobytes()
    )
    slow = first.synthesize(request("hello world.", 7, **{**quiet, "speaking_rate": "0.5"})).audio
    fast = first.synthesize(request("hello world.", 7, **{**quiet, "speaking_rate": "2"})).audio
    assert slow.duration > fast.duration


def test_vits_option_out_of_range_names_it(vits_dir):
    import grpc

    with serve_in_process(HfTtsModel(vits_dir)) as served:
        req = generator_pb2.SynthesizeRequest(
            request_id="x", task=generator_pb2.TTS, text="hello.", parameters={"speaking_rate": "9"}
        )
        with pytest.raises(grpc.RpcError) as e:
            served.stub().Synthesize(req)
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "speaking_rate" in e.value.details()


def test_refusals(vits_dir, tmp_path):
    missing = tmp_path / "nowhere"
    with pytest.raises(RuntimeError, match=f"model directory {missing} has no config.json"):
        HfTtsModel(missing).load()
    with pytest.raises(RuntimeError, match="VOXARENA_HF_TTS_MODEL_DIR"):
        HfTtsModel(tmp_path).load()
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "wav2vec2"}))
    with pytest.raises(RuntimeError, match=r"model_type 'wav2vec2' is not .* supported: vits, speecht5, bark"):
        HfTtsModel(tmp_path).load()
    no_weights = tmp_path / "no-weights"
    no_weights.mkdir()
    for f in ("config.json", "vocab.json", "tokenizer_config.json"):
        (no_weights / f).write_text((vits_dir / f).read_text())
    with pytest.raises(Exception, match="no-weights"):  # transformers' own error names the directory
        HfTtsModel(no_weights).load()


@pytest.mark.slow
def test_speecht5_served_and_conforming(speecht5_dir):
    model = HfTtsModel(speecht5_dir, speaker_embedding=speecht5_dir / "xvector.npy")
    with serve_in_process(model) as served:
        info = served.stub().GetInfo(common_pb2.GetInfoRequest())
        assert info.family == generator_pb2.ACOUSTIC_MODEL_VOCODER and info.model.native_sample_rate == 16000
        assert info.model.metadata["vocoder"] == "SpeechT5HifiGan"
        req = generator_pb2.SynthesizeRequest(request_id="s", task=generator_pb2.TTS, text="hello world.", seed=3)
        a, b = (decode_audio(served.stub().Synthesize(req).audio) for _ in range(2))
        assert a.samples.tobytes() == b.samples.tobytes()  # the prenet's dropout follows the seed
        counts = conformance_counts(served.address)
    assert counts["PASS"] > 0


@pytest.mark.slow  # the SpeechT5 fixture: a sentencepiece model and two networks built (~20-60 s here)
def test_speecht5_needs_its_vocoder_and_speaker(speecht5_dir, tmp_path):
    with pytest.raises(RuntimeError, match="speaker x-vector"):
        HfTtsModel(speecht5_dir).load()
    with pytest.raises(RuntimeError, match=f"{tmp_path} has no config.json; .* --vocoder-dir"):
        HfTtsModel(speecht5_dir, vocoder_dir=tmp_path, speaker_embedding=speecht5_dir / "xvector.npy").load()
    wrong = tmp_path / "x.npy"
    np.save(wrong, np.zeros(5, np.float32))
    with pytest.raises(RuntimeError, match="5 values, the model's speaker_embedding_dim is 8"):
        HfTtsModel(speecht5_dir, speaker_embedding=wrong).load()


def test_service_entry_point_takes_its_options(tmp_path):
    import subprocess
    import sys

    (tmp_path / "config.json").write_text(json.dumps({"model_type": "fastspeech2_conformer"}))
    out = subprocess.run(
        [sys.executable, "-m", "voxarena.services.generators.hf_tts", "--port", "0", "--model-dir", str(tmp_path)],
        cwd=Path(__file__).resolve().parents[3],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 1 and "model_type 'fastspeech2_conformer' is not" in out.stderr, out.stderr[-2000:]

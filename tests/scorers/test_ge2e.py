"""The torch-free GE2E path (Resemblyzer's preprocessing + ONNX encoder) against Resemblyzer itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from voxarena.codec import read_audio_file, resample
from voxarena.scorers.ge2e import OnnxVoiceEncoder, partial_slices

REPO = Path(__file__).resolve().parents[2]


def test_partial_slices_match_resemblyzer():
    from resemblyzer import VoiceEncoder

    for n in (1, 500, 16000, 25599, 25600, 25601, 40000, 123457, 16000 * 30):
        assert partial_slices(n) == VoiceEncoder.compute_partial_slices(n, 1.3, 0.75)


def test_onnx_embeddings_match_resemblyzer(speech_dir):
    from resemblyzer import VoiceEncoder, preprocess_wav

    reference = VoiceEncoder(device="cpu", verbose=False)
    ours = OnnxVoiceEncoder()
    for path in sorted((speech_dir / "LibriSpeech" / "test-clean").glob("*/*/*.flac"))[:3]:
        clip = read_audio_file(str(path))
        wav = preprocess_wav(resample(clip.samples, clip.sample_rate, 16000), source_sr=16000)
        np.testing.assert_allclose(ours.embed_utterance(wav), reference.embed_utterance(wav), atol=2e-5)


def test_sim_runs_without_torch(speech_dir):
    path = sorted((speech_dir / "LibriSpeech" / "test-clean").glob("*/*/*.flac"))[0]
    code = f"""
import importlib.abc, sys

class NoTorch(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "torch":
            raise ImportError("torch is blocked in this test")

sys.meta_path.insert(0, NoTorch())
from voxarena.scorers.speaker import embed
from voxarena.codec import read_audio_file
e = embed(read_audio_file({str(path)!r}))
print(e.shape, round(float(e @ e), 4), "torch" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "(256,) 1.0 False"


def test_refuses_a_model_whose_hash_differs(tmp_path):
    from voxarena.scorers import ge2e

    bad = tmp_path / "m.onnx"
    bad.write_bytes(ge2e.MODEL.read_bytes()[:-10] + b"0123456789")
    with pytest.raises(RuntimeError, match="does not match"):
        OnnxVoiceEncoder(bad)

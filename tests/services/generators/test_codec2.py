"""codec2: codec re-synthesis through Debian's c2enc / c2dec, on real LibriSpeech: the source's length at 8 kHz,
quality that falls with the bit rate (PESQ against the source), the same bytes twice, a mode not offered refused
by name, and conformance in process."""

from __future__ import annotations

import numpy as np
import pytest

from voxarena.codec import AudioClip, read_audio_file, resample
from voxarena.conformance import run_conformance
from voxarena.sdk import InvalidArgument, SynthesisRequest
from voxarena.services.generators.codec2.model import Codec2Model


@pytest.fixture(scope="module")
def model() -> Codec2Model:
    m = Codec2Model()
    m.load()
    return m


def _reconstruct(model: Codec2Model, clip: AudioClip, mode: str) -> AudioClip:
    return model.synthesize(SynthesisRequest("r", 1, "RECONSTRUCT", source_audio=clip, parameters={"mode": mode})).audio


def test_quality_falls_with_the_bit_rate(model, speech_dir):
    from pesq import pesq

    path = next((speech_dir / "LibriSpeech" / "test-clean").glob("*/*/*.flac"))
    clip = read_audio_file(str(path))
    reference = resample(clip.samples, clip.sample_rate, 8000).astype(np.float64)
    scores = {}
    for mode in ("3200", "1300", "700C"):
        out = _reconstruct(model, clip, mode)
        assert out.sample_rate == 8000 and out.samples.size == reference.size
        scores[mode] = pesq(8000, reference, out.samples.astype(np.float64), "nb")
    assert scores["3200"] > scores["1300"] > scores["700C"] > 1.0, scores
    again = _reconstruct(model, clip, "1300")
    assert np.array_equal(again.samples, _reconstruct(model, clip, "1300").samples)


def test_a_mode_not_offered_is_refused_by_name(model):
    clip = AudioClip(np.sin(np.arange(8000) / 5.0).astype(np.float32) * 0.3, 8000)
    with pytest.raises(InvalidArgument, match="mode='2000' is not one of 3200"):
        _reconstruct(model, clip, "2000")


def test_codec2_passes_conformance_in_process(in_process_model):
    checks = run_conformance(in_process_model(Codec2Model()), timeout=60)
    failed = [f"{c.name}: {c.detail}" for c in checks if c.status == "FAIL"]
    assert not failed, failed

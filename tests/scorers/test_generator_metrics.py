"""Generator metrics: counting and aggregation (fast), and the real ASR / speaker models (slow)."""

from __future__ import annotations

import numpy as np
import pytest

from voxarena.codec import AudioClip, read_audio_file
from voxarena.metric_catalogue import UnknownMetric
from voxarena.scorers import asr
from voxarena.scorers.registry import ClipInputs, get_metric


def clip_with(text: str, hypothesis: str) -> ClipInputs:
    c = ClipInputs(request_id="c", audio=AudioClip(np.zeros(1600, np.int16), 16000), text=text)
    c.cache["asr.hypothesis"] = hypothesis  # what the ASR "heard"
    return c


def test_wer_counts_and_corpus_aggregation():
    wer = get_metric("wer")
    # ref "the cat sat on the mat" (6 words); hyp drops "the", swaps "mat"->"hat", adds "down": S1 D1 I1
    v1, notes = wer.measure(clip_with("The cat sat on the mat.", "cat sat down on the hat"))
    assert (v1["wer.substitutions"], v1["wer.deletions"], v1["wer.insertions"], v1["wer.ref"]) == (1, 1, 1, 6)
    v2, _ = wer.measure(clip_with("Hello world", "hello world"))
    assert v2["wer.errors"] == 0 and v2["wer.ref"] == 2
    # corpus WER from counts (3 errors / 8 words), not the mean of per-clip ratios (0.25)
    assert wer.aggregate([v1, v2]) == pytest.approx(3 / 8)
    assert notes["asr.reference"] == "the cat sat on the mat"


def test_normaliser_is_whisper_english():
    wer = get_metric("wer")
    v, notes = wer.measure(clip_with("Mr. Smith paid $20.", "mister smith paid twenty dollars"))
    assert v["wer.errors"] == 0, notes


def test_cer_counts():
    v, _ = get_metric("cer").measure(clip_with("abc", "abd"))
    assert v["cer.errors"] == 1 and v["cer.ref"] == 3


def test_unknown_metric_suggests():
    with pytest.raises(UnknownMetric, match="did you mean 'wer'"):
        get_metric("werr")


def test_rtf_ratio_of_sums():
    rtf = get_metric("rtf")
    a = rtf.measure(ClipInputs("a", AudioClip(np.zeros(16000, np.int16), 16000), generation_wall_seconds=0.5))[0]
    b = rtf.measure(ClipInputs("b", AudioClip(np.zeros(48000, np.int16), 16000), generation_wall_seconds=0.5))[0]
    assert rtf.aggregate([a, b]) == pytest.approx(1.0 / 4.0)


@pytest.mark.slow
def test_whisper_on_real_speech(speech_dir):
    path = speech_dir / "LibriSpeech" / "test-clean" / "1089" / "134686" / "1089-134686-0000.flac"
    text = (
        "HE HOPED THERE WOULD BE STEW FOR DINNER TURNIPS AND CARROTS AND BRUISED POTATOES AND FAT MUTTON PIECES "
        "TO BE LADLED OUT IN THICK PEPPERED FLOUR FATTENED SAUCE"
    )
    values, notes = get_metric("wer").measure(ClipInputs("x", read_audio_file(str(path)), text=text))
    assert values["wer.errors"] / values["wer.ref"] < 0.2, notes
    assert "asr.model_sha256" in asr.asr_fingerprint()


def test_a_forced_ctranslate2_isa_is_in_the_fingerprint(monkeypatch):
    """CTranslate2's kernels change Whisper's words (AVX512 forced here: other words on some clips), so a
    forced choice is part of the numbers; the default adds nothing, keeping earlier runs' fingerprints."""
    monkeypatch.delenv("CT2_FORCE_CPU_ISA", raising=False)
    assert "asr.cpu_isa" not in asr.asr_fingerprint()
    monkeypatch.setenv("CT2_FORCE_CPU_ISA", "AVX512")
    assert asr.asr_fingerprint()["asr.cpu_isa"] == "CT2_FORCE_CPU_ISA=AVX512"


@pytest.mark.slow
def test_speaker_similarity_same_vs_other_speaker(speech_dir):
    other = sorted((speech_dir / "LibriSpeech" / "test-other").iterdir())
    sim = get_metric("sim")
    same, diff = [], []
    for spk_a, spk_b in zip(other[:4], other[1:5]):
        a = sorted(spk_a.glob("*/*.flac"))
        b = sorted(spk_b.glob("*/*.flac"))
        ca, ca2, cb = (read_audio_file(str(p)) for p in (a[0], a[1], b[0]))
        same.append(sim.measure(ClipInputs("s", ca2, speaker_reference=ca))[0]["sim.cosine"])
        diff.append(sim.measure(ClipInputs("d", cb, speaker_reference=ca))[0]["sim.cosine"])
    assert np.mean(same) > np.mean(diff) + 0.1, (same, diff)

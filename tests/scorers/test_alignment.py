"""The scorer's Align (forced alignment with PocketSphinx, voxarena/scorers/alignment.py) on LibriSpeech
clips and their transcripts, checked against an aligner written apart: Whisper tiny.en's own word
timestamps (faster-whisper, the scorer's ASR model). Two different models agree on where most words lie;
the bad transcripts are refused with INVALID_ARGUMENT naming why."""

from __future__ import annotations

import grpc
import numpy as np
import pytest
import soundfile as sf

from voxarena.codec import AudioClip, encode_audio
from voxarena.scorers.asr import transcriber
from voxarena.scorers.service import ScorerServicer
from voxarena.sdk.testing import serve_servicers
from voxarena.v1 import scorer_pb2, scorer_pb2_grpc

pytestmark = pytest.mark.slow  # Whisper for the independent timestamps

CLIPS = ["1089-134686-0000", "8224-274381-0007", "5142-36377-0007"]
CUT_TIGHT = "2300-131720-0015"  # PocketSphinx stops before its last word, "it": refused, not guessed


@pytest.fixture(scope="module")
def scorer():
    servicer = ScorerServicer(fingerprint_metrics=("wer",), clip_workers=1)
    name = scorer_pb2.DESCRIPTOR.services_by_name["ScorerService"].full_name
    with serve_servicers(
        [(name, lambda s: scorer_pb2_grpc.add_ScorerServiceServicer_to_server(servicer, s))], load=servicer.load
    ) as served:
        yield served.stub(scorer_pb2_grpc.ScorerServiceStub)


def librispeech(speech_dir, utt: str) -> tuple[AudioClip, str]:
    speaker, chapter, _ = utt.split("-")
    folder = speech_dir / "LibriSpeech" / "test-clean" / speaker / chapter
    text = next(
        line.split(" ", 1)[1]
        for line in (folder / f"{speaker}-{chapter}.trans.txt").read_text().splitlines()
        if line.startswith(utt + " ")
    )
    x, rate = sf.read(folder / f"{utt}.flac", dtype="float32")
    return AudioClip(x, rate), text


@pytest.mark.parametrize("utt", CLIPS)
def test_word_boundaries_agree_with_whisper_word_timestamps(scorer, speech_dir, utt):
    clip, text = librispeech(speech_dir, utt)
    resp = scorer.Align(scorer_pb2.AlignRequest(request_id=utt, audio=encode_audio(clip), text=text))
    words = list(resp.words)
    assert resp.request_id == utt and resp.aligner.startswith("pocketsphinx ")
    assert [w.word for w in words] == text.lower().split()
    duration = clip.samples.size / clip.sample_rate
    assert all(0 <= w.start_seconds < w.end_seconds <= duration for w in words)
    assert all(a.end_seconds <= b.start_seconds for a, b in zip(words, words[1:]))
    # Whisper's own word times on the same clip (its words may differ: compare the words both spell alike).
    model, _ = transcriber()
    segments, _ = model.transcribe(clip.samples, language="en", word_timestamps=True, beam_size=1)
    whisper = [(w.word.strip(" .,?!").lower(), w.start, w.end) for s in segments for w in s.words]
    mids, used = [], 0
    for w in words:
        for k in range(used, len(whisper)):
            if whisper[k][0] == w.word:
                mids.append(abs((w.start_seconds + w.end_seconds) / 2 - (whisper[k][1] + whisper[k][2]) / 2))
                used = k + 1
                break
    assert len(mids) >= 0.7 * len(words), (len(mids), len(words))
    assert np.median(mids) < 0.15 and np.mean(np.array(mids) < 0.3) >= 0.8, mids


@pytest.mark.parametrize(
    "text,reason",
    [("", "no words"), ("!!! ...", "no words"), ("by quick marches " * 40, "could not be aligned"), (None, "22 of 23")],
)
def test_transcripts_that_cannot_be_aligned_are_invalid_arguments(scorer, speech_dir, text, reason):
    clip, transcript = librispeech(speech_dir, CUT_TIGHT)
    text = text or ("" if reason == "no words" else transcript)
    with pytest.raises(grpc.RpcError) as e:
        scorer.Align(scorer_pb2.AlignRequest(request_id="bad", audio=encode_audio(clip), text=text))
    assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT and reason in e.value.details()
    assert e.value.details().startswith("bad: ")


def test_words_outside_the_dictionary_are_spelled_as_the_dictionary_would():
    """espeak-ng's IPA mapped to ARPAbet, against the dictionary's own entries for words it has."""
    from pocketsphinx import Decoder

    from voxarena.scorers.alignment import pronounce

    decoder = Decoder(loglevel="FATAL")
    words = "counsel belly xylophone quickly general their hour thought judge measure church".split()
    same = [w for w in words if pronounce(w) == decoder.lookup_word(w)]
    assert len(same) >= 10, [(w, pronounce(w), decoder.lookup_word(w)) for w in words]


def test_without_espeak_a_word_outside_the_dictionary_is_named(monkeypatch, tmp_path):
    from voxarena.scorers.alignment import pronounce
    from voxarena.sdk.errors import InvalidArgument

    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(InvalidArgument, match="'zzqxv' is outside the aligner's dictionary .espeak-ng"):
        pronounce("zzqxv")

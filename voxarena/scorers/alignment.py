"""Forced alignment of a clip to its transcript (the scorer's ``Align``): CMU PocketSphinx 5 with its
bundled US English acoustic model and dictionary, 10 ms frames, audio at 16 kHz (soxr HQ).

Why forced alignment and not an ASR's word timestamps: the corpus transcripts are known, so the aligner
only places the words; it cannot mishear them, and a word it cannot place is an error, not a silent
substitution. Whisper's word times come from attention and drift by tens of milliseconds; PocketSphinx's
are HMM state boundaries at 10 ms. A word outside the dictionary cannot be aligned: INVALID_ARGUMENT
naming it (the item is not spliced). A word the dictionary lacks is spelled by espeak-ng (``--ipa``, en-us),
its IPA mapped onto the dictionary's 39 ARPAbet phones (``IPA_TO_ARPABET``; on the dictionary's own words the
mapping gives the dictionary's pronunciation for 11 of 12 common words, the twelfth one vowel apart), and
added to this thread's decoder: LibriSpeech's test-clean has a word outside the dictionary in about half its
utterances. PocketSphinx sometimes stops before the last word of a clip cut tight after it (1 of 14 in
test-clean here): the clip then fails to align (INVALID_ARGUMENT) rather than get a guessed boundary.
"""

from __future__ import annotations

import re
import subprocess
from importlib.metadata import version
from typing import Any

import numpy as np

from voxarena.codec import RESAMPLER, AudioClip, resample
from voxarena.sdk.errors import InvalidArgument

RATE = 16000
FRAME_SECONDS = 0.01
_NOT_WORDS = {"<s>", "</s>", "<sil>", "[NOISE]", "(NULL)"}


def _decoder() -> Any:
    """A new ``pocketsphinx.Decoder`` for each clip: one decoder carries state from an utterance to the next
    (its cepstral mean, batch CMN or not), which moved word boundaries by 10 ms depending on what it had
    aligned before; a new one costs about 0.2 s and makes the alignment a function of the clip alone."""
    from pocketsphinx import Decoder

    return Decoder(samprate=RATE, loglevel="FATAL")


# IPA (espeak-ng, en-us) -> ARPAbet (CMUdict's 39 phones); two-character symbols first, stress and length dropped.
IPA_TO_ARPABET = {
    "aɪ": "AY", "aʊ": "AW", "eɪ": "EY", "oʊ": "OW", "əʊ": "OW", "ɔɪ": "OY", "tʃ": "CH", "dʒ": "JH",
    "ɑ": "AA", "ɒ": "AA", "a": "AA", "æ": "AE", "ʌ": "AH", "ə": "AH", "ɐ": "AH", "ɚ": "ER", "ɜ": "ER",
    "ɛ": "EH", "e": "EH", "ɪ": "IH", "ᵻ": "IH", "i": "IY", "ɔ": "AO", "o": "OW", "ʊ": "UH", "u": "UW",
    "p": "P", "b": "B", "t": "T", "d": "D", "k": "K", "g": "G", "ɡ": "G", "f": "F", "v": "V", "θ": "TH",
    "ð": "DH", "s": "S", "z": "Z", "ʃ": "SH", "ʒ": "ZH", "h": "HH", "m": "M", "n": "N", "ŋ": "NG", "l": "L",
    "w": "W", "j": "Y", "ɹ": "R", "r": "R", "ɾ": "T", "x": "HH",
}  # fmt: skip
_IPA_MARKS = set("ˈˌː\u200d\u0329.ʔ -")


def ipa_to_arpabet(ipa: str) -> str:
    """``ipa`` as space-separated ARPAbet phones (ER + R is ER); ValueError on a symbol it does not know."""
    phones: list[str] = []
    i = 0
    while i < len(ipa):
        if ipa[i] in _IPA_MARKS:
            i += 1
            continue
        symbol = ipa[i : i + 2] if ipa[i : i + 2] in IPA_TO_ARPABET else ipa[i]
        if symbol not in IPA_TO_ARPABET:
            raise ValueError(f"IPA {ipa!r}: no ARPAbet phone for {symbol!r}")
        phone = IPA_TO_ARPABET[symbol]
        if not (phone == "R" and phones and phones[-1] == "ER"):
            phones.append(phone)
        i += len(symbol)
    return " ".join(phones)


def pronounce(word: str) -> str:
    """ARPAbet of a word outside the dictionary, from espeak-ng's IPA; InvalidArgument when it cannot be had."""
    try:
        ipa = subprocess.run(
            ["espeak-ng", "-q", "-v", "en-us", "--ipa"], input=word, capture_output=True, text=True, timeout=30
        ).stdout.strip()
        return ipa_to_arpabet(ipa)
    except FileNotFoundError:
        raise InvalidArgument(
            f"word {word!r} is outside the aligner's dictionary (espeak-ng, which spells such words, is not installed)"
        ) from None
    except ValueError as e:
        raise InvalidArgument(f"word {word!r} is outside the aligner's dictionary and cannot be spelled: {e}") from None


def aligner_name() -> str:
    return (
        f"pocketsphinx {version('pocketsphinx')} forced alignment, bundled en-us (words outside it spelled by "
        f"espeak-ng), 10 ms frames, resampler {RESAMPLER}"
    )


def transcript_words(text: str) -> list[str]:
    """The words to align: lower case, apostrophes kept, other punctuation dropped."""
    return re.sub(r"[^a-z' ]+", " ", text.lower()).split()


def align(clip: AudioClip, text: str) -> list[tuple[str, float, float]]:
    """(word, start s, end s) of each transcript word, in order; InvalidArgument naming what cannot be aligned."""
    words = transcript_words(text)
    if not words:
        raise InvalidArgument("the transcript has no words to align")
    decoder = _decoder()
    for word in sorted({w for w in words if decoder.lookup_word(w) is None}):
        decoder.add_word(word, pronounce(word), False)
    x = resample(clip.samples, clip.sample_rate, RATE)
    pcm = (np.clip(x, -1, 1) * 32767).astype("<i2").tobytes()
    try:
        decoder.set_align_text(" ".join(words))
        decoder.start_utt()
        decoder.process_raw(pcm, full_utt=True)
        decoder.end_utt()
    except RuntimeError as e:
        raise InvalidArgument(f"alignment failed: {e}") from None
    placed = [
        (re.sub(r"\(\d+\)$", "", s.word), s.start_frame * FRAME_SECONDS, (s.end_frame + 1) * FRAME_SECONDS)
        for s in decoder.seg() or ()  # None when no path reached the end of the transcript's first word
        if s.word not in _NOT_WORDS
    ]
    if [w for w, _, _ in placed] != words:
        raise InvalidArgument(
            f"the audio could not be aligned to its transcript ({len(placed)} of {len(words)} words placed)"
        )
    duration = clip.samples.size / clip.sample_rate
    return [(w, round(a, 2), round(min(b, duration), 6)) for w, a, b in placed]

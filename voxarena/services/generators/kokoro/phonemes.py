"""English text -> Kokoro token ids, through eSpeak NG's IPA (the Debian ``espeak-ng`` program).

Kokoro-82M was trained on misaki phonemes; for English words outside its lexicon misaki itself falls
back to eSpeak NG and rewrites eSpeak's IPA into Kokoro's inventory. We do the same for all text
(so no lexicon and no torch): ``espeak-ng -q --ipa -v en-us --tie=^`` marks multi-letter phonemes
with ``^``, and the table below (misaki's espeak fallback, American variant) turns diphthongs and
affricates into Kokoro's one-letter symbols (eɪ->A, aɪ->I, aʊ->W, ɔɪ->Y, oʊ->O, dʒ->ʤ, tʃ->ʧ), r->ɹ,
ɐ->ə, ɚ->əɹ and drops length marks.

eSpeak drops punctuation, which Kokoro reads as pauses and intonation, so the text is cut after each
punctuation mark first, every phrase is phonemised alone and its mark is put back.
"""

from __future__ import annotations

import re
import subprocess

from voxarena.sdk.errors import InternalError, InvalidArgument

# Kokoro's context is 512 tokens with a pad at each end; a voice table has one style per length 1..510.
MAX_TOKENS = 510

# eSpeak IPA (with ^ ties) -> Kokoro symbols, longest first so a tied pair wins over its parts.
_ESPEAK_TO_KOKORO = sorted(
    {
        "ʔˌn\u0329": "tn",
        "ʔn\u0329": "tn",
        "ʔn": "tn",
        "ʔ": "t",
        "a^ɪ": "I",
        "a^ʊ": "W",
        "e^ɪ": "A",
        "e": "A",
        "ɔ^ɪ": "Y",
        "o^ʊ": "O",
        "d^ʒ": "ʤ",
        "t^ʃ": "ʧ",
        "ə^l": "ᵊl",
        "ʲ": "",
        "ɚ": "əɹ",
        "r": "ɹ",
        "x": "k",
        "ç": "k",
        "ɐ": "ə",
        "ɬ": "l",
        "\u0303": "",
    }.items(),
    key=lambda kv: -len(kv[0]),
)
# American vowels after the table (misaki's order): r-coloured ɜ, the near-front diphthong, no length.
_AMERICAN = (("ɜːɹ", "ɜɹ"), ("ɜː", "ɜɹ"), ("ɪə", "iə"), ("ː", ""), ("^", ""))

# Marks Kokoro has tokens for; a phrase ends after a run of them followed by a space or the end.
_PUNCTUATION = ".,;:!?—…"
_PHRASE_END = re.compile(rf"(?<=[{_PUNCTUATION}])\s+")
_SENTENCE_END = ".!?…"
# Titles whose full stop is not a sentence end (eSpeak reads them as these words anyway).
_TITLES = {"Mr.": "Mister", "Mrs.": "Missus", "Ms.": "Miz", "Dr.": "Doctor", "St.": "Saint", "Prof.": "Professor"}
_TITLE = re.compile(r"\b(" + "|".join(re.escape(t) for t in _TITLES) + r")(?=\s)")


def espeak_to_kokoro(ipa: str) -> str:
    """Rewrite eSpeak's tied IPA for one phrase into Kokoro's phoneme symbols."""
    ps = " ".join(ipa.split())
    for old, new in _ESPEAK_TO_KOKORO:
        ps = ps.replace(old, new)
    ps = re.sub(r"(\S)\u0329", r"ᵊ\1", ps)  # a syllabic consonant: a schwa before it
    for old, new in _AMERICAN:
        ps = ps.replace(old, new)
    return ps


class EnglishPhonemizer:
    """Text -> phrases of Kokoro token ids, each phrase ending with its punctuation mark (if any)."""

    def __init__(self, exe: str, vocab: dict[str, int], voice: str = "en-us") -> None:
        self._cmd = [exe, "-q", "--ipa", "-v", voice, "--tie=^"]
        self._vocab = vocab
        self._letters = {i for c, i in vocab.items() if c not in _PUNCTUATION + ' "()“”'}

    def ipa(self, text: str) -> str:
        try:
            out = subprocess.run(self._cmd, input=text, capture_output=True, text=True, timeout=60, check=True)
        except (subprocess.SubprocessError, OSError) as e:
            raise InternalError(f"espeak-ng failed to phonemise {text[:40]!r}: {e}") from None
        return out.stdout

    def phrases(self, text: str) -> list[tuple[list[int], bool]]:
        """(token ids, ends a sentence) per phrase, in order; INVALID_ARGUMENT when nothing is speakable."""
        out: list[tuple[list[int], bool]] = []
        text = _TITLE.sub(lambda m: _TITLES[m.group(1)], text.replace("--", "—")).strip()
        for phrase in _PHRASE_END.split(text):
            body = phrase.rstrip(_PUNCTUATION)
            marks = phrase[len(body) :]
            phonemes = espeak_to_kokoro(self.ipa(body)) if body.strip() else ""
            ids = [self._vocab[c] for c in phonemes + marks if c in self._vocab]
            if ids:
                out.append((ids, bool(marks) and marks[-1] in _SENTENCE_END))
        if not any(self._letters.intersection(ids) for ids, _ in out):
            raise InvalidArgument(f"nothing speakable in the text {text[:60]!r} (no phonemes after eSpeak NG)")
        return out


def pieces(phrases: list[tuple[list[int], bool]], limit: int = MAX_TOKENS) -> list[list[int]]:
    """Token sequences of at most ``limit`` ids for the model, cut where the text allows.

    Whole sentences are packed together while they fit; a sentence longer than the limit is cut
    between its phrases, and a phrase longer than the limit between words (space tokens), so long
    text is spoken in several calls instead of being truncated.
    """
    sentences: list[list[list[int]]] = [[]]
    for ids, ends in phrases:
        sentences[-1].append(ids + [SPACE])
        if ends:
            sentences.append([])
    units: list[list[int]] = []  # whole sentences when they fit, else their phrases, else runs of words
    for sentence in filter(None, sentences):
        flat = [t for ids in sentence for t in ids]
        if len(_strip_spaces(flat)) <= limit:
            units.append(flat)
        else:
            for ids in sentence:
                units.extend(_split_words(ids, limit))
    out: list[list[int]] = []
    for unit in units:
        if out and len(_strip_spaces(out[-1] + unit)) <= limit:
            out[-1].extend(unit)
        else:
            out.append(list(unit))
    return [p for p in (_strip_spaces(p) for p in out) if p]


SPACE = 16  # the space token of Kokoro's vocabulary (the engine checks it at load)


def _strip_spaces(ids: list[int]) -> list[int]:
    start, end = 0, len(ids)
    while start < end and ids[start] == SPACE:
        start += 1
    while end > start and ids[end - 1] == SPACE:
        end -= 1
    return ids[start:end]


def _split_words(ids: list[int], limit: int) -> list[list[int]]:
    """Runs of whole words of at most ``limit`` ids (a single longer 'word' is cut hard)."""
    out: list[list[int]] = [[]]
    word: list[int] = []
    for i, t in enumerate(ids):
        word.append(t)
        if t != SPACE and i < len(ids) - 1:
            continue
        while len(word) > limit:
            out.append(word[:limit])
            word = word[limit:]
        if len(out[-1]) + len(word) > limit:
            out.append([])
        out[-1].extend(word)
        word = []
    return [w for w in out if w]

"""Partial fakes: a bona fide clip with word spans replaced by fake speech of the same speaker, whose every
fake sample the arena knows (PartialSpoof, ADD 2023 track 2, LlamaPartialSpoof build theirs alike).

Two tasks of the protocol, each made by one generator call and a splice:

- ``PARTIAL_VOCODED``: copy-synthesis. A RECONSTRUCT generator re-synthesises the whole clip (so it hears
  the context); ``spans`` spans of ``min_words``..``max_words`` words each are taken from its output at
  the very same times and spliced into the original: the speaker's own words, vocoded.
- ``PARTIAL_WORDS``: substituted words. One span of words is replaced by as many new words (drawn from
  ``SUBSTITUTES``: numbers, negations, names, the words an attacker changes), said by a CLONE generator
  with the clip itself as the voice to clone (else a TTS generator, whose voice is its own), trimmed of
  silence, and spliced in place of the old ones: the clip's length changes with the words.

Word boundaries come from the scorer's ``Align`` (forced alignment of the item's transcript). Each span is
loudness-matched to the words it replaces and joined with ``crossfade_ms`` equal-power crossfades inside
the fake interval (``voxarena.dsp.splice``). Spans and new words are drawn from a generator seeded by the
item's seed and the task: the same run makes the same bytes. The generation row's ``partial`` records the
method, the call it took, the aligner, and each span: its fake interval in samples and seconds of the
spliced clip, the words replaced and the words said.
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
from pydantic import Field, model_validator

from voxarena.codec import AudioClip, resample
from voxarena.dsp.splice import match_loudness, splice, trim_silence
from voxarena.orchestrator.fleet.service_config import Strict

# Each partial task, the generator tasks that can make its fake speech (the first one declared is used).
PARTIAL_TASKS: dict[str, tuple[str, ...]] = {"PARTIAL_VOCODED": ("RECONSTRUCT",), "PARTIAL_WORDS": ("CLONE", "TTS")}
METHODS = {"PARTIAL_VOCODED": "vocoded", "PARTIAL_WORDS": "words"}
SUBSTITUTES = (
    "never", "always", "not", "seven", "twenty", "hundred", "thousand", "million", "money", "account",
    "transfer", "tomorrow", "yesterday", "london", "paris", "john", "mary", "doctor", "police", "password",
)  # fmt: skip
MAX_LENGTH_MISMATCH = 0.02  # a RECONSTRUCT output may differ from its source's length by 2 % at most


class PartialConfig(Strict):
    """``protocol.partial``: how partial fakes (tasks PARTIAL_VOCODED, PARTIAL_WORDS) are made."""

    spans: int = Field(1, ge=1, le=3, description="PARTIAL_VOCODED: spans per clip (PARTIAL_WORDS: always one)")
    min_words: int = Field(1, ge=1, le=10, description="words per span, at least")
    max_words: int = Field(3, ge=1, le=10, description="words per span, at most")
    crossfade_ms: float = Field(10.0, ge=0, le=50, description="equal-power crossfade at each joint, ms")
    # Segment scores of detectors without their own (``run.segments``): sliding windows through ScoreBatch.
    window_seconds: float = Field(1.0, ge=0.1, le=10, description="sliding window: its length, seconds")
    window_hop_seconds: float = Field(0.2, ge=0.02, le=2, description="sliding window: its hop, seconds")

    @model_validator(mode="after")
    def _words(self) -> PartialConfig:
        if self.min_words > self.max_words:
            raise ValueError(f"min_words {self.min_words} exceeds max_words {self.max_words}")
        return self


class PartialError(ValueError):
    """The item cannot be made a partial fake (too few words, a span longer than the clip): its row fails."""


def is_partial(task: str) -> bool:
    return task in PARTIAL_TASKS


def generator_task(task: str, declared: set[str] | list[str]) -> str | None:
    """The generator task that makes ``task``'s fake speech for a generator declaring ``declared``:
    ``task`` itself for an ordinary task it declares, None when it cannot."""
    if not is_partial(task):
        return task if task in declared else None
    return next((t for t in PARTIAL_TASKS[task] if t in declared), None)


def _rng(seed: int, task: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(task.encode())])


def choose_spans(n_words: int, seed: int, task: str, cfg: PartialConfig) -> list[tuple[int, int]]:
    """Disjoint word spans [first, last] (inclusive word indices, in order, a word apart at least), seeded."""
    spans = 1 if task == "PARTIAL_WORDS" else cfg.spans
    rng = _rng(seed, task)
    lengths = [int(rng.integers(cfg.min_words, cfg.max_words + 1)) for _ in range(spans)]
    free = n_words - sum(lengths) - (spans - 1)  # words left for the gaps before, between and after
    if free < 0:
        raise PartialError(f"{n_words} aligned words; {spans} span(s) of {lengths} words need {n_words - free}")
    # Split the free words over spans + 1 gaps (stars and bars, seeded), each inner gap one word more.
    cuts = np.sort(rng.integers(0, free + 1, size=spans))
    gaps = np.diff(np.concatenate([[0], cuts]))
    out, first = [], 0
    for k, (gap, length) in enumerate(zip(gaps, lengths)):
        first += int(gap) + (1 if k else 0)
        out.append((first, first + length - 1))
        first += length
    return out


def substitutes(seed: int, replaced: list[str]) -> list[str]:
    """As many new words as ``replaced``, none of them a word they replace, seeded."""
    rng = _rng(seed, "words")
    pool = [w for w in SUBSTITUTES if w not in replaced]
    return [pool[int(i)] for i in rng.choice(len(pool), size=len(replaced), replace=False)]


def _samples(seconds: float, rate: int) -> int:
    return int(round(seconds * rate))


def make_partial(
    task: str,
    original: AudioClip,
    words: list[tuple[str, float, float]],
    spans: list[tuple[int, int]],
    generated: AudioClip,
    crossfade_ms: float,
) -> tuple[AudioClip, list[dict]]:
    """The spliced clip and each span's record: ``generated`` is the RECONSTRUCT of the whole clip
    (PARTIAL_VOCODED) or the new words said (PARTIAL_WORDS); ``words`` the alignment (word, start s, end s)."""
    rate = original.sample_rate
    x = original.as_float32()  # int16 clips (a corpus file, a PCM16 answer) at full scale 1.0 like the rest
    fake = resample(generated.as_float32(), generated.sample_rate, rate).astype(np.float32)
    fade = _samples(crossfade_ms / 1000, rate)
    if task == "PARTIAL_VOCODED" and abs(fake.size - x.size) > MAX_LENGTH_MISMATCH * x.size:
        raise PartialError(f"the reconstruction is {fake.size / rate:.3f} s for a {x.size / rate:.3f} s source")
    records: list[dict[str, Any]] = []
    for first, last in reversed(spans):  # from the end, so that earlier sample positions stay put
        a, b = _samples(words[first][1], rate), min(_samples(words[last][2], rate), x.size)
        if task == "PARTIAL_VOCODED":
            replacement = fake[a:b]
            if replacement.size < b - a:
                raise PartialError(f"the reconstruction ends at {fake.size / rate:.3f} s, before the span's end")
        else:
            replacement = trim_silence(fake, rate)
        replacement = match_loudness(replacement, x[a:b], rate)
        try:
            x, (start, end) = splice(x, a, b, replacement, fade)
        except ValueError as e:
            raise PartialError(str(e)) from None
        shift = (end - start) - (b - a)
        for r in records:  # spans after this one moved with its change of length
            r["start"], r["end"] = r["start"] + shift, r["end"] + shift
        records.append({"start": start, "end": end, "replaced": " ".join(w for w, _, _ in words[first : last + 1])})
    records.reverse()
    for r in records:
        r["start_seconds"], r["end_seconds"] = round(r["start"] / rate, 6), round(r["end"] / rate, 6)
    return AudioClip(x, rate), records

"""piper-vits: one inference per sentence, whose memory grows with its audio, so characters of the longest
sentence x length_scale are bounded; beyond, INVALID_ARGUMENT naming length_scale, before any inference."""

from __future__ import annotations

import pytest

from voxarena.sdk import InvalidArgument, SynthesisRequest
from voxarena.services.generators.piper_vits.model import MAX_SENTENCE_SCALE, PiperVitsModel, check_sentences

SENTENCE = "the birch canoe slid on the smooth planks " * 18  # 756 characters, no full stop


def test_a_long_sentence_slowed_down_is_refused_before_inference():
    model = PiperVitsModel()  # not loaded: the bound is checked before the voice is used
    request = SynthesisRequest("p", 1, "TTS", text=SENTENCE, parameters=model.resolve_options({"length_scale": "4"}))
    with pytest.raises(InvalidArgument, match=r"length_scale=4 with a sentence of 755 characters: 3020 exceeds"):
        model.synthesize(request)


def test_the_bound_is_per_sentence():
    check_sentences(SENTENCE, 1.0)  # 755 <= 800 at the default speed
    check_sentences("The birch canoe slid on the smooth planks. " * 100, 4.0)  # 4300 characters, short sentences
    with pytest.raises(InvalidArgument):
        check_sentences("Short one. " + SENTENCE + "! Another.", 1.1)
    assert MAX_SENTENCE_SCALE == 800

"""Clips the attack tests share: a synthetic voiced clip (float, 1 s) and a dummy-generator clip."""

from __future__ import annotations

import numpy as np
import pytest

from voxarena.codec import AudioClip
from voxarena.sdk import SynthesisRequest
from voxarena.services.testing.dummy_generator import DummyGenerator

RATE = 16000


@pytest.fixture(scope="session")
def voiced_clip() -> AudioClip:
    """Harmonics of 150 Hz up to 4 kHz with a 4 Hz envelope, plus a little white noise (int16, 1 s)."""
    rng = np.random.default_rng(0)
    t = np.arange(RATE) / RATE
    x = sum(np.sin(2 * np.pi * 150 * h * t + rng.uniform(0, 2 * np.pi)) / h for h in range(1, 27))
    x = x * (0.6 + 0.4 * np.sin(2 * np.pi * 4 * t)) + 0.05 * rng.standard_normal(t.size)
    return AudioClip((0.3 * x / np.max(np.abs(x)) * 32767).astype(np.int16), RATE)


@pytest.fixture(scope="session")
def buzz_clip() -> AudioClip:
    """What the dummy generator says for one sentence (its options at their defaults)."""
    model = DummyGenerator()
    model.load()
    defaults = {o.name: o.default for o in model.options}
    text = "Rice is often served in round bowls."
    request = SynthesisRequest("attack-test", 1, "TTS", text=text, parameters=defaults)
    return model.synthesize(request).audio

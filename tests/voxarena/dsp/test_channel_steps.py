"""The channel DSP's step chain (``voxarena.dsp.channel.apply_steps``): a step that is none of its own goes to
the caller's handler, which draws from the same generator where it stands in the chain (so the orchestrator's
transform and attack steps seed as they always did); without a handler such a step is a ChannelError, as are
the orchestrator's service steps when the run cannot reach the service."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from voxarena.codec import AudioClip
from voxarena.dsp.channel import ChannelError, DspStep, apply_steps
from voxarena.orchestrator.run.channel import apply_condition

CLIP = AudioClip((0.2 * np.sin(np.arange(8000) / 7)).astype(np.float32), 16000)


def test_a_foreign_step_goes_to_the_handler_with_the_chains_generator():
    seen = []

    def silence(step, clip, rng):
        seen.append((step.name, clip.sample_rate, int(rng.integers(2**63))))
        return AudioClip(np.zeros(100, np.float32), 8000), {"silenced": step.name}

    foreign = SimpleNamespace(resample=None, codec=None, noise_snr_db=None, gain_db=None, name="s")
    out, done = apply_steps(CLIP, [DspStep(noise_snr_db=20.0), foreign, DspStep(gain_db=6.0)], seed=3, other=silence)
    # the handler's draw comes after the noise's, from the one generator the condition's seed seeds
    rng = np.random.default_rng(3)
    rng.standard_normal(CLIP.samples.size)
    assert seen == [("s", 16000, int(rng.integers(2**63)))]
    assert done["steps"][1:] == [{"silenced": "s"}, {"gain_db": 6.0}]
    assert out.sample_rate == 8000 and out.samples.dtype == np.int16 and not out.samples.any()


def test_a_foreign_step_without_a_handler_is_refused():
    with pytest.raises(ChannelError, match="sets none of resample, codec, noise_snr_db, gain_db"):
        apply_steps(CLIP, [SimpleNamespace(resample=None, codec=None, noise_snr_db=None, gain_db=None)], seed=0)


def test_the_orchestrators_service_steps_need_their_service():
    transform = SimpleNamespace(
        resample=None, codec=None, noise_snr_db=None, gain_db=None, transform="launder", parameters={}, attack=None
    )
    with pytest.raises(ChannelError, match="transform 'launder': this run reaches no transform services"):
        apply_condition(CLIP, [transform], seed=0)
    attack = SimpleNamespace(**{**vars(transform), "transform": None, "attack": SimpleNamespace(target="det")})
    with pytest.raises(ChannelError, match="attack on 'det': this run cannot reach detectors here"):
        apply_condition(CLIP, [attack], seed=0)

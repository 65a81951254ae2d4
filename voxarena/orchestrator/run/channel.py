"""Channel conditions: degrade a clip the way a transmission channel would, before detection.

A condition is a named chain of steps declared in the run config (``conditions:``), applied in
order to every clip a detector sees, bona fide and spoof alike, so each condition is a complete
trial set of its own and the detection matrix becomes generator x condition x detector. The signal
processing steps (``resample: 8000``, ``codec: mp3|opus|vorbis|gsm|ulaw|alaw`` with ``compression``,
``noise_snr_db: 10`` with ``noise: white|pink``, ``gain_db: -6``) are the shared channel DSP,
``voxarena.dsp.channel``, which the ``channel`` transform service serves too. This module adds what only
a run has:

- the seed: a condition's noise is seeded from the run seed, the condition and the clip id
  (``condition_seed``), so the same run degrades the same clip with the same noise;
- ``attack: {target: DETECTOR, queries: 100, snr_db: 30}``  an adaptive black-box attack on a spoofed
  clip against one of the run's detectors (``voxarena.attack``); bona fide clips pass unchanged.
- ``resynthesize: GENERATOR``      the clip re-synthesised by one of the run's generators (its RECONSTRUCT task:
  copy-synthesis by a vocoder, a removal attack on a watermark), seeded from the condition's seed;
- ``transform: NAME``             the clip through a transform service (``transforms:`` in the config, a
  TransformService: a laundering chain, a remote channel), with ``parameters``, seeded from the
  condition's seed; its answer is validated like any service's and its steps recorded.

The degraded clip is stored like any other artifact (content-addressed WAV, PCM 16) and recorded
with its steps, measured bit rate and sha256 in ``degradations.jsonl``; the condition ``clean``
(always present) is the clip as it is.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

import numpy as np

from voxarena.codec import AudioClip
from voxarena.dsp.channel import ChannelError, apply_steps

# (transform name, clip, parameters, seed) -> (the transformed clip, the steps it reports).
Transformer = Callable[[str, AudioClip, dict[str, str], int], tuple[AudioClip, list[str]]]
# (generator name, clip, seed) -> (the re-synthesised clip, what the generator reports: its voice).
Resynthesizer = Callable[[str, AudioClip, int], tuple[AudioClip, str]]
# (clip, the AttackStep config, seed) -> (the attacked clip, what the attack did).
Attacker = Callable[[AudioClip, Any, int], tuple[AudioClip, dict[str, Any]]]


def condition_seed(run_seed: int, condition: str, clip_id: str) -> int:
    """A 64-bit seed that depends only on the run seed, the condition's name and the clip's id."""
    digest = hashlib.sha256(f"{run_seed}|{condition}|{clip_id}".encode()).digest()
    return int.from_bytes(digest[:8], "little")


class _ServiceSteps:
    """The steps that call out of the process: a transform service or an attack on a detector. Each draws
    its seed from the condition's generator where it stands in the chain."""

    def __init__(
        self, transform: Transformer | None, attack: Attacker | None, resynthesize: Resynthesizer | None = None
    ) -> None:
        self.transform, self.attack, self.resynthesize = transform, attack, resynthesize

    def __call__(self, step: Any, clip: AudioClip, rng: np.random.Generator) -> tuple[AudioClip, dict[str, Any]]:
        if step.transform is not None:
            if self.transform is None:
                raise ChannelError(f"transform {step.transform!r}: this run reaches no transform services")
            parameters = dict(step.parameters)
            out, did = self.transform(step.transform, clip, parameters, int(rng.integers(2**63)))
            return out, {"transform": step.transform, "parameters": parameters, "steps": did}
        if getattr(step, "resynthesize", None) is not None:
            if self.resynthesize is None:
                raise ChannelError(f"resynthesize {step.resynthesize!r}: this run reaches no generators here")
            out, voice = self.resynthesize(step.resynthesize, clip, int(rng.integers(2**63)))
            return out, {"resynthesize": step.resynthesize, "voice": voice}
        if step.attack is not None:
            if self.attack is None:
                raise ChannelError(f"attack on {step.attack.target!r}: this run cannot reach detectors here")
            out, record = self.attack(clip, step.attack, int(rng.integers(2**63)))
            return out, {"attack": record}
        raise ChannelError(f"{step!r}: sets none of the channel steps")


def apply_condition(
    clip: AudioClip,
    steps: list,
    seed: int,
    transform: Transformer | None = None,
    attack: Attacker | None = None,
    resynthesize: Resynthesizer | None = None,
) -> tuple[AudioClip, dict]:
    """Apply ``steps`` (``ChannelStep`` configs) in order; returns the PCM-16 clip and what was done.
    ``transform`` calls a transform service, ``resynthesize`` a generator (the run's fleet): what a failed
    call raises passes through."""
    return apply_steps(clip, steps, seed, _ServiceSteps(transform, attack, resynthesize))

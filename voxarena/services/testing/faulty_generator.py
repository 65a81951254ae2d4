"""A generator built on the SDK that breaks one contract rule on purpose (``--fault NAME``).

Each fault is one the SDK cannot prevent (the SDK takes the model's word for its audio, rate, seed
and voice), so each is a mistake a vendor using the SDK can make; ``orchestrator conformance`` must
catch every one. The faults the SDK does prevent (request-id echo, timing, option handling, health)
live in ``raw_faulty_services``, which bypasses it. ``--fault none`` honours the contract: the control.
It does every task and has two voices, one at a rate of its own.

``python -m voxarena.services.testing.faulty_generator --fault wrong_native_rate --port 0``
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from voxarena.codec import AudioClip, resample
from voxarena.sdk import SynthesisRequest, SynthesisResult, Voice, serve

from .dummy_generator import DummyGenerator

TRUE_RATE = 16000
FAULTS = {
    "none": "honours the contract",
    "wrong_native_rate": "declares 22050 Hz and returns 16000 Hz",
    "wrong_voice_rate": "voice 'buzz-8k' declares 8000 Hz and returns 16000 Hz",
    "clone_crashes": "CLONE raises: INTERNAL",
    "not_deterministic": "declares itself deterministic but adds unseeded noise",
    "wrong_seed": "echoes the request's seed + 1",
    "wrong_voice": "says it used voice 'somebody-else'",
    "too_short": "TTS and CLONE return 0.25 s whatever the text",
    "reconstruct_too_long": "RECONSTRUCT returns three times the source",
    "over_full_scale": "returns float samples peaking at 1.5",
    "silent": "returns digital silence of the right length and rate",
    "shared_state": "keeps the request in the model across calls: concurrent calls get each other's audio",
}


class FaultyGenerator(DummyGenerator):
    name = "faulty-generator"
    tasks = ("TTS", "CLONE", "RECONSTRUCT", "CONVERT")
    voices = (Voice("buzz", "en-US", "a pulse train"), Voice("buzz-8k", "en-US", "a pulse train at 8 kHz", 8000))

    def __init__(self, fault: str = "none") -> None:
        super().__init__()
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; known: {', '.join(FAULTS)}")
        self.fault = fault
        self.native_sample_rate = 22050 if fault == "wrong_native_rate" else TRUE_RATE
        self._current: SynthesisRequest | None = None

    def synthesize(self, request: SynthesisRequest) -> SynthesisResult:
        fault = self.fault
        if fault == "clone_crashes" and request.task == "CLONE":
            raise RuntimeError("speaker encoder failed: tensor of shape (0, 256)")
        if fault == "shared_state":  # the bug: per-request state kept on the shared model
            self._current = request
            time.sleep(0.2)  # long enough for concurrent calls to overlap on a busy machine
            request = self._current
        result = super().synthesize(request)
        x, rate = result.audio.as_float32(), result.audio.sample_rate
        if fault == "wrong_native_rate":  # the engine runs at 16 kHz whatever GetInfo says
            x, rate = resample(x, rate, TRUE_RATE), TRUE_RATE
        if request.voice == "buzz-8k" and fault != "wrong_voice_rate":
            x, rate = resample(x, rate, 8000), 8000
        if fault == "not_deterministic":
            x = x + 0.01 * np.random.default_rng().standard_normal(x.size).astype(np.float32)
        if fault == "too_short" and request.task in ("TTS", "CLONE"):
            x = x[: rate // 4]
        if fault == "reconstruct_too_long" and request.task == "RECONSTRUCT":
            x = np.tile(x, 3)
        if fault == "silent":
            x = np.zeros_like(x)
        if fault == "over_full_scale":
            return SynthesisResult(AudioClip((1.5 * x / np.abs(x).max()).astype(np.float32), rate))
        audio = AudioClip((np.clip(x, -1, 1) * 32767).astype(np.int16), rate)
        return SynthesisResult(
            audio,
            voice="somebody-else" if fault == "wrong_voice" else "",
            seed=request.seed + 1 if fault == "wrong_seed" else None,
        )


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fault", default="none", choices=sorted(FAULTS), help="the rule to break")


if __name__ == "__main__":
    serve(lambda args: FaultyGenerator(args.fault), add_arguments=_arguments)

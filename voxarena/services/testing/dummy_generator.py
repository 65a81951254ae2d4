"""A deterministic synthetic 'voice': a seeded hum whose pitch contour follows the text.

It honours the contract through the SDK, like a real generator: TTS and RECONSTRUCT, same seed
gives the same bytes. Its sibling ``dummy_cloner`` does CLONE and CONVERT the same way, mixing in a
fifth of the reference voice, so an I2D chain drifts from iteration to iteration.
``python -m voxarena.services.testing.dummy_generator --port N``
"""

from __future__ import annotations

import hashlib
from typing import ClassVar

import numpy as np

from voxarena.codec import AudioClip, resample
from voxarena.sdk import GeneratorModel, InvalidArgument, Option, SynthesisRequest, SynthesisResult, Voice, serve
from voxarena.tasks import task_inputs


class DummyGenerator(GeneratorModel):
    name = "dummy-generator"
    version = "1.0.0"
    licence = "Apache-2.0"
    family = "VOCODER_DSP"
    tasks: tuple[str, ...] = ("TTS", "RECONSTRUCT")
    native_sample_rate = 16000
    deterministic = True
    timing_scope = "synthesis: numpy buzz"
    voices: ClassVar[tuple[Voice, ...]] = (Voice("buzz", "en-US", "a pulse train"),)
    options = (
        Option("seconds_per_char", "duration per text character", "0.06"),
        Option("sleep", "seconds to wait before answering (for deadline tests)", "0"),
        Option("max_reference_seconds", "refuse longer reference audio, as cloning APIs do", "600"),
    )

    def load(self) -> None:
        pass

    def synthesize(self, request: SynthesisRequest) -> SynthesisResult:
        import time

        sleep = self.float_option(request.parameters, "sleep", 0, 600)
        if sleep:
            time.sleep(sleep)
        rng = np.random.default_rng(request.seed)
        sr = self.native_sample_rate
        needs = task_inputs(request.task)
        if needs.text:
            n = max(
                int(len(request.text) * self.float_option(request.parameters, "seconds_per_char", 0.001, 1) * sr),
                sr // 2,
            )
        else:
            source = request.source_clip()
            n = len(source.samples) * sr // source.sample_rate
        digest = hashlib.sha256(request.text.encode()).digest()
        f0 = 100 + 60 * np.interp(np.arange(n), np.linspace(0, n, 32), np.frombuffer(digest, np.uint8) / 255.0)
        phase = 2 * np.pi * np.cumsum(f0) / sr
        x = 0.3 * np.sin(phase) * (0.5 + 0.5 * np.sin(2 * np.pi * 3 * np.arange(n) / sr)) + 0.001 * rng.standard_normal(
            n
        )
        if needs.reference:
            ref = request.reference_clip()
            limit = self.float_option(request.parameters, "max_reference_seconds", 0.1, 600)
            if ref.duration > limit:
                raise InvalidArgument(f"reference audio is {ref.duration:.1f} s, longer than {limit:g} s")
            voice = resample(ref.samples, ref.sample_rate, sr)
            x = 0.8 * x + 0.2 * np.resize(voice, n)
        return SynthesisResult(AudioClip((np.clip(x, -1, 1) * 32767).astype(np.int16), sr))


if __name__ == "__main__":
    serve(DummyGenerator)

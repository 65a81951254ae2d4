"""Acme Formant as a VoxArena generator: the SDK's ``GeneratorModel`` around the engine in ``synth``.

The class attributes are what GetInfo reports; ``synthesize`` turns a request into the engine's
arguments and its samples into an ``AudioClip``. The SDK does the rest: gRPC, health and
reflection, request checks (empty text, unknown voice, task or option), request id and seed echo,
timing, error codes.
"""

from __future__ import annotations

from typing import ClassVar

from voxarena.sdk import AudioClip, GeneratorModel, Option, SynthesisRequest, SynthesisResult, Voice

from . import synth

# voice name -> its shape in the engine (pitch, vocal tract length)
VOICE_SHAPES = {
    "low": synth.VoiceShape(f0=115.0, formant_scale=1.0),
    "high": synth.VoiceShape(f0=210.0, formant_scale=1.15),
}


class AcmeFormant(GeneratorModel):
    name = "acme-formant"
    version = "0.1.0"
    licence = "Apache-2.0"
    family = "RULE_BASED_FORMANT"  # a voxarena.v1.GeneratorFamily name
    tasks = ("TTS",)
    native_sample_rate = synth.RATE
    deterministic = True  # same text, voice, options and seed -> same bytes (conformance checks it)
    timing_scope = "synthesis: letters to segments, source-filter synthesis in numpy"
    voices: ClassVar[tuple[Voice, ...]] = (
        Voice("low", "en-US", "pitch 115 Hz falling to 92 Hz"),
        Voice("high", "en-US", "pitch 210 Hz, formants 15 % higher"),
    )
    options = (Option("rate", "speaking rate, 0.5 (slow) to 2.0 (fast)", "1.0"),)
    max_text_chars = 1000  # longer texts are INVALID_ARGUMENT (about 80 s of speech)

    def load(self) -> None:
        synth.synthesize("warm up", VOICE_SHAPES["low"])  # nothing to load: a rule-based engine

    def synthesize(self, request: SynthesisRequest) -> SynthesisResult:
        # request.voice is a declared voice (the first one when the client named none) and
        # request.parameters holds every option, defaults filled in: the SDK has checked both.
        rate = self.float_option(request.parameters, "rate", 0.5, 2.0)
        samples = synth.synthesize(request.text, VOICE_SHAPES[request.voice], rate, request.seed)
        return SynthesisResult(AudioClip(samples, synth.RATE), voice=request.voice)

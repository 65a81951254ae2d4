"""eSpeak NG (rule-based formant synthesis), the Debian ``espeak-ng`` program.

Text goes in on stdin (never on the command line), audio comes back as a WAV on stdout at the
engine's native 22,050 Hz. The engine has no randomness: the same text and options give the same
bytes, whatever the seed (which is echoed).
"""

from __future__ import annotations

from typing import ClassVar

from voxarena.sdk import GeneratorModel, Option, SynthesisRequest, SynthesisResult, Voice
from voxarena.sdk.errors import InternalError
from voxarena.sdk.process_engine import program_version, require_program, run_engine, time_limit_for


class EspeakNgModel(GeneratorModel):
    name = "espeak-ng"
    licence = "GPL-3.0-or-later"
    family = "RULE_BASED_FORMANT"
    tasks = ("TTS",)
    native_sample_rate = 22050
    deterministic = True
    timing_scope = "synthesis: espeak-ng process run (start-up + synthesis + WAV write)"
    voices: ClassVar[tuple[Voice, ...]] = (
        Voice("en-us", "en-US", "American English, default male variant"),
        Voice("en-us+f3", "en-US", "American English, female variant f3"),
        Voice("en-us+m3", "en-US", "American English, male variant m3"),
        Voice("en-gb", "en-GB", "British English"),
    )
    options = (
        Option("speed", "words per minute, 80..450", "175"),
        Option("pitch", "base pitch, 0..99", "50"),
        Option("word_gap", "extra pause between words in units of 10 ms, 0..100", "0"),
    )

    def load(self) -> None:
        self._exe = require_program("espeak-ng", "espeak-ng")
        self._version = program_version([self._exe, "--version"])
        self._check_voices()
        self.synthesize_text("Warm up.", self.voices[0].name, {o.name: o.default for o in self.options})

    def _check_voices(self) -> None:
        pass

    def metadata(self) -> dict[str, str]:
        return {"engine": self._version}

    def synthesize_text(self, text: str, voice: str, options: dict[str, str]):
        speed = int(self.float_option(options, "speed", 80, 450))
        pitch = int(self.float_option(options, "pitch", 0, 99))
        gap = int(self.float_option(options, "word_gap", 0, 100))
        cmd = [self._exe, "-v", voice, "-s", str(speed), "-p", str(pitch), "-g", str(gap), "--stdout"]
        clip = run_engine(cmd, text, time_limit_for(text), self.name)
        rate = next((v.sample_rate for v in self.voices if v.name == voice and v.sample_rate), self.native_sample_rate)
        if clip.sample_rate != rate:
            raise InternalError(f"{self.name} wrote {clip.sample_rate} Hz for voice {voice}, expected {rate}")
        return clip

    def synthesize(self, request: SynthesisRequest) -> SynthesisResult:
        return SynthesisResult(
            self.synthesize_text(request.text, request.voice, request.parameters), voice=request.voice
        )

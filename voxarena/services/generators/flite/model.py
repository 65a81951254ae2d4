"""CMU Flite (Debian ``flite``): diphone (kal, kal16) and clustergen unit voices (slt, rms, awb).

The voices are compiled into the Debian flite program. kal speaks at 8 kHz, the others at 16 kHz:
each voice's true rate is in GetInfo (``VoiceSpec.sample_rate``), never resampled. Deterministic.
"""

from __future__ import annotations

from voxarena.sdk import GeneratorModel, Option, SynthesisRequest, SynthesisResult, Voice
from voxarena.sdk.errors import InternalError
from voxarena.sdk.process_engine import program_version, require_program, run_engine, time_limit_for


class FliteModel(GeneratorModel):
    name = "flite"
    licence = "BSD-style (CMU Flite licence); voices from CMU ARCTIC / CMU diphone data, free use"
    family = "CONCATENATIVE"
    tasks = ("TTS",)
    native_sample_rate = 16000
    deterministic = True
    timing_scope = "synthesis: flite process run (start-up + synthesis + WAV write)"
    voices = (
        Voice("slt", "en-US", "CMU ARCTIC slt, US English female, clustergen", 16000),
        Voice("kal", "en-US", "CMU kal diphones, US English male, 8 kHz", 8000),
        Voice("kal16", "en-US", "CMU kal diphones, US English male, 16 kHz", 16000),
        Voice("rms", "en-US", "CMU ARCTIC rms, US English male, clustergen", 16000),
        Voice("awb", "en-GB", "CMU ARCTIC awb, Scottish English male, clustergen", 16000),
    )
    options = (Option("duration_stretch", "speaking-rate factor, 0.5..2 (higher is slower)", "1.0"),)

    def load(self) -> None:
        self._exe = require_program("flite", "flite")
        self._version = program_version([self._exe, "--version"])
        for v in self.voices:
            self.synthesize_text("Warm up.", v.name, {"duration_stretch": "1.0"})

    def metadata(self) -> dict[str, str]:
        return {"engine": self._version}

    def synthesize_text(self, text: str, voice: str, options: dict[str, str]):
        stretch = self.float_option(options, "duration_stretch", 0.5, 2.0)
        cmd = [self._exe, "-voice", voice, "--setf", f"duration_stretch={stretch}", "-f", "/dev/stdin", "-o", "{out}"]
        clip = run_engine(cmd, text, time_limit_for(text), self.name)
        expected = next(v.sample_rate for v in self.voices if v.name == voice)
        if clip.sample_rate != expected:
            raise InternalError(f"flite wrote {clip.sample_rate} Hz for voice {voice}, expected {expected}")
        return clip

    def synthesize(self, request: SynthesisRequest) -> SynthesisResult:
        return SynthesisResult(
            self.synthesize_text(request.text, request.voice, request.parameters), voice=request.voice
        )

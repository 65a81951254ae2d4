"""eSpeak NG (rule-based formant synthesis), the Debian ``espeak-ng`` program.

Text goes in on stdin (never on the command line), audio comes back as a WAV on stdout at the
engine's native 22,050 Hz. The engine has no randomness: the same text and options give the same
bytes, whatever the seed (which is echoed).
"""
from __future__ import annotations

import io
import shutil
import subprocess

import numpy as np
import soundfile as sf

from services.sdk import GeneratorModel, Option, SynthesisRequest, SynthesisResult, Voice
from services.sdk.errors import InternalError, InvalidArgument, TimeLimitExceeded
from voxarena.codec import AudioClip


class EspeakNgModel(GeneratorModel):
    name = "espeak-ng"
    licence = "GPL-3.0-or-later"
    family = "RULE_BASED_FORMANT"
    tasks = ("TTS",)
    native_sample_rate = 22050
    deterministic = True
    timing_scope = "synthesis: espeak-ng process run (start-up + synthesis + WAV write)"
    voices = (
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
        self._exe = shutil.which("espeak-ng")
        if not self._exe:
            raise RuntimeError("espeak-ng is not installed (Debian package espeak-ng)")
        out = subprocess.run([self._exe, "--version"], capture_output=True, text=True, timeout=30)
        self._version = out.stdout.strip()
        self._run("Warm up.", "en-us", 175, 50, 0, 1.0)

    def metadata(self) -> dict[str, str]:
        return {"engine": self._version}

    def _run(self, text: str, voice: str, speed: int, pitch: int, gap: int, seconds_limit: float) -> np.ndarray:
        cmd = [self._exe, "-v", voice, "-s", str(speed), "-p", str(pitch), "-g", str(gap), "--stdout"]
        try:
            proc = subprocess.run(cmd, input=text.encode("utf-8"), capture_output=True, timeout=seconds_limit)
        except subprocess.TimeoutExpired:
            raise TimeLimitExceeded(f"espeak-ng took longer than {seconds_limit:.0f} s") from None
        if proc.returncode != 0:
            raise InternalError(f"espeak-ng exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-300:]}")
        samples, rate = sf.read(io.BytesIO(proc.stdout), dtype="int16")
        if rate != self.native_sample_rate:
            raise InternalError(f"espeak-ng wrote {rate} Hz, expected {self.native_sample_rate}")
        return np.ascontiguousarray(samples)

    def synthesize(self, request: SynthesisRequest) -> SynthesisResult:
        o = request.parameters
        speed = int(self.float_option(o, "speed", 80, 450))
        pitch = int(self.float_option(o, "pitch", 0, 99))
        gap = int(self.float_option(o, "word_gap", 0, 100))
        limit = 30.0 + len(request.text) / 20.0
        audio = self._run(request.text, request.voice, speed, pitch, gap, limit)
        # espeak-ng writes a valid WAV even for unspeakable text; under 50 ms is no speech.
        if audio.size < self.native_sample_rate // 20 or not np.any(audio):
            raise InvalidArgument("the engine produced no audio for this text (nothing speakable?)")
        return SynthesisResult(audio=AudioClip(audio, self.native_sample_rate), voice=request.voice)

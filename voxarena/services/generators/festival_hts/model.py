"""Festival with the HTS voice cmu_us_slt_arctic_hts: statistical parametric synthesis.

An HMM (HTS) acoustic model predicts mel-cepstra (order 44, alpha 0.45) and log F0 per 5 ms frame,
and the MLSA filter vocoder turns them into a waveform at the voice's native 32 kHz (Debian
``festival`` + ``festvox-us-slt-hts``). Deterministic. Parameter count: the float32 values of the
Gaussian PDFs (duration, spectrum, F0, global variance) in the .htsvoice file.
"""

from __future__ import annotations

import re
from pathlib import Path

from voxarena.hashing import sha256_file
from voxarena.sdk import GeneratorModel, Option, SynthesisRequest, SynthesisResult, Voice
from voxarena.sdk.errors import InternalError
from voxarena.sdk.process_engine import program_version, require_program, run_engine, time_limit_for

HTS_VOICE = Path("/usr/share/festival/voices/us/cmu_us_slt_arctic_hts/hts/cmu_us_slt_arctic_hts.htsvoice")


def htsvoice_header(path: Path) -> dict[str, str]:
    head = path.read_bytes()[:8192].split(b"[DATA]")[0].decode("ascii", errors="replace")
    return dict(line.split(":", 1) for line in head.splitlines() if ":" in line)


def htsvoice_parameter_count(path: Path) -> int:
    """float32 values in the PDF sections (each section is "start-end" byte offsets, inclusive)."""
    total = 0
    for key, value in htsvoice_header(path).items():
        if "_PDF" in key:
            for span in value.split(","):
                start, end = (int(x) for x in span.split("-"))
                total += (end - start + 1) // 4
    return total


class FestivalHtsModel(GeneratorModel):
    name = "festival-hts"
    licence = "Festival: X11-style free licence; cmu_us_slt_arctic_hts voice: free (CMU ARCTIC), see Debian copyright"
    family = "ACOUSTIC_MODEL_VOCODER"
    tasks = ("TTS",)
    native_sample_rate = 32000
    deterministic = True
    timing_scope = "synthesis: text2wave process run (Festival start-up + voice load + HTS synthesis + WAV write)"
    voices = (Voice("cmu_us_slt_arctic_hts", "en-US", "CMU ARCTIC slt, US English female, HTS + MLSA"),)
    options = (Option("duration_stretch", "speaking-rate factor, 0.5..2 (higher is slower)", "1.0"),)

    def load(self) -> None:
        self._exe = require_program("text2wave", "festival")
        if not HTS_VOICE.exists():
            raise RuntimeError(f"{HTS_VOICE} is missing (Debian package festvox-us-slt-hts)")
        header = htsvoice_header(HTS_VOICE)
        if int(header["SAMPLING_FREQUENCY"]) != self.native_sample_rate:
            raise RuntimeError(f"HTS voice rate {header['SAMPLING_FREQUENCY']} != {self.native_sample_rate}")
        self._version = program_version([require_program("festival", "festival"), "--version"])
        self._params = htsvoice_parameter_count(HTS_VOICE)
        self._sha = sha256_file(HTS_VOICE)
        self._synth("Warm up.", 1.0)

    def parameter_count(self) -> int:
        return self._params

    def weights_sha256(self) -> str:
        return self._sha

    def metadata(self) -> dict[str, str]:
        h = htsvoice_header(HTS_VOICE)
        return {
            "engine": self._version,
            "hts_voice": HTS_VOICE.name,
            "mcep_order": str(int(h["VECTOR_LENGTH[MCP]"]) - 1),
            "mcep_alpha": h.get("OPTION[MCP]", ""),
            "frame_period_samples": h["FRAME_PERIOD"],
        }

    def _synth(self, text: str, stretch: float):
        # Festival reads the text from stdin; the Scheme is ours, never the user's text.
        cmd = [
            self._exe,
            "-eval",
            f"(begin (voice_cmu_us_slt_arctic_hts) (Parameter.set 'Duration_Stretch {stretch}))",
            "-o",
            "{out}",
        ]
        clip = run_engine(cmd, re.sub(r"\s+", " ", text), time_limit_for(text), self.name)
        if clip.sample_rate != self.native_sample_rate:
            raise InternalError(f"festival wrote {clip.sample_rate} Hz, expected {self.native_sample_rate}")
        return clip

    def synthesize(self, request: SynthesisRequest) -> SynthesisResult:
        stretch = self.float_option(request.parameters, "duration_stretch", 0.5, 2.0)
        return SynthesisResult(self._synth(request.text, stretch), voice=request.voice)

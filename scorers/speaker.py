"""SIM: cosine similarity of Resemblyzer (GE2E) speaker embeddings, generated clip vs speaker reference.

Both clips are resampled to 16 kHz (soxr HQ) and go through Resemblyzer's ``preprocess_wav``
(volume normalisation and webrtcvad silence trimming); embeddings are L2-normalised, so the cosine
is their dot product.
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from importlib.metadata import version
from pathlib import Path

import numpy as np

from voxarena.codec import RESAMPLER, AudioClip, resample

from .registry import ClipInputs, Metric, MetricInputError, mean_of

_LOCK = threading.Lock()
_encoder = None


def encoder():
    global _encoder
    with _LOCK:
        if _encoder is None:
            import torch
            from resemblyzer import VoiceEncoder

            torch.set_num_threads(1)  # calls run side by side, one core each
            _encoder = VoiceEncoder(device="cpu", verbose=False)
        return _encoder


def embed(clip: AudioClip) -> np.ndarray:
    from resemblyzer import preprocess_wav

    wav = preprocess_wav(resample(clip.samples, clip.sample_rate, 16000), source_sr=16000)
    if wav.size < 1600:
        raise MetricInputError("less than 0.1 s of speech after silence trimming")
    return encoder().embed_utterance(wav)


_reference_cache: OrderedDict[str, np.ndarray] = OrderedDict()


def embed_reference(clip: AudioClip) -> np.ndarray:
    """Speaker references recur (one per item, shared by every generator): embed each once."""
    key = hashlib.sha256(clip.samples.tobytes() + str(clip.sample_rate).encode()).hexdigest()
    with _LOCK:
        if key in _reference_cache:
            _reference_cache.move_to_end(key)
            return _reference_cache[key]
    emb = embed(clip)
    with _LOCK:
        _reference_cache[key] = emb
        while len(_reference_cache) > 4096:
            _reference_cache.popitem(last=False)
    return emb


class ResemblyzerSIM(Metric):
    name = "sim"
    higher_is_better = True
    aggregation = "mean of per-clip cosine"
    description = "Speaker similarity: Resemblyzer GE2E embedding cosine between the clip and the original speaker's audio."
    needs = ("speaker_reference",)

    def measure(self, clip: ClipInputs):
        if clip.speaker_reference is None:
            raise MetricInputError("no speaker reference audio")
        a = embed(clip.audio)
        b = embed_reference(clip.speaker_reference)
        return {"sim.cosine": float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))}, {}

    def aggregate(self, rows):
        return mean_of(rows, "sim.cosine")

    def fingerprint(self):
        import resemblyzer

        from voxarena.hashing import sha256_file

        weights = Path(resemblyzer.__file__).parent / "pretrained.pt"
        return {"sim.model": f"resemblyzer {version('resemblyzer')} GE2E (pretrained.pt)",
                "sim.model_sha256": sha256_file(weights), "sim.resampler": RESAMPLER,
                "torch": version("torch")}

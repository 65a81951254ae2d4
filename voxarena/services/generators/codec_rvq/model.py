"""codec-rvq: a small SoundStream-style neural audio codec trained here, served as codec re-synthesis.

RECONSTRUCT: the source at 16 kHz (soxr HQ when it comes at another rate) -> the convolutional encoder
(``encoder.onnx``, 50 latent frames/s of 64 dimensions) -> residual vector quantisation with the first
``codebooks`` of 8 codebooks of 1024 codes (numpy: nearest code by squared distance, then the residual) ->
the decoder (``decoder.onnx``) -> 16 kHz audio cut to the source's length. Each codebook adds 10 bits per
20 ms frame: 0.5 kbit/s a codebook, 4 kbit/s at 8 (the bit-rate ladder). Family
NEURAL_CODEC_LANGUAGE_MODEL: this is that family's codec, the tokenizer under VALL-E-style codec language
models (EnCodec / SoundStream), without the language model; what a clip sounds like after its tokens.

The networks (``network.py``, torch, training side only) are fully convolutional, so long sources run in
chunks of ``CHUNK_FRAMES`` frames, each with ``CONTEXT_FRAMES`` frames of real audio on both sides that are
coded and dropped: the context exceeds the encoder's and decoder's receptive field together
(``network.receptive_frames``, 21 frames), so chunked output equals whole-clip output up to float rounding
(tested) while memory stays bounded. No randomness: the output depends only on the source and ``codebooks``;
the seed is echoed. Trained by ``train.py``; quality is well below the published codecs (README).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from voxarena.sdk import InvalidArgument, Option, SynthesisRequest, SynthesisResult
from voxarena.sdk.vocoding import output_clip, source_signal
from voxarena.services.generators.trained import TrainedGenerator, onnx_session

ENCODER_FILE, DECODER_FILE, CODEBOOKS_FILE = "encoder.onnx", "decoder.onnx", "codebooks.npy"
HOP = 320  # samples per latent frame (encoder strides 2 x 4 x 5 x 8): 50 frames/s
BITS_PER_CODEBOOK = 10  # 1024 codes
MAX_CODEBOOKS = 8
CHUNK_FRAMES = 500  # 10 s of audio per encoder and decoder call
CONTEXT_FRAMES = 32  # each side; more than network.receptive_frames() (tested)


def quantise(latent: np.ndarray, codebooks: np.ndarray, n: int) -> np.ndarray:
    """Residual VQ of ``latent`` (B, D, F) with the first ``n`` of ``codebooks`` (K, N, D): the sum of the
    chosen codes, (B, D, F) float32."""
    batch, dim, frames = latent.shape
    residual = latent.transpose(0, 2, 1).reshape(-1, dim).astype(np.float32)
    out = np.zeros_like(residual)
    for codebook in codebooks[:n]:
        distance = (codebook * codebook).sum(axis=1)[None, :] - 2.0 * (residual @ codebook.T)
        chosen = codebook[np.argmin(distance, axis=1)]
        out += chosen
        residual -= chosen
    return out.reshape(batch, frames, dim).transpose(0, 2, 1)


def kbits_per_second(n: int) -> float:
    return n * BITS_PER_CODEBOOK * 16000 / HOP / 1000


class CodecRvqModel(TrainedGenerator):
    name = "codec-rvq"
    version = "1.0.0"
    licence = "Apache-2.0 (VoxArena; weights trained here on LibriSpeech train-clean-100, CC BY 4.0)"
    family = "NEURAL_CODEC_LANGUAGE_MODEL"
    tasks = ("RECONSTRUCT",)
    native_sample_rate = 16000
    timing_scope = (
        "synthesis: resampling to 16 kHz + ONNX encoder + numpy residual VQ + ONNX decoder over 10 s chunks, "
        "model loaded"
    )
    max_source_seconds = 600.0  # memory is bounded by the chunking; this bounds the time of one call
    options = (
        Option(
            "codebooks",
            f"residual codebooks used, 1-{MAX_CODEBOOKS}: {kbits_per_second(1):g} kbit/s each "
            f"(50 frames/s x {BITS_PER_CODEBOOK} bits), {kbits_per_second(MAX_CODEBOOKS):g} kbit/s at "
            f"{MAX_CODEBOOKS}",
            str(MAX_CODEBOOKS),
        ),
    )
    weight_files = (ENCODER_FILE, DECODER_FILE, CODEBOOKS_FILE)
    weights_env = "VOXARENA_CODEC_RVQ_WEIGHTS"
    train_with = "make train-generators GENERATORS=codec-rvq"

    def load_weights(self, directory: Path, meta: dict) -> None:
        self._encoder = onnx_session(directory / ENCODER_FILE)
        self._decoder = onnx_session(directory / DECODER_FILE)
        self._codebooks = np.load(directory / CODEBOOKS_FILE).astype(np.float32)
        if self._codebooks.ndim != 3 or self._codebooks.shape[0] != MAX_CODEBOOKS:
            raise RuntimeError(f"{directory / CODEBOOKS_FILE}: shape {self._codebooks.shape}, not (8, codes, dim)")
        self.code(np.sin(np.arange(HOP * 25) / 7.0) * 1e-2, MAX_CODEBOOKS)  # warm-up: 0.5 s

    def parameter_count(self) -> int | None:
        """The encoder's and decoder's weights and the codebooks' entries (learned too, by EMA)."""
        return int(self.training["parameter_count"]) + int(self.training.get("codebook_parameters", 0))

    def metadata(self) -> dict[str, str]:
        return {
            **super().metadata(),
            "bit_rate": (
                f"{kbits_per_second(1):g} kbit/s per codebook, {kbits_per_second(MAX_CODEBOOKS):g} kbit/s at "
                f"{MAX_CODEBOOKS} codebooks (50 frames/s x {BITS_PER_CODEBOOK} bits each, not entropy-coded)"
            ),
            "chunking": f"{CHUNK_FRAMES} frames + {CONTEXT_FRAMES} context frames each side",
        }

    def code(self, x: np.ndarray, n: int) -> np.ndarray:
        """Whole frames of 16 kHz audio -> the same number of samples after encode, quantise (``n``
        codebooks), decode; chunk by chunk with context (see the module docstring)."""
        frames = x.size // HOP
        pieces = []
        for start in range(0, frames, CHUNK_FRAMES):
            end = min(start + CHUNK_FRAMES, frames)
            lo, hi = max(0, start - CONTEXT_FRAMES), min(frames, end + CONTEXT_FRAMES)
            window = np.ascontiguousarray(x[None, None, lo * HOP : hi * HOP], dtype=np.float32)
            latent = self._encoder.run(["latent"], {"audio": window})[0]
            quantised = np.ascontiguousarray(quantise(latent, self._codebooks, n))
            audio = self._decoder.run(["audio"], {"latent": quantised})[0][0, 0]
            pieces.append(audio[(start - lo) * HOP : (end - lo) * HOP])
        return np.concatenate(pieces)

    def synthesize(self, request: SynthesisRequest) -> SynthesisResult:
        value = request.parameters.get("codebooks", str(MAX_CODEBOOKS))
        if not value.strip().isdigit() or not 1 <= int(value) <= MAX_CODEBOOKS:
            raise InvalidArgument(f"option codebooks={value!r} is not an integer in 1-{MAX_CODEBOOKS}")
        x = source_signal(request.source_clip(), self.native_sample_rate)
        # Zero-pad to whole frames so the output covers the whole source, then cut back to its length.
        y = self.code(np.pad(x, (0, (-x.size) % HOP)), int(value))[: x.size]
        return SynthesisResult(output_clip(y, self.native_sample_rate))

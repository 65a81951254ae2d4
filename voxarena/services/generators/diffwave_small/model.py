"""diffwave-small: a DiffWave vocoder trained here (family VOCODER_DIFFUSION), served from ONNX.

RECONSTRUCT: the source at 16 kHz (soxr HQ) -> HiFi-GAN's log-mel analysis at 16 kHz (``hifigan.mel``, 80
bands to 8 kHz, 256 samples per frame) -> the paper's fast 6-step reverse process (``diffusion.py``; option
``schedule=full``: the 50 training steps) from
Gaussian noise, each step one pass of the denoiser (``network.py``, exported to ``weights/denoiser.onnx``)
-> 16 kHz audio of the source's duration. The noise is drawn from the request's seed: the same seed gives the
same bytes, another seed another waveform of the same speech (``deterministic`` in the contract's sense).

The denoiser is convolutional with a receptive field of ``network.receptive_field()`` samples (62) each side,
so each pass runs over ``CHUNK_FRAMES`` mel frames at a time with ``CONTEXT_FRAMES`` frames of real context on
both sides, vocoded and dropped: chunked output equals whole-clip output up to float rounding (tested) and
memory stays bounded up to ``max_source_seconds``. Training: ``train.py`` (``make train-generators``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from voxarena.sdk import InvalidArgument, Option, SynthesisRequest, SynthesisResult
from voxarena.sdk.vocoding import output_clip, source_signal
from voxarena.services.generators.hifigan import mel
from voxarena.services.generators.trained import SAMPLE_RATE, TrainedGenerator, onnx_session

from . import diffusion

ONNX_FILE = "denoiser.onnx"
CHUNK_FRAMES = 625  # 10 s of audio per network call
CONTEXT_FRAMES = 2  # 512 samples each side, beyond the 62-sample receptive field and the mel upsampler's 1 frame


class DiffwaveSmallModel(TrainedGenerator):
    name = "diffwave-small"
    version = "1.0.0"
    licence = "Apache-2.0 (VoxArena; weights trained here on LibriSpeech train-clean-100, CC BY 4.0)"
    family = "VOCODER_DIFFUSION"
    tasks = ("RECONSTRUCT",)
    native_sample_rate = SAMPLE_RATE
    timing_scope = "synthesis: resampling to 16 kHz + log-mel + 6 denoiser passes (onnxruntime, 1 thread), chunked"
    max_source_seconds = 600.0
    weight_files = (ONNX_FILE,)
    weights_env = "VOXARENA_DIFFWAVE_SMALL_WEIGHTS"
    train_with = "make train-generators GENERATORS=diffwave-small"
    options = (
        Option(
            "schedule",
            "reverse process: fast (the paper's 6 steps) or full (the 50 training steps: 8x slower, less residual "
            "noise from these small weights)",
            "fast",
        ),
    )

    def load_weights(self, directory: Path, meta: dict) -> None:
        self._session = onnx_session(directory / ONNX_FILE)

    def metadata(self) -> dict[str, str]:
        return {
            **super().metadata(),
            "schedule": f"trained T={diffusion.TRAIN_BETAS.size}, beta {diffusion.TRAIN_BETAS[0]:g}.."
            f"{diffusion.TRAIN_BETAS[-1]:g} linear; inference 6 steps, beta "
            + ", ".join(f"{b:g}" for b in diffusion.FAST_BETAS),
            "analysis": f"hifigan.mel.log_mel at {SAMPLE_RATE} Hz (80 Slaney mels 0-8 kHz, hop {mel.HOP})",
            "chunking": f"{CHUNK_FRAMES} frames + {CONTEXT_FRAMES} context frames each side, per denoiser pass",
        }

    def denoise(self, x: np.ndarray, step: float, log_mel: np.ndarray) -> np.ndarray:
        """One denoiser pass over the whole clip (x: frames * 256 samples), chunk by chunk with context."""
        frames, hop = log_mel.shape[1], mel.HOP
        out = np.empty(x.size, np.float32)
        steps = np.array([step], np.float32)
        for start in range(0, frames, CHUNK_FRAMES):
            end = min(start + CHUNK_FRAMES, frames)
            lo, hi = max(0, start - CONTEXT_FRAMES), min(frames, end + CONTEXT_FRAMES)
            feeds = {"audio": x[None, lo * hop : hi * hop], "step": steps, "mel": log_mel[None, :, lo:hi]}
            eps = self._session.run(["noise"], feeds)[0][0]
            out[start * hop : end * hop] = eps[(start - lo) * hop : (end - lo) * hop]
        return out

    def vocode(self, x: np.ndarray, seed: int, schedule: str = "fast") -> np.ndarray:
        """16 kHz float signal -> its reconstruction by the reverse process, same length."""
        padded = np.pad(x, (0, (-x.size) % mel.HOP))
        log_mel = np.ascontiguousarray(mel.log_mel(padded, SAMPLE_RATE), dtype=np.float32)
        rng = np.random.default_rng(seed)
        y = diffusion.reverse(lambda z, step: self.denoise(z, step, log_mel), log_mel.shape[1] * mel.HOP, rng, schedule)
        return y[: x.size]

    def synthesize(self, request: SynthesisRequest) -> SynthesisResult:
        schedule = request.parameters.get("schedule", "fast")
        if schedule not in diffusion.SCHEDULES:
            raise InvalidArgument(f"option schedule={schedule!r} is not one of {', '.join(diffusion.SCHEDULES)}")
        x = source_signal(request.source_clip(), self.native_sample_rate)
        return SynthesisResult(output_clip(self.vocode(x, request.seed, schedule), self.native_sample_rate))

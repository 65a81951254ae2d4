"""Griffin-Lim phase reconstruction from a mel spectrogram (librosa), seeded.

The source's 80-bin magnitude mel spectrogram (1024-point FFT, hop 256, 0-8 kHz at 16 kHz) is
inverted to a linear magnitude (non-negative least squares) and its phase recovered by fast
Griffin-Lim (momentum 0.99) from a random initial phase drawn from the request seed: the same seed
gives the same bytes. A DSP vocoder with no trained parameters.
"""

from __future__ import annotations

import numpy as np

from voxarena.sdk import GeneratorModel, Option, SynthesisRequest, SynthesisResult
from voxarena.sdk.vocoding import INPUT_RESAMPLER, output_clip, source_signal


class GriffinLimModel(GeneratorModel):
    name = "griffin-lim"
    licence = "Apache-2.0 (VoxArena); librosa ISC"
    family = "VOCODER_DSP"
    tasks = ("RECONSTRUCT",)
    native_sample_rate = 16000
    deterministic = True
    timing_scope = "synthesis: mel analysis + mel inversion + Griffin-Lim iterations"
    max_source_seconds = 120.0  # longer sources: INVALID_ARGUMENT (split them), never a hang
    options = (
        Option("n_iter", "Griffin-Lim iterations, 1..500", "32"),
        Option("n_mels", "mel bands, 20..256", "80"),
        Option("n_fft", "FFT size, 256..4096", "1024"),
        Option("hop_length", "hop in samples, 64..1024", "256"),
    )

    def load(self) -> None:
        from librosa.version import version  # librosa.__version__, which its type stub omits

        self._version = version

    def metadata(self) -> dict[str, str]:
        return {
            "engine": f"librosa {self._version}",
            "input_resampler": INPUT_RESAMPLER,
            "init": "random phase from seed",
        }

    def synthesize(self, request: SynthesisRequest) -> SynthesisResult:
        import librosa

        o = request.parameters
        n_iter = int(self.float_option(o, "n_iter", 1, 500))
        n_mels = int(self.float_option(o, "n_mels", 20, 256))
        n_fft = int(self.float_option(o, "n_fft", 256, 4096))
        hop = int(self.float_option(o, "hop_length", 64, 1024))
        fs = self.native_sample_rate
        x = source_signal(request.source_clip(), fs).astype(np.float32)
        mel = librosa.feature.melspectrogram(
            y=x, sr=fs, n_fft=n_fft, hop_length=hop, n_mels=n_mels, power=1.0, fmax=fs / 2
        )
        magnitude = librosa.feature.inverse.mel_to_stft(mel, sr=fs, n_fft=n_fft, power=1.0, fmax=fs / 2)
        rng = np.random.RandomState(request.seed % (2**32))
        y = librosa.griffinlim(
            magnitude, n_iter=n_iter, hop_length=hop, n_fft=n_fft, init="random", random_state=rng, length=x.size
        )
        return SynthesisResult(output_clip(y, fs))

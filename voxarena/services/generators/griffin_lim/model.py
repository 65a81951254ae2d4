"""Griffin-Lim phase reconstruction from a mel spectrogram (librosa), seeded.

The source's 80-bin magnitude mel spectrogram (1024-point FFT, hop 256, 0-8 kHz at 16 kHz) is
inverted to a linear magnitude (non-negative least squares) and its phase recovered by fast
Griffin-Lim (momentum 0.99) from a random initial phase drawn from the request seed: the same seed
gives the same bytes. A DSP vocoder with no trained parameters.

Bounded work: librosa's ``mel_to_stft`` solves its NNLS by L-BFGS-B with a history as long as the
FFT has bins, over blocks sized for the mel side, so its workspace grows with n_fft squared (51.6 GiB
asked for at n_fft 4096 inside the declared ranges). Here the NNLS runs over blocks of at most
NNLS_BLOCK_VALUES unknowns with scipy's default history (about 25 doubles per unknown: ~50 MB), and a
request whose spectrogram (memory) or Griffin-Lim work (time) would exceed MAX_SPECTROGRAM_VALUES or
MAX_GRIFFIN_LIM_WORK is INVALID_ARGUMENT naming the options, before any work.
"""

from __future__ import annotations

import numpy as np

from voxarena.sdk import InvalidArgument, Option, SynthesisRequest, SynthesisResult
from voxarena.sdk.vocoding import SignalVocoder, output_clip

NNLS_BLOCK_VALUES = 1 << 18  # unknowns (linear bins x frames) of one L-BFGS-B problem
NNLS_HISTORY = 10  # L-BFGS-B corrections kept (scipy's default; librosa passes n_fft / 2 + 1)
NNLS_PGTOL = 1e-5  # fmin_l_bfgs_b's default, stated because the shortcut below applies it too
NNLS_MAX_ITER = 50  # per block; from librosa's start (the clipped pseudo-inverse) speech needs a few at most
# Linear bins x frames: Griffin-Lim holds about six such complex64/float32 matrices (~0.4 GB at this
# bound) and the NNLS time grows with it (a Python-level bound per unknown: ~1 min on a loaded core).
MAX_SPECTROGRAM_VALUES = 1 << 23
# Frames x n_fft x n_iter: the FFT work of the iterations. The default on a 120 s source is 2.5e8 (it took
# 177 s at nice 19 on two cores with a load of 17); the bound allows about 4x that.
MAX_GRIFFIN_LIM_WORK = 1_000_000_000


class GriffinLimModel(SignalVocoder):
    name = "griffin-lim"
    version = "0.2.0"  # 0.2: NNLS over bounded blocks with history 10 (outputs differ from 0.0.0's)
    licence = "Apache-2.0 (VoxArena); librosa ISC"
    timing_scope = "synthesis: mel analysis + mel inversion + Griffin-Lim iterations"
    options = (
        Option("n_iter", "Griffin-Lim iterations, 1..500 (frames x n_fft x n_iter at most 1e9)", "32"),
        Option("n_mels", "mel bands, 20..256", "80"),
        Option("n_fft", "FFT size, 256..4096 ((n_fft / 2 + 1) x frames at most 8.4M)", "1024"),
        Option("hop_length", "hop in samples, 64..1024; frames = source samples at 16 kHz / hop + 1", "256"),
    )

    def load(self) -> None:
        from librosa.version import version  # librosa.__version__, which its type stub omits

        self.engine = f"librosa {version}"

    def metadata(self) -> dict[str, str]:
        return {
            **super().metadata(),
            "init": "random phase from seed",
            "mel_inversion": f"NNLS, L-BFGS-B history {NNLS_HISTORY}, blocks of {NNLS_BLOCK_VALUES} unknowns, "
            f"at most {NNLS_MAX_ITER} iterations",
        }

    def synthesize(self, request: SynthesisRequest) -> SynthesisResult:
        import librosa

        o = request.parameters
        n_iter = int(self.float_option(o, "n_iter", 1, 500))
        n_mels = int(self.float_option(o, "n_mels", 20, 256))
        n_fft = int(self.float_option(o, "n_fft", 256, 4096))
        hop = int(self.float_option(o, "hop_length", 64, 1024))
        fs = self.native_sample_rate
        x = self.source(request).astype(np.float32)
        check_work(x.size, n_iter, n_fft, hop)
        mel = librosa.feature.melspectrogram(
            y=x, sr=fs, n_fft=n_fft, hop_length=hop, n_mels=n_mels, power=1.0, fmax=fs / 2
        )
        magnitude = mel_to_linear(mel, fs, n_fft)
        rng = np.random.RandomState(request.seed % (2**32))
        y = librosa.griffinlim(
            magnitude, n_iter=n_iter, hop_length=hop, n_fft=n_fft, init="random", random_state=rng, length=x.size
        )
        return SynthesisResult(output_clip(y, fs))


def check_work(samples: int, n_iter: int, n_fft: int, hop: int) -> None:
    """INVALID_ARGUMENT naming the options when a source of ``samples`` (16 kHz) needs a spectrogram or
    Griffin-Lim work beyond the bounds."""
    frames = 1 + samples // hop
    values = (n_fft // 2 + 1) * frames
    seconds = samples / GriffinLimModel.native_sample_rate
    if values > MAX_SPECTROGRAM_VALUES:
        raise InvalidArgument(
            f"n_fft={n_fft}, hop_length={hop} on a {seconds:.1f} s source: a spectrogram of {values} values "
            f"exceeds {MAX_SPECTROGRAM_VALUES} (memory); use a larger hop_length, a smaller n_fft or a shorter source"
        )
    work = frames * n_fft * n_iter
    if work > MAX_GRIFFIN_LIM_WORK:
        raise InvalidArgument(
            f"n_iter={n_iter}, n_fft={n_fft}, hop_length={hop} on a {seconds:.1f} s source: {work:.3g} "
            f"frames x n_fft x n_iter exceeds {MAX_GRIFFIN_LIM_WORK:.3g} (time); "
            f"use at most n_iter={max(MAX_GRIFFIN_LIM_WORK // (frames * n_fft), 0)} or a shorter source"
        )


def mel_to_linear(mel: np.ndarray, rate: int, n_fft: int) -> np.ndarray:
    """librosa's ``mel_to_stft`` (power 1) with the NNLS solved over bounded blocks of frames."""
    import librosa

    basis = librosa.filters.mel(sr=rate, n_fft=n_fft, n_mels=mel.shape[0], fmax=rate / 2, dtype=mel.dtype)
    inverse = np.linalg.pinv(basis)
    step = max(1, NNLS_BLOCK_VALUES // basis.shape[1])
    return np.concatenate([_nnls(basis, inverse, mel[:, i : i + step]) for i in range(0, mel.shape[1], step)], axis=1)


def _nnls(basis: np.ndarray, inverse: np.ndarray, mel: np.ndarray) -> np.ndarray:
    """librosa.util.nnls(basis, mel) with a bounded history and iterations. Its start, the clipped
    pseudo-inverse, is returned as is when it already meets L-BFGS-B's projected-gradient tolerance
    (as it does on speech), as L-BFGS-B would return it: scipy spends ~50 us of Python per unknown
    before its first step."""
    import librosa

    start = np.einsum("fm,...mt->...ft", inverse, mel, optimize=True)  # librosa's start, same operation
    np.clip(start, 0, None, out=start)
    x = start.astype(np.float64)
    diff = np.einsum("mf,...ft->...mt", basis, x, optimize=True) - mel
    grad = (1 / mel.size) * np.einsum("mf,...mt->...ft", basis, diff, optimize=True)
    projected = np.where(grad < 0, grad, np.minimum(x, grad))  # the box [0, inf): scipy's projgr
    if np.max(np.abs(projected)) <= NNLS_PGTOL:
        return start
    return librosa.util.nnls(basis, mel, m=NNLS_HISTORY, maxiter=NNLS_MAX_ITER, pgtol=NNLS_PGTOL)

"""Reference-based generator metrics: the generated clip against its source (RECONSTRUCT, CONVERT)
or against the original recording of the same words (TTS of a transcript).

Both signals are resampled to the metric's rate with soxr HQ. PESQ, STOI/ESTOI, SSIM and LS-MSE
compare time-aligned signals: they are measured only when the reference is the clip's source
(``reference_aligned``) and the durations differ by at most 10%, on the common length (the longer
signal is truncated). PSNR truncates the same way without the check (as
the SoK paper computes it for TTS too). MCD aligns frames by DTW, so any pair can be compared.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from importlib.metadata import version

import numpy as np

from voxarena.codec import RESAMPLER, AudioClip, resample

from .registry import ClipInputs, Measurement, Metric, MetricInputError, mean_of, reference_cache

MAX_DURATION_MISMATCH = 0.10


def source_reference(clip: ClipInputs) -> AudioClip:
    """The clip's reference recording (its source, or the same words), which these metrics need."""
    if clip.source_reference is None:
        raise MetricInputError("no time-aligned reference audio for this clip")
    return clip.source_reference


def signals(clip: ClipInputs, rate: int, aligned: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(reference, generated) float32 at ``rate``, truncated to the common length."""
    reference = source_reference(clip)
    ref_d, gen_d = reference.duration, clip.audio.duration
    if aligned and not clip.reference_aligned:
        raise MetricInputError("the reference says the same words but is not the clip's source (TTS): not time-aligned")
    if aligned and abs(gen_d - ref_d) > MAX_DURATION_MISMATCH * ref_d:
        raise MetricInputError(f"reference is not time-aligned ({gen_d:.2f} s generated vs {ref_d:.2f} s reference)")

    def at_rate(which: str, c: AudioClip) -> np.ndarray:
        return clip.cached(f"{which}@{rate}", lambda: resample(c.samples, c.sample_rate, rate))

    ref, gen = at_rate("reference", reference), at_rate("generated", clip.audio)
    n = min(ref.size, gen.size)
    return ref[:n], gen[:n]


def normalised_magnitudes(clip: ClipInputs) -> tuple[np.ndarray, np.ndarray]:
    """|STFT| (1024-point Hann, hop 256, 16 kHz) of reference and generated, each scaled to max 1."""
    import librosa

    def compute() -> tuple[np.ndarray, np.ndarray]:
        ref, gen = signals(clip, 16000, aligned=False)
        out = []
        for x in (ref, gen):
            mag = np.abs(librosa.stft(x, n_fft=1024, hop_length=256, window="hann"))
            peak = mag.max()
            if peak <= 0:
                raise MetricInputError("silent audio: the spectrum cannot be normalised")
            out.append(mag / peak)
        return out[0], out[1]

    return clip.cached("stft_normalised", compute)


def _end_with_parent(parent: int) -> None:
    """The PESQ child's initializer: a thread that ends the child once its parent (the scorer) is gone. A
    scorer that is killed never shuts its pool down, and the child would wait on its queue forever."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="end-with-scorer", daemon=True).start()


def _load_pesq() -> None:
    import pesq  # noqa: F401


def _pesq_in_child(rate: int, ref: np.ndarray, gen: np.ndarray, mode: str) -> float:
    from pesq import pesq

    return float(pesq(rate, ref, gen, mode))


class IsolatedPesq:
    """pesq in a child process of its own. The pesq library (ITU-T C code) writes past its buffers on some
    inputs and the process dies with SIGSEGV: 100 s of speech, or a 30 s clip of 200 ms bursts. Such a clip
    must fail alone, in its row, not take the scorer down with every other call in flight."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None

    def _started(self) -> ProcessPoolExecutor:
        if self._pool is None:  # spawn: forking a process that runs grpc threads is unsafe
            self._pool = ProcessPoolExecutor(
                1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_end_with_parent,
                initargs=(os.getpid(),),
            )
        return self._pool

    def _broken(self, pool: ProcessPoolExecutor) -> None:
        pool.shutdown(wait=False)
        self._pool = None

    def start(self) -> None:
        """Start the child and load pesq there (a second or two), before the first clip needs it."""
        with self._lock:
            pool = self._started()
            try:
                pool.submit(_load_pesq).result()
            except BrokenProcessPool:
                self._broken(pool)

    def __call__(self, rate: int, ref: np.ndarray, gen: np.ndarray, mode: str) -> float:
        with self._lock:
            pool = self._started()
            try:
                return pool.submit(_pesq_in_child, rate, ref, gen, mode).result()
            except BrokenProcessPool:
                self._broken(pool)
        raise MetricInputError(
            "the pesq library crashed on this clip (it does on long or choppy clips: P.862 is defined for 8-20 s)"
        )


class Pesq(Metric):
    name = "pesq"
    description = (
        "ITU-T P.862 PESQ (pesq package): wide band (P.862.2) at 16 kHz; narrow band (P.862.1 MOS-LQO) "
        "at 8 kHz when the generated clip is 8 kHz. Aligned reference required."
    )

    def __init__(self) -> None:
        super().__init__()
        self._pesq = IsolatedPesq()

    def warm(self) -> None:
        self._pesq.start()

    def measure(self, clip: ClipInputs) -> Measurement:
        from pesq import PesqError

        rate, mode = (8000, "nb") if clip.audio.sample_rate == 8000 else (16000, "wb")
        ref, gen = signals(clip, rate)
        try:
            value = self._pesq(rate, ref.astype(np.float64), gen.astype(np.float64), mode)
        except PesqError as e:
            raise MetricInputError(f"PESQ could not be computed: {type(e).__name__}") from None
        return {"pesq.value": float(value), "pesq.narrow_band": float(mode == "nb")}, {}

    def aggregate(self, rows: list[dict[str, float]]) -> float:
        return mean_of(rows, "pesq.value")

    def fingerprint(self) -> dict[str, str]:
        return {
            "pesq": f"pesq {version('pesq')} (P.862.2 wb at 16 kHz, P.862.1 nb at 8 kHz)",
            "reference.resampler": RESAMPLER,
        }


class Stoi(Metric):
    name = "stoi"
    description = (
        "STOI and extended STOI (pystoi's definition, computed at 16 kHz input, 10 kHz internally; its segments "
        "summed in chunks: voxarena.scorers.stoi). Aligned reference required."
    )

    def measure(self, clip: ClipInputs) -> Measurement:
        from .stoi import stoi_and_estoi

        ref, gen = signals(clip, 16000)
        value, extended = stoi_and_estoi(ref, gen, 16000)
        return {"stoi.value": value, "stoi.extended": extended}, {}

    def aggregate(self, rows: list[dict[str, float]]) -> dict[str, float]:
        return {"stoi": mean_of(rows, "stoi.value"), "estoi": mean_of(rows, "stoi.extended")}

    def fingerprint(self) -> dict[str, str]:
        return {"stoi": f"pystoi {version('pystoi')}"}


class Psnr(Metric):
    name = "psnr"
    description = (
        "PSNR in dB of STFT magnitudes (1024-point Hann, hop 256, 16 kHz), each normalised to a maximum of 1: "
        "10 log10(1 / MSE) over the common frames (SoK appendix F)."
    )

    def measure(self, clip: ClipInputs) -> Measurement:
        ref, gen = normalised_magnitudes(clip)
        mse = float(np.mean((ref - gen) ** 2))
        return {"psnr.db": 10 * np.log10(1.0 / max(mse, 1e-12))}, {}

    def aggregate(self, rows: list[dict[str, float]]) -> float:
        return mean_of(rows, "psnr.db")


SSIM_WINDOW = 7  # skimage's default window: a map value depends on the 3 columns either side
SSIM_CHUNK_COLUMNS = 4096  # frames of one step (65 s): ~8 MB per array instead of ~150 MB at 600 s


def ssim(ref: np.ndarray, gen: np.ndarray) -> float:
    """skimage's structural_similarity(ref, gen, data_range=1): the mean of its SSIM map without a border
    of 3. Its ~15 temporary arrays the size of the spectrogram took 1.4 GB on a 600 s clip, so a wider
    spectrogram is mapped SSIM_CHUNK_COLUMNS columns at a time, each with the 3 columns either side it
    depends on, and the map summed: the same value up to summation order; a narrower one is skimage's
    call as is."""
    from skimage.metrics import structural_similarity

    width, pad = ref.shape[1], (SSIM_WINDOW - 1) // 2
    if width <= SSIM_CHUNK_COLUMNS + 2 * pad:
        return float(structural_similarity(ref, gen, data_range=1.0, win_size=SSIM_WINDOW))
    total = 0.0
    for start in range(pad, width - pad, SSIM_CHUNK_COLUMNS):
        end = min(start + SSIM_CHUNK_COLUMNS, width - pad)
        cols = slice(start - pad, end + pad)
        _, chunk = structural_similarity(ref[:, cols], gen[:, cols], data_range=1.0, win_size=SSIM_WINDOW, full=True)
        total += float(np.sum(chunk[pad:-pad, pad:-pad], dtype=np.float64))
    return total / ((ref.shape[0] - 2 * pad) * (width - 2 * pad))


class Ssim(Metric):
    name = "ssim"
    description = (
        "SSIM (scikit-image, 7x7 window, data range 1) between the normalised STFT magnitude spectrograms "
        "used by PSNR. Aligned reference required."
    )

    def measure(self, clip: ClipInputs) -> Measurement:
        signals(clip, 16000)  # the alignment check
        ref, gen = normalised_magnitudes(clip)
        return {"ssim.value": ssim(ref, gen)}, {}

    def aggregate(self, rows: list[dict[str, float]]) -> float:
        return mean_of(rows, "ssim.value")

    def fingerprint(self) -> dict[str, str]:
        return {"ssim": f"scikit-image {version('scikit-image')} structural_similarity"}


class LogMelMse(Metric):
    name = "ls_mse"
    description = (
        "Mean squared difference of natural-log mel spectrograms (80 bins, 40 ms Hann window, 12.5 ms shift, "
        "1024-point FFT, 0-12 kHz; both signals resampled to 24 kHz; log of max(mel, 1e-5)). Aligned reference."
    )

    def measure(self, clip: ClipInputs) -> Measurement:
        import librosa

        ref, gen = signals(clip, 24000)
        mels = [
            np.log(
                np.maximum(
                    librosa.feature.melspectrogram(
                        y=x,
                        sr=24000,
                        n_fft=1024,
                        win_length=960,
                        hop_length=300,
                        window="hann",
                        n_mels=80,
                        fmin=0,
                        fmax=12000,
                        power=1.0,
                    ),
                    1e-5,
                )
            )
            for x in (ref, gen)
        ]
        return {"ls_mse.value": float(np.mean((mels[0] - mels[1]) ** 2))}, {}

    def aggregate(self, rows: list[dict[str, float]]) -> float:
        return mean_of(rows, "ls_mse.value")


MCD_ORDER, MCD_ALPHA, MCD_FRAME_MS = 24, 0.42, 5.0
# The DTW's frames x frames: librosa's dtw keeps about 20 bytes per cell (cost, accumulated cost, steps),
# 0.8 GB at this bound: two clips of about 31 s each, or 10 s against 100 s. DTW needs the whole matrix,
# so a longer pair is refused (its row says why) rather than chunked to a different number.
MCD_MAX_DTW_CELLS = 40_000_000


def mcd_frames(clip: AudioClip) -> int:
    """WORLD's frame count for ``clip`` at MCD_FRAME_MS (pyworld.dio: 1 + duration / period)."""
    return int(clip.samples.size / clip.sample_rate * 1000.0 / MCD_FRAME_MS) + 1


def mel_cepstra(x: np.ndarray, fs: int = 16000) -> np.ndarray:
    import pyworld as pw

    from .sptk import sp2mc

    x = x.astype(np.float64)
    f0, t = pw.dio(x, fs, frame_period=MCD_FRAME_MS)
    f0 = pw.stonemask(x, f0, t, fs)
    sp = pw.cheaptrick(x, f0, t, fs)
    return sp2mc(sp, MCD_ORDER, MCD_ALPHA)  # pysptk.sp2mc's numbers, faster (voxarena.scorers.sptk)


class MelCepstralDistortion(Metric):
    name = "mcd"
    description = (
        "Mel-cepstral distortion in dB with DTW: WORLD CheapTrick envelopes (DIO+StoneMask F0, 5 ms frames) "
        "at 16 kHz, pysptk sp2mc order 24, alpha 0.42, c0 excluded; frames aligned by DTW on Euclidean distance; "
        "MCD = 10/ln10 * sqrt(2) * mean distance along the path. A pair whose DTW exceeds "
        f"{MCD_MAX_DTW_CELLS:.0e} frame pairs (two clips of about 31 s each) is refused: DTW memory."
    )

    def warm(self) -> None:
        import librosa  # noqa: F401
        import pyworld  # noqa: F401

        from . import sptk  # noqa: F401  (compiles sp2mc's loop)

    def measure(self, clip: ClipInputs) -> Measurement:
        import librosa

        reference = source_reference(clip)
        cells = mcd_frames(reference) * mcd_frames(clip.audio)
        if cells > MCD_MAX_DTW_CELLS:
            raise MetricInputError(
                f"DTW of {mcd_frames(reference)} x {mcd_frames(clip.audio)} frames ({reference.duration:.1f} s "
                f"reference, {clip.audio.duration:.1f} s clip) exceeds {MCD_MAX_DTW_CELLS:.0e} frame pairs "
                f"(memory); mcd measures pairs of up to about 31 s each"
            )
        a = reference_cache.get(
            "mcd.mcep", source_reference(clip), lambda c: mel_cepstra(resample(c.samples, c.sample_rate, 16000))
        )[:, 1:]
        b = mel_cepstra(resample(clip.audio.samples, clip.audio.sample_rate, 16000))[:, 1:]
        cost, path = librosa.sequence.dtw(X=a.T, Y=b.T, metric="euclidean")
        dist = np.linalg.norm(a[path[:, 0]] - b[path[:, 1]], axis=1)
        return {"mcd.db": float(10.0 / np.log(10.0) * np.sqrt(2.0) * dist.mean()), "mcd.frames": float(len(path))}, {}

    def aggregate(self, rows: list[dict[str, float]]) -> float:
        return mean_of(rows, "mcd.db")

    def fingerprint(self) -> dict[str, str]:
        return {
            "mcd": f"order {MCD_ORDER}, alpha {MCD_ALPHA}, pyworld {version('pyworld')}, pysptk {version('pysptk')}, "
            f"librosa {version('librosa')} dtw"
        }

"""``mos_distill``: DistillMOS (Stahl & Gamper 2025, ``distillmos`` 0.9.1) served as ONNX, without torch.

The network (a complex-spectrum CNN and a 7-layer transformer with attention pooling, 4.1 M
parameters) is converted at build time by ``voxarena/convert/distillmos.py`` into
``<models dir>/distillmos/model.onnx``: its input is the compressed complex spectrum of one window,
its output the window's MOS (1..5). Everything before the network is reproduced here in numpy from
the package's own inference path (its README / CLI and ``ConvTransformerSQAModel.forward``):

- resampling to 16 kHz with ``torchaudio.transforms.Resample(sr, 16000)`` at its defaults (Hann-windowed
  sinc, 6 zero crossings, rolloff 0.99): ``sinc_resample`` is that polyphase filter, kernel for kernel;
- windows of exactly 122880 samples (7.68 s; the positional encoding is fixed at 384 frames, so the
  network has no dynamic time axis): a shorter clip is zero-padded at the end; a longer one is cut
  into ``ceil(excess / 16000) + 1`` windows whose starts are evenly spaced from 0 to the excess
  (hop at most 1 s), and the clip's MOS is the mean over its windows;
- each window divided by (its peak + 1e-8);
- reflect padding of 80 samples, STFT (320-point periodic Hann, hop 160, no centring), 161 x 768,
  magnitude compressed to the power 0.3 keeping the phase.

Windows go through the network one at a time (``BATCH``) and their spectra are made as they go, so
memory stays bounded on long clips (peak RSS 230 MB on 15 s, 239 MB on 60 s); the cost grows with
duration: one window, about 0.4 CPU s, per started second beyond 7.68 s.
"""

from __future__ import annotations

import math
from importlib.metadata import version
from pathlib import Path

import numpy as np

from .registry import ClipInputs, Measurement, Metric, MetricInputError, mean_of

MODEL_NAME = "distillmos"  # directory under the models dir (voxarena.convert.CONVERTERS)
ONNX_FILE = "model.onnx"
SAMPLE_RATE = 16000
SEQ_LEN = 122880  # distillmos.sqa.SEQ_LEN
MAX_HOP_LEN = 16000  # distillmos.sqa.MAX_HOP_LEN
HOP, WIN = 160, 320  # _ComplexSpecCNN: 10 ms hop, 20 ms window (= n_fft)
COMPRESSION = 0.3
# Windows per ONNX call. Batching is no faster on one thread (0.39-0.42 CPU s per window at 1, 2 and 4)
# but the peak RSS on a 15 s clip rose from 230 MB to 343 and 624 MB: one at a time.
BATCH = 1
# torchaudio's kernel has (rate / gcd) x (taps) entries: tiny for the usual rates (8 to 48 kHz: at most
# 640 x 475), about 1 GB for a rate like 16001 Hz. Such a clip is refused rather than resampled otherwise.
MAX_KERNEL_ENTRIES = 4_000_000
RESAMPLER = "torchaudio 0.13 Resample defaults (sinc_interpolation, lowpass_filter_width 6, rolloff 0.99), numpy port"


def _sinc_kernel(orig: int, new: int, width_zeros: int = 6, rolloff: float = 0.99) -> tuple[np.ndarray, int]:
    """torchaudio's ``_get_sinc_resample_kernel`` for rates already divided by their gcd: (new, taps), width."""
    base = min(orig, new) * rolloff
    width = math.ceil(width_zeros * orig / base)
    if new * (2 * width + orig) > MAX_KERNEL_ENTRIES:
        raise MetricInputError(
            f"resampling {orig}:{new} (rates over their gcd) needs a {new} x {2 * width + orig} "
            f"kernel; rates with so small a common divisor are refused"
        )
    idx = np.arange(-width, width + orig, dtype=np.float64)[None, :] / orig
    # torchaudio divides an integer arange by new_freq in the default float32 dtype, then adds float64
    t = (np.arange(0, -new, -1).astype(np.float32) / np.float32(new)).astype(np.float64)[:, None] + idx
    t = np.clip(t * base, -width_zeros, width_zeros)
    window = np.cos(t * math.pi / width_zeros / 2) ** 2
    t = t * math.pi
    with np.errstate(invalid="ignore", divide="ignore"):
        kernels = np.where(t == 0, 1.0, np.sin(t) / t)
    return (kernels * window * (base / orig)).astype(np.float32), width


def sinc_resample(x: np.ndarray, orig_rate: int, new_rate: int = SAMPLE_RATE, block: int = 4096) -> np.ndarray:
    """float32 ``x`` resampled as ``torchaudio.transforms.Resample(orig_rate, new_rate)`` does (0.13)."""
    if orig_rate == new_rate:
        return x.astype(np.float32, copy=False)
    g = math.gcd(int(orig_rate), int(new_rate))
    orig, new = int(orig_rate) // g, int(new_rate) // g
    kernel, width = _sinc_kernel(orig, new)
    taps = kernel.shape[1]
    padded = np.pad(x.astype(np.float32, copy=False), (width, width + orig))
    # conv1d(stride=orig): output frame j holds new samples, each a dot product with padded[j*orig : j*orig+taps]
    frames = np.lib.stride_tricks.sliding_window_view(padded, taps)[::orig]
    out = np.concatenate([frames[i : i + block] @ kernel.T for i in range(0, len(frames), block)]).reshape(-1)
    return out[: int(math.ceil(new * len(x) / orig))]


def window_starts(n: int) -> list[int]:
    """Start of each 122880-sample window of an n-sample clip, as ``ConvTransformerSQAModel.forward``."""
    excess = max(n - SEQ_LEN, 0)
    hops = int(np.ceil(excess / MAX_HOP_LEN)) + 1
    return [int(c * excess) for c in np.linspace(0, 1, hops)]


_HANN = (0.5 - 0.5 * np.cos(2 * np.pi * np.arange(WIN) / WIN)).astype(np.float64)  # torch.hann_window (periodic)


def compressed_spectrum(window: np.ndarray) -> np.ndarray:
    """(2, 161, 768) float32 network input of one 122880-sample window (peak-normalised here)."""
    x = window.astype(np.float32) / (np.max(np.abs(window)).astype(np.float32) + np.float32(1e-8))
    pad = (WIN - HOP) // 2
    x = np.pad(x.astype(np.float64), pad, mode="reflect")
    frames = np.lib.stride_tricks.sliding_window_view(x, WIN)[::HOP]
    spec = np.fft.rfft(frames * _HANN, n=WIN).T  # (161, 768), torch.stft's layout
    mag = np.maximum(np.abs(spec), 1e-12)
    spec = spec * (mag**COMPRESSION / mag)
    return np.stack([spec.real, spec.imag]).astype(np.float32)


class DistillMosOnnx:
    """The converted network plus the package's preprocessing: ``mos(samples, rate) -> (mos, windows)``."""

    def __init__(self, onnx_path: Path, threads: int = 1) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(onnx_path), sess_options=opts, providers=["CPUExecutionProvider"])

    def window_scores(self, x16: np.ndarray) -> np.ndarray:
        """MOS of every window of a 16 kHz float32 clip."""
        if len(x16) < SEQ_LEN:
            x16 = np.pad(x16, (0, SEQ_LEN - len(x16)))
        starts = window_starts(len(x16))
        scores = []
        for i in range(0, len(starts), BATCH):
            spec = np.stack([compressed_spectrum(x16[s : s + SEQ_LEN]) for s in starts[i : i + BATCH]])
            scores.append(self.session.run(None, {"spec": spec})[0].reshape(-1))
        return np.concatenate(scores)

    def mos(self, samples: np.ndarray, rate: int) -> tuple[float, int]:
        scores = self.window_scores(sinc_resample(samples.astype(np.float32), rate))
        return float(np.mean(scores.astype(np.float64))), int(scores.size)


class MosDistill(Metric):
    name = "mos_distill"
    description = (
        "DistillMOS predicted MOS (1..5), no reference: distillmos 0.9.1's network as ONNX, "
        "16 kHz, 7.68 s windows with hop <= 1 s averaged, as the package does."
    )

    def __init__(self) -> None:
        super().__init__()
        self._model: DistillMosOnnx | None = None

    def model(self) -> DistillMosOnnx:
        with self.lock:
            if self._model is None:
                from voxarena.converted import load_converted

                self._model = DistillMosOnnx(load_converted(MODEL_NAME).path(ONNX_FILE))
            return self._model

    def warm(self) -> None:
        self.model()

    def measure(self, clip: ClipInputs) -> Measurement:
        mos, windows = self.model().mos(clip.audio.as_float32(), clip.audio.sample_rate)
        return {"mos_distill.mos": mos, "mos_distill.windows": float(windows)}, {}

    def aggregate(self, rows: list[dict[str, float]]) -> float:
        return mean_of(rows, "mos_distill.mos")

    def fingerprint(self) -> dict[str, str]:
        from voxarena.converted import ConvertedModelError, load_converted

        fp = {
            "mos_distill.resampler": RESAMPLER,
            "mos_distill.windows": f"{SEQ_LEN} samples at 16 kHz, hop <= {MAX_HOP_LEN}, zero-padded, mean",
        }
        try:
            model = load_converted(MODEL_NAME)
        except ConvertedModelError as e:
            # The scorer fingerprints every registered metric at start; one without its converted model
            # still starts (its measurements fail naming this), and the fingerprint says it was absent.
            return {**fp, "mos_distill": f"unavailable: {e}"}
        src = model.provenance["source"]
        return {
            **fp,
            "mos_distill": f"{src['package']} {src['version']} as ONNX, onnxruntime {version('onnxruntime')}",
            "mos_distill.source_sha256": src["sha256"],
            "mos_distill.onnx_sha256": model.provenance["files"][ONNX_FILE],
        }

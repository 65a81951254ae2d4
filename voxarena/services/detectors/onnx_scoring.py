"""Serving a trained network exported to ONNX: fixed-length windows, one session, no torch.

The neural detectors (lfcc-lcnn, rawnet2, aasist) are trained in torch and exported to ONNX with a
fixed window length along time and a dynamic batch axis, so their serving images need only
onnxruntime. A clip is cut into windows of that length (a clip shorter than one window is repeated
to fill it, the ASVspoof convention; the last partial window of a longer clip is taken ending at the
clip's end); the clip's score is the mean over its windows of logit(bona fide) - logit(spoof).
Each clip is scored on its own and the session runs single-threaded with a fixed execution order,
so scores are identical run to run.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from voxarena.codec import AudioClip, resample
from voxarena.sdk.stream_servicer import DetectorStream
from voxarena.services.detectors.trained import TrainedDetector


def window_starts(length: int, window: int) -> list[int]:
    """Starts of the windows covering ``length`` frames (at least one window, non-overlapping but the last)."""
    if length <= window:
        return [0]
    starts = list(range(0, length - window + 1, window))
    if starts[-1] + window < length:
        starts.append(length - window)
    return starts


def cut_windows(x: np.ndarray, window: int) -> np.ndarray:
    """Windows along the last axis of ``x``: shape (n_windows, *x.shape[:-1], window)."""
    n = x.shape[-1]
    if n == 0:
        raise ValueError("cannot cut windows from an empty signal")
    if n < window:
        x = np.concatenate([x] * (window // n + 1), axis=-1)[..., :window]
        n = window
    return np.stack([x[..., s : s + window] for s in window_starts(n, window)])


class OnnxWindowScorer:
    """An ONNX session mapping (batch, ..., window) float32 input to (batch, 2) logits [spoof, bona fide]."""

    def __init__(self, path: Path, window: int, max_windows_per_run: int = 16) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])
        self.input_name = self.session.get_inputs()[0].name
        self.window = window
        self.max_windows_per_run = max_windows_per_run

    def score(self, inputs: list[np.ndarray]) -> list[float]:
        """One score per input (features or waveform, time last).

        Each clip runs in its own session calls, so its score never depends on which other clips
        shared its batch (batch composition can change float rounding in the kernels).
        """
        return [self.score_one(x) for x in inputs]

    def score_one(self, x: np.ndarray) -> float:
        return float(np.mean(self.window_scores(cut_windows(np.asarray(x, np.float32), self.window))))

    def window_scores(self, windows: np.ndarray) -> np.ndarray:
        """logit(bona fide) - logit(spoof) of each window (float64)."""
        logits = np.concatenate(
            [
                self.session.run(None, {self.input_name: windows[i : i + self.max_windows_per_run]})[0]
                for i in range(0, len(windows), self.max_windows_per_run)
            ]
        )
        return (logits[:, 1] - logits[:, 0]).astype(np.float64)


ONNX_FILE = "model.onnx"


class OnnxDetector(TrainedDetector):
    """A network trained here (``make train-detectors``), served from ``model.onnx``, version 1.0.0; subclasses
    define ``featurize`` (16 kHz in, time last out)."""

    version = "1.0.0"
    licence = (
        "Apache-2.0 (VoxArena implementation; weights trained on LibriSpeech, CC BY 4.0, and seen-generator speech)"
    )
    weight_files = (ONNX_FILE,)
    native_sample_rate = 16000
    max_batch_size = 16
    max_seconds = 600.0

    def load_weights(self, directory: Path, meta: dict) -> None:
        self.scorer = OnnxWindowScorer(directory / ONNX_FILE, int(meta["window"]))

    def parameter_count(self) -> int | None:
        return self.training.get("parameter_count")

    def featurize(self, samples: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def score_batch(self, clips: list[AudioClip]) -> list[float]:
        return self.scorer.score(
            [self.featurize(resample(c.samples, c.sample_rate, 16000).astype(np.float32)) for c in clips]
        )


class RawWaveformDetector(OnnxDetector):
    """An end-to-end network on the raw waveform: its input is the 16 kHz samples themselves. Streams
    natively (``onnx_stream.WindowStream``): each window scored once, when its samples have come."""

    family = "END_TO_END_RAW_WAVEFORM"
    stream_mode = "NATIVE"
    stream_hop_seconds = 1.0

    def open_stream(self, sample_rate: int, options: dict[str, str]) -> DetectorStream:
        from .onnx_stream import WindowStream

        return WindowStream(self, sample_rate, options)

    def featurize(self, samples: np.ndarray) -> np.ndarray:
        return samples.astype(np.float32)

"""DNSMOS P.835 (SIG, BAK, OVRL) and P.808 from the ``speechmos`` package's bundled ONNX models.

Audio is resampled to 16 kHz (soxr HQ). As Microsoft's reference ``dnsmos_local.py`` does, a clip
shorter than 9.01 s is tiled (appended to itself) until it is long enough, and a longer clip is
scored on 9.01 s windows every 1 s whose scores are averaged. The P.835 scores go through the
reference's polynomial fit (non-personalised). The headline ``dnsmos`` column is OVRL, as in the
SoK paper.

One explicit option departs from the reference, for throughput (issue 15): ``one-window``
(``--dnsmos-short-clips`` / ``$VOXARENA_DNSMOS_SHORT_CLIPS``; the fingerprint names it, so a run made
with it never passes for a reference run). The reference tiles a clip shorter than 9.01 s to 9.01 to
18 s and averages every 1 s window of that: up to 9 windows, each the clip rotated, which is most of
DNSMOS's work on short clips. ``one-window`` scores the clip tiled and cut at 9.01 s, one window.
Measured on 42 LibriSpeech clips (27 short): DNSMOS 0.36 -> 0.23 s a clip; on the short clips OVRL
moved by 0.028 on average (at most 0.14), SIG 0.025, BAK 0.043, P.808 0.049; clips of 9.01 s or more
are scored as the reference does.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import numpy as np

from voxarena.codec import RESAMPLER, resample
from voxarena.hashing import sha256_file

from .registry import ClipInputs, Measurement, Metric, mean_of

_LOCK = threading.Lock()
_model = None


def _models_dir() -> Path:
    import speechmos

    return Path(speechmos.__file__).parent / "dnsmos_models"


INPUT_LENGTH = 9.01  # seconds, as dnsmos_local.py
# --dnsmos-short-clips: what the fingerprint says of each (bump the version if a mode's numbers change).
SHORT_CLIPS = {
    "windows": "tiled to 9.01 s as dnsmos_local.py",
    "one-window": "one-window v1: tiled and cut at 9.01 s, one window, not dnsmos_local.py's mean over its windows",
}
SHORT_CLIPS_ENV = "VOXARENA_DNSMOS_SHORT_CLIPS"


def short_clips_mode() -> str:
    """The scorer's mode for clips under 9.01 s: $VOXARENA_DNSMOS_SHORT_CLIPS, default the reference's."""
    mode = os.environ.get(SHORT_CLIPS_ENV, "windows")
    if mode not in SHORT_CLIPS:
        raise ValueError(f"${SHORT_CLIPS_ENV}={mode!r} is not a DNSMOS short-clip mode ({', '.join(SHORT_CLIPS)})")
    return mode


BATCH = 4  # windows per P.808 ONNX call: 16 took the scorer past 2 GB on a 600 s clip; the scores are the same
HOP = 160  # samples per spectrogram frame of the P.835 model; its windows start every 100 frames (1 s)
REACH = 4  # frames each side that an output of its four full-resolution 3x3 convolutions depends on
# Tensor names in sig_bak_ovr.onnx: the framed input (900 frames of 320 samples, hop 160) and the output of
# the last convolution before the first pooling. The layers up to there are 95% of the model's arithmetic.
_FRAMES, _FRONT, _SCORES = "mos_estimator_logpow/concat:0", "mos_estimator_logpow/conv2d_3/Relu:0", "Identity:0"


def _part(model, first: str, last: str, time_axis: int):
    """The sub-graph of the P.835 model from tensor ``first`` to ``last``, its time axis left open."""
    import onnx

    part = onnx.utils.Extractor(model).extract_model([first], [last])
    del part.graph.value_info[:]
    for value, axis in ((part.graph.input[0], time_axis), (part.graph.output[0], 2 if last == _FRONT else None)):
        dims = value.type.tensor_type.shape.dim
        dims[0].dim_param = "N"
        if axis is not None:
            dims[axis].dim_param = "T"
    return part.SerializeToString()


def _frames(x: np.ndarray) -> np.ndarray:
    """The model's own framing (its Slice, Reshape and Concat nodes): frame k is x[160k : 160k + 320]."""
    k = len(x) // HOP - 1
    return np.concatenate([x[: HOP * k].reshape(k, HOP), x[HOP : HOP * (k + 1)].reshape(k, HOP)], axis=1)


class BatchedDnsmos:
    """The reference computation (speechmos / dnsmos_local.py): P.835 and P.808 on every 9.01 s window
    of a clip (every 1 s), averaged, on single-threaded sessions that do not spin.

    Overlapping windows share their P.835 convolutions. The model frames a window into 900 frames
    (hop 160), and its first four layers are 3x3 convolutions, so an output frame depends on the 4
    frames each side of it. A clip of more than one window has its frames computed once, in 1 s chunks
    with 4 frames of context each side; each window takes its 900 frames from there, except the 4 at
    each of its ends, computed from the window's own edge (where the model pads with zeros), and runs
    the rest of the model (pooling, convolutions, dense) on them. The arithmetic is the model's, so the
    scores equal the per-window ones to float32 rounding (tests/scorers/test_dnsmos_shared.py), at
    about a fifth of the work on a 20 s clip. A clip of one window runs the whole model as it is."""

    def __init__(self) -> None:
        import onnx
        import onnxruntime as ort
        from speechmos.dnsmos import DNSMOS

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        opts.log_severity_level = 3  # ORT warns that the open time axis differs from the shape it inferred

        def session(model: str | bytes):
            return ort.InferenceSession(model, sess_options=opts, providers=["CPUExecutionProvider"])

        d = _models_dir()
        self.primary = session(str(d / "sig_bak_ovr.onnx"))
        shaped = onnx.shape_inference.infer_shapes(onnx.load(str(d / "sig_bak_ovr.onnx")))
        self.front = session(_part(shaped, _FRAMES, _FRONT, time_axis=1))
        self.back = session(_part(shaped, _FRONT, _SCORES, time_axis=2))
        self.p808 = session(str(d / "model_v8.onnx"))
        self._ref = DNSMOS.__new__(DNSMOS)  # only for its feature and polynomial helpers

    def _front(self, x: np.ndarray, first: int, last: int) -> np.ndarray:
        """Front outputs of frames [first, last) of ``x`` as the model pads a sequence of just those."""
        return self.front.run(None, {_FRAMES: _frames(x[HOP * first : HOP * (last + 1)])[None]})[0][0]

    def _window_fronts(self, x: np.ndarray, starts: list[int]) -> Iterator[np.ndarray]:
        """Front outputs of the windows starting at the given frames, shared (class doc), one at a time."""
        n_frames = len(x) // HOP - 1
        chunks: dict[int, np.ndarray] = {}

        def chunk(c: int) -> np.ndarray:  # frames [100c, 100c + 100) with their full context
            if c not in chunks:
                lo, hi = max(100 * c - REACH, 0), min(100 * c + 100 + REACH, n_frames)
                chunks[c] = self._front(x, lo, hi)[:, 100 * c - lo : 100 * c - lo + 100]
            return chunks[c]

        for s in starts:
            for c in [c for c in chunks if c < s // 100]:
                del chunks[c]  # bounded memory on long clips: only the chunks of the current window
            w = np.concatenate([chunk(s // 100 + c) for c in range(9)], axis=1)
            w[:, :REACH] = self._front(x, s, s + 2 * REACH)[:, :REACH]
            w[:, 900 - REACH :] = self._front(x, s + 900 - 2 * REACH, s + 900)[:, REACH:]
            yield w

    def _p835_shared(self, x: np.ndarray, starts: list[int]) -> np.ndarray:
        """Raw P.835 outputs of the windows starting at the given frames: the rest of the model on each front."""
        return np.concatenate([self.back.run(None, {_FRONT: w[None]})[0] for w in self._window_fronts(x, starts)])

    def __call__(self, audio: np.ndarray, fs: int = 16000, one_window: bool = False) -> dict[str, float]:
        """The scores of ``audio``; ``one_window``: a clip under 9.01 s gets one window (module doc)."""
        if fs != 16000:
            raise ValueError(f"DNSMOS scores 16 kHz audio, not {fs} Hz")
        length = int(INPUT_LENGTH * fs)
        short = len(audio) < length
        while len(audio) < length:
            audio = np.append(audio, audio)
        if short and one_window:
            audio = audio[:length]
        hops = int(np.floor(len(audio) / fs) - INPUT_LENGTH) + 1
        windows = [(int(i * fs), audio[int(i * fs) : int((i + INPUT_LENGTH) * fs)]) for i in range(hops)]
        # As the reference: its float window ends make windows 7 to 23 one sample short, and it skips them.
        windows = [(start, w) for start, w in windows if len(w) >= length]
        if len(windows) == 1:
            r = self.primary.run(None, {"input_1": windows[0][1][None].astype("float32")})[0]
        else:
            r = self._p835_shared(audio.astype("float32"), [start // HOP for start, _ in windows])
        p808 = []
        for first in range(0, len(windows), BATCH):
            mels = [self._ref.audio_melspec(audio=w[:-160]) for _, w in windows[first : first + BATCH]]
            p808.append(self.p808.run(None, {"input_1": np.stack(mels).astype("float32")})[0][:, 0])
        sig, bak, ovr = self._ref.get_polyfit_val(r[:, 0], r[:, 1], r[:, 2], False)
        return {
            "ovrl_mos": float(np.mean(ovr)),
            "sig_mos": float(np.mean(sig)),
            "bak_mos": float(np.mean(bak)),
            "p808_mos": float(np.mean(np.concatenate(p808))),
        }


def model() -> BatchedDnsmos:
    global _model
    with _LOCK:
        if _model is None:
            _model = BatchedDnsmos()
        return _model


class Dnsmos(Metric):
    name = "dnsmos"
    description = "DNSMOS P.835 OVRL (headline), SIG, BAK and P.808 MOS (speechmos ONNX models, 16 kHz)."

    def warm(self) -> None:
        model()

    def measure(self, clip: ClipInputs) -> Measurement:
        x = resample(clip.audio.samples, clip.audio.sample_rate, 16000).clip(-1.0, 1.0)
        out = model()(x.astype(np.float32), 16000, one_window=short_clips_mode() == "one-window")
        return {
            "dnsmos.ovrl": float(out["ovrl_mos"]),
            "dnsmos.sig": float(out["sig_mos"]),
            "dnsmos.bak": float(out["bak_mos"]),
            "dnsmos.p808": float(out["p808_mos"]),
        }, {}

    def aggregate(self, rows: list[dict[str, float]]) -> dict[str, float]:
        return {
            "dnsmos": mean_of(rows, "dnsmos.ovrl"),
            "dnsmos_sig": mean_of(rows, "dnsmos.sig"),
            "dnsmos_bak": mean_of(rows, "dnsmos.bak"),
            "dnsmos_p808": mean_of(rows, "dnsmos.p808"),
        }

    def fingerprint(self) -> dict[str, str]:
        d = _models_dir()
        return {
            "dnsmos": f"speechmos {version('speechmos')}, onnxruntime {version('onnxruntime')}",
            "dnsmos.sig_bak_ovr_sha256": sha256_file(d / "sig_bak_ovr.onnx"),
            "dnsmos.p808_sha256": sha256_file(d / "model_v8.onnx"),
            "dnsmos.resampler": RESAMPLER,
            "dnsmos.short_clips": SHORT_CLIPS[short_clips_mode()],
            "dnsmos.windows": "9.01 s every 1 s, averaged; P.835 convolutions shared by overlapping windows",
        }

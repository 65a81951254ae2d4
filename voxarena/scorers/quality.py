"""DNSMOS P.835 (SIG, BAK, OVRL) and P.808 from the ``speechmos`` package's bundled ONNX models.

Audio is resampled to 16 kHz (soxr HQ). As Microsoft's reference ``dnsmos_local.py`` does, a clip
shorter than 9.01 s is tiled (appended to itself) until it is long enough, and a longer clip is
scored on 9.01 s windows every 1 s whose scores are averaged. The P.835 scores go through the
reference's polynomial fit (non-personalised). The headline ``dnsmos`` column is OVRL, as in the
SoK paper.
"""

from __future__ import annotations

import threading
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
BATCH = 4  # windows per ONNX call: 16 took the scorer past 2 GB on a 600 s clip; the scores are the same


class BatchedDnsmos:
    """The reference computation (speechmos / dnsmos_local.py) with every 9.01 s window of a clip in
    one ONNX batch instead of one call per window, on single-threaded sessions that do not spin."""

    def __init__(self) -> None:
        import onnxruntime as ort
        from speechmos.dnsmos import DNSMOS

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        d = _models_dir()
        self.primary = ort.InferenceSession(
            str(d / "sig_bak_ovr.onnx"), sess_options=opts, providers=["CPUExecutionProvider"]
        )
        self.p808 = ort.InferenceSession(
            str(d / "model_v8.onnx"), sess_options=opts, providers=["CPUExecutionProvider"]
        )
        self._ref = DNSMOS.__new__(DNSMOS)  # only for its feature and polynomial helpers

    def __call__(self, audio: np.ndarray, fs: int = 16000) -> dict[str, float]:
        length = int(INPUT_LENGTH * fs)
        while len(audio) < length:
            audio = np.append(audio, audio)
        hops = int(np.floor(len(audio) / fs) - INPUT_LENGTH) + 1
        windows = [audio[int(i * fs) : int((i + INPUT_LENGTH) * fs)] for i in range(hops)]
        windows = [w for w in windows if len(w) >= length]
        raw, p808 = [], []
        for start in range(0, len(windows), BATCH):
            chunk = windows[start : start + BATCH]
            raw.append(self.primary.run(None, {"input_1": np.stack(chunk).astype("float32")})[0])
            mels = np.stack([self._ref.audio_melspec(audio=w[:-160]) for w in chunk]).astype("float32")
            p808.append(self.p808.run(None, {"input_1": mels})[0][:, 0])
        r = np.concatenate(raw)
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
    aggregation = "mean per column"
    description = "DNSMOS P.835 OVRL (headline), SIG, BAK and P.808 MOS (speechmos ONNX models, 16 kHz)."
    columns = ("dnsmos", "dnsmos_sig", "dnsmos_bak", "dnsmos_p808")

    def measure(self, clip: ClipInputs) -> Measurement:
        x = resample(clip.audio.samples, clip.audio.sample_rate, 16000).clip(-1.0, 1.0)
        out = model()(x.astype(np.float32), 16000)
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
            "dnsmos.short_clips": "tiled to 9.01 s as dnsmos_local.py",
            "dnsmos.windows": "9.01 s every 1 s, averaged (batched ONNX calls)",
        }

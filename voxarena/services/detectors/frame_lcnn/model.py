"""frame-lcnn: a detector trained here on the arena's own partial fakes that scores every 10 ms of a clip.

LFCC frames (the ASVspoof baseline front end) through a light CNN and a BLSTM (``network.py``) give each
frame its bona fide log-odds; the service answers:

- segment scores at 20 ms (``DetectorInfo.segment_hop_seconds``): the mean of the frame margins whose centre
  falls in each 20 ms, uncalibrated (``lfcc_gmm.lfcc.frame_segments``, as lfcc-gmm's);
- the utterance score: the frames' soft minimum, -log(mean(exp(-m_t))) (one fake word makes a clip fake),
  mapped to an LLR by the calibration fitted on dev speakers.

Served from ``weights/model.onnx`` with onnxruntime, one thread, no torch. A long clip is scored in chunks of
20 s with 1 s of context either side (the network trained on 4 s crops), so memory stays bounded and a
frame's score depends on its own chunk only. Training: ``train.py`` (``make train-partial``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from voxarena.codec import AudioClip, resample
from voxarena.segments import segment_count
from voxarena.services.detectors.lfcc_gmm.lfcc import LfccConfig, frame_segments, lfcc
from voxarena.services.detectors.trained import TrainedDetector

ONNX_FILE = "model.onnx"
CHUNK_FRAMES, CONTEXT_FRAMES = 2000, 100


def soft_minimum(margins: np.ndarray) -> float:
    """-log(mean(exp(-m))), computed stably."""
    m = -np.asarray(margins, np.float64)
    top = m.max()
    return float(-(top + np.log(np.mean(np.exp(m - top)))))


class FrameLcnnModel(TrainedDetector):
    name = "frame-lcnn"
    version = "1.0.0"
    licence = (
        "Apache-2.0 (VoxArena; weights trained here on LibriSpeech train-clean-100, CC BY 4.0, and its partial fakes)"
    )
    family = "HANDCRAFTED_FRONT_END"
    native_sample_rate = 16000
    timing_scope = "score: resample to 16 kHz (soxr HQ) + LFCC + frame LCNN-BLSTM (onnxruntime, 1 thread), 20 s chunks"
    max_batch_size = 16
    max_seconds = 600.0
    min_seconds = 0.02  # one LFCC frame
    weight_files = (ONNX_FILE,)
    weights_env = "VOXARENA_FRAME_LCNN_WEIGHTS"
    segment_hop_seconds = 0.02

    def load_weights(self, directory: Path, meta: dict) -> None:
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session = ort.InferenceSession(
            str(directory / ONNX_FILE), sess_options=opts, providers=["CPUExecutionProvider"]
        )
        self._input = self._session.get_inputs()[0].name
        self._cfg = LfccConfig(**meta["lfcc"])

    def parameter_count(self) -> int | None:
        return self.training.get("parameter_count")

    def frame_margins(self, clip: AudioClip) -> np.ndarray:
        """Bona fide log-odds of each 10 ms LFCC frame of the clip (float64)."""
        x = resample(clip.as_float32(), clip.sample_rate, self._cfg.sample_rate).astype(np.float32)
        feats = lfcc(x, self._cfg).T.astype(np.float32)  # (60, frames)
        n = feats.shape[1]
        out = np.empty(n)
        for start in range(0, n, CHUNK_FRAMES):
            lo, hi = max(0, start - CONTEXT_FRAMES), min(n, start + CHUNK_FRAMES + CONTEXT_FRAMES)
            got = self._session.run(None, {self._input: feats[None, :, lo:hi]})[0][0]
            stop = min(n, start + CHUNK_FRAMES)
            out[start:stop] = got[start - lo : stop - lo]
        return out

    def score_batch(self, clips: list[AudioClip]) -> list[float]:
        return [soft_minimum(self.frame_margins(c)) for c in clips]

    def segment_batch(self, clips: list[AudioClip], options: list[dict[str, str]]) -> list[list[float]]:
        hop = self.segment_hop_seconds
        return [
            frame_segments(
                self.frame_margins(c), segment_count(c.samples.size, c.sample_rate, hop), hop, self._cfg
            ).tolist()
            for c in clips
        ]

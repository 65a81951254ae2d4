"""RawNet2: end-to-end on the raw waveform (sinc filters + residual blocks + GRU), Tak et al. 2021.

Served from the ONNX export of the trained network (``weights/model.onnx``), no torch at serving.
The score is the mean over 64600-sample (~4 s) windows of logit(bona fide) - logit(spoof), mapped
to an LLR with the calibration fitted on dev. Network in ``network.py``, training in ``train.py``.
"""

from __future__ import annotations

import numpy as np

from voxarena.services.detectors.onnx_scoring import OnnxDetector


class RawNet2Model(OnnxDetector):
    name = "rawnet2"
    version = "1.0.0"
    licence = (
        "Apache-2.0 (VoxArena implementation; weights trained on LibriSpeech, CC BY 4.0, and seen-generator speech)"
    )
    family = "END_TO_END_RAW_WAVEFORM"
    timing_scope = "score: resample to 16 kHz (soxr HQ) + RawNet2 (onnxruntime, 1 thread) over 64600-sample windows"
    weights_env = "VOXARENA_RAWNET2_WEIGHTS"

    def featurize(self, samples: np.ndarray) -> np.ndarray:
        return samples.astype(np.float32)

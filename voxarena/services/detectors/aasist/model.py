"""AASIST: raw-waveform encoder + spectro-temporal graph attention (Jung et al. 2022), CPU-sized.

Served from the ONNX export of the trained network (``weights/model.onnx``), no torch at serving.
The score is the mean over 2 s windows of logit(bona fide) - logit(spoof), mapped to an LLR with
the calibration fitted on dev. Network in ``network.py`` (sizes there), training in ``train.py``.
"""

from __future__ import annotations

import numpy as np

from voxarena.services.detectors.onnx_scoring import OnnxDetector


class AasistModel(OnnxDetector):
    name = "aasist"
    version = "1.0.0"
    licence = (
        "Apache-2.0 (VoxArena implementation; weights trained on LibriSpeech, CC BY 4.0, and seen-generator speech)"
    )
    family = "END_TO_END_RAW_WAVEFORM"
    timing_scope = "score: resample to 16 kHz (soxr HQ) + AASIST (onnxruntime, 1 thread) over 32000-sample windows"
    weights_env = "VOXARENA_AASIST_WEIGHTS"

    def featurize(self, samples: np.ndarray) -> np.ndarray:
        return samples.astype(np.float32)

"""LFCC-LCNN: LFCC front end + Light CNN with max-feature-map and BLSTM (the ASVspoof 2021 baseline design).

Served from the ONNX export of the trained network (``weights/model.onnx``), so the service needs no
torch. The score is the mean over 4 s windows of logit(bona fide) - logit(spoof); the service maps
it to an LLR with the calibration fitted on dev (``metadata.json``). The network is in ``network.py``,
its training in ``train.py``.
"""

from __future__ import annotations

import numpy as np

from voxarena.services.detectors.lfcc_gmm.lfcc import LfccConfig, lfcc
from voxarena.services.detectors.onnx_scoring import OnnxDetector


class LfccLcnnModel(OnnxDetector):
    name = "lfcc-lcnn"
    family = "HANDCRAFTED_FRONT_END"
    timing_scope = "score: resample to 16 kHz (soxr HQ) + LFCC + LCNN (onnxruntime, 1 thread) over 4 s windows"
    weights_env = "VOXARENA_LFCC_LCNN_WEIGHTS"

    def load_weights(self, directory, meta: dict) -> None:
        super().load_weights(directory, meta)
        self._cfg = LfccConfig(**meta["lfcc"])

    def featurize(self, samples: np.ndarray) -> np.ndarray:
        return lfcc(samples, self._cfg).T.astype(np.float32)

"""RawNet2: end-to-end on the raw waveform (sinc filters + residual blocks + GRU), Tak et al. 2021.

Served from the ONNX export of the trained network (``weights/model.onnx``), no torch at serving.
The score is the mean over 64600-sample (~4 s) windows of logit(bona fide) - logit(spoof), mapped
to an LLR with the calibration fitted on dev. Network in ``network.py``, training in ``train.py``.
"""

from __future__ import annotations

from voxarena.services.detectors.onnx_scoring import RawWaveformDetector


class RawNet2Model(RawWaveformDetector):
    name = "rawnet2"
    timing_scope = "score: resample to 16 kHz (soxr HQ) + RawNet2 (onnxruntime, 1 thread) over 64600-sample windows"
    weights_env = "VOXARENA_RAWNET2_WEIGHTS"

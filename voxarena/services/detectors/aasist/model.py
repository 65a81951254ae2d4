"""AASIST: raw-waveform encoder + spectro-temporal graph attention (Jung et al. 2022), CPU-sized.

Served from the ONNX export of the trained network (``weights/model.onnx``), no torch at serving.
The score is the mean over 2 s windows of logit(bona fide) - logit(spoof), mapped to an LLR with
the calibration fitted on dev. Network in ``network.py`` (sizes there), training in ``train.py``.
"""

from __future__ import annotations

from voxarena.services.detectors.onnx_scoring import RawWaveformDetector


class AasistModel(RawWaveformDetector):
    name = "aasist"
    timing_scope = "score: resample to 16 kHz (soxr HQ) + AASIST (onnxruntime, 1 thread) over 32000-sample windows"
    weights_env = "VOXARENA_AASIST_WEIGHTS"

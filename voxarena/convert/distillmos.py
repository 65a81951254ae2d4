"""distillmos: DistillMOS variant 7 (``distillmos`` 0.9.1, MIT, Microsoft) exported to ONNX for ``mos_distill``.

The network is the package's own ``ConvTransformerSQAModel`` (its CNN on the compressed complex
spectrum, then ``xls_r_sqa``'s transformer and attention pooling, ``xls-r-sqa`` 0.1.0) with the
package's checkpoint. Its time axis is fixed: the positional encoding has 384 frames, i.e. windows of
exactly 122880 samples (7.68 s at 16 kHz); the batch axis is dynamic. What the package does around
the network (zero padding, windows every <= 1 s and their mean, peak normalisation, STFT and
compression) stays out of the graph and is reproduced in numpy by the scorer (``voxarena.scorers.mos_distill``),
so the export starts at the compressed spectrum (batch, 2, 161, 768) and ends at 1 + 4 * sigmoid.

The check runs the package's full torch forward (segmenting included) on the LibriSpeech check clips
(``voxarena.convert.check_clips``: 2.1 to 9.9 s, so both the padded and the multi-window paths) and the
scorer's numpy preprocessing plus the ONNX export on the same samples, and fails beyond
``TOLERANCE``.

torch is imported inside the functions only.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import sys
import types
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from voxarena.converted import SourceWeights

from . import check_clips

if TYPE_CHECKING:
    from distillmos.sqa import ConvTransformerSQAModel

SOURCE = SourceWeights(
    package="distillmos",
    version="0.9.1",
    file="distillmos/weights/distill_mos_v7.pt",
    sha256="b18b3ac60227267cfb91e5d00ce22cc7b73716fd92f269484da1446e27031a40",
    licence="MIT (Copyright (c) Microsoft Corporation); model code also from xls-r-sqa 0.1.0, MIT (KU Leuven)",
    upstream="microsoft/Distill-MOS variant 7 (Stahl & Gamper, arXiv:2502.05356), trained by distillation "
    "from an XLS-R speech quality model",
)
# The network's code comes from this package too; another version may build a different network.
MODEL_CODE = ("xls-r-sqa", "0.1.0")
OPSET = 17
# Largest |MOS_onnx - MOS_torch| accepted on the check clips. Measured 4.8e-7 on the four clips (Debian
# torch 1.13.1, onnxruntime 1.19.2): float32 kernels summing in another order, numpy's float64 FFT
# against torch's float32 one. The one export fault met while writing this (the model left with
# BatchNorm in training mode) moved it by 0.6.
TOLERANCE = 1e-3


class ConversionMismatch(RuntimeError):
    """The ONNX export plus the numpy preprocessing does not reproduce the torch original."""


@contextlib.contextmanager
def _torchaudio_optional():
    """``distillmos/sqa.py`` imports torchaudio at the top for its command line (file loading and
    resampling); the network never calls it. The conversion needs only torch, so where torchaudio is
    not installed a placeholder module stands in while the package is imported, and is removed after."""
    if importlib.util.find_spec("torchaudio") is not None:
        yield
        return
    placeholder = types.ModuleType("torchaudio")
    sys.modules["torchaudio"] = placeholder
    try:
        yield
    finally:
        if sys.modules.get("torchaudio") is placeholder:
            del sys.modules["torchaudio"]


def load_torch_model():
    """The package's ``ConvTransformerSQAModel`` with the verified checkpoint, in eval mode (CPU)."""
    import torch

    installed = importlib.metadata.version(MODEL_CODE[0])
    if installed != MODEL_CODE[1]:
        raise ConversionMismatch(
            f"{MODEL_CODE[0]} {installed} is installed; the network was checked with {MODEL_CODE[1]}"
        )
    with _torchaudio_optional():
        from distillmos.sqa import ConvTransformerSQAModel

    model = ConvTransformerSQAModel(load_weights=False)
    model.load_state_dict(torch.load(SOURCE.locate(), map_location="cpu", weights_only=True)["model"])
    return model.eval()


def torch_mos(model, samples: np.ndarray) -> float:
    """The package's own forward (padding, windows, mean) on one 16 kHz clip."""
    import torch

    with torch.no_grad():
        return float(model(torch.from_numpy(np.asarray(samples, np.float32))[None, :])[0])


def _export(model, path: Path) -> None:
    import torch

    from voxarena.scorers.mos_distill import HOP, SEQ_LEN, WIN

    class FromSpectrum(torch.nn.Module):
        """``ConvTransformerSQAModel.forward`` after its STFT: compressed spectrum -> MOS per window."""

        def __init__(self, inner: ConvTransformerSQAModel) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, spec: torch.Tensor) -> torch.Tensor:
            feat = torch.flatten(self.inner.cnn.cnn(spec), 1, -2).permute(0, 2, 1)
            return 1 + 4 * self.inner.transformer_pool_attn(feat)

    frames = (SEQ_LEN + (WIN - HOP) - WIN) // HOP + 1
    example = torch.zeros(1, 2, WIN // 2 + 1, frames)
    # Traced with autograd on: under no_grad torch 1.13's TransformerEncoderLayer takes its fused fast
    # path (aten::_transformer_encoder_layer_fwd), which has no ONNX export; the plain path computes the same.
    # The wrapper in eval mode: export restores each module's mode afterwards, and a wrapper left in
    # training mode would put the shared model back into training mode (BatchNorm on batch statistics).
    torch.onnx.export(
        FromSpectrum(model).eval(),
        (example,),
        str(path),
        input_names=["spec"],
        output_names=["mos"],
        dynamic_axes={"spec": {0: "windows"}, "mos": {0: "windows"}},
        opset_version=OPSET,
        do_constant_folding=True,
    )


def convert(out_dir: Path) -> dict:
    """Export ``model.onnx``; compare torch's MOS with the served computation's on the check clips."""
    from voxarena.scorers.mos_distill import ONNX_FILE, SAMPLE_RATE, DistillMosOnnx

    model = load_torch_model()
    path = out_dir / ONNX_FILE
    _export(model, path)
    served = DistillMosOnnx(path)
    per_clip = {}
    for name, samples, rate in check_clips():
        if rate != SAMPLE_RATE:
            raise ConversionMismatch(f"{name}: check clip at {rate} Hz; the check compares 16 kHz input")
        x = samples.astype(np.float32)
        reference = torch_mos(model, x)
        mos, windows = served.mos(x, rate)
        per_clip[name] = {
            "seconds": round(len(x) / rate, 2),
            "windows": windows,
            "torch": round(reference, 6),
            "onnx": round(mos, 6),
            "abs_diff": abs(mos - reference),
        }
    diff = max(c["abs_diff"] for c in per_clip.values())
    check = {
        "max_abs_mos_diff": diff,
        "tolerance": TOLERANCE,
        "clips": per_clip,
        "inputs": "LibriSpeech test-clean check clips at 16 kHz; torch: the package's forward; "
        "onnx: voxarena.scorers.mos_distill preprocessing + model.onnx",
    }
    if not diff <= TOLERANCE:
        raise ConversionMismatch(f"distillmos: ONNX vs torch max |MOS diff| {diff:.3g} > tolerance {TOLERANCE}")
    return check

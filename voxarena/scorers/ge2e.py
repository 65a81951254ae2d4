"""Resemblyzer's GE2E speaker encoder without torch: its preprocessing code as shipped, the network as ONNX.

The scorer image must stay small, and torch from PyPI is a multi-GB CUDA build. So:

- preprocessing (``preprocess_wav``: volume normalisation, webrtcvad silence trimming) and the 40-band
  mel spectrogram run Resemblyzer's own ``audio.py``, loaded without the package ``__init__`` (which
  imports torch);
- the 3-layer LSTM + linear + ReLU + L2 norm is ``models/resemblyzer_ge2e.onnx``, exported from the
  package's ``pretrained.pt`` by ``python -m voxarena.scorers.ge2e --export`` (needs torch once) and checked
  against ``resemblyzer.VoiceEncoder`` in the tests;
- ``embed_utterance`` follows ``VoiceEncoder.embed_utterance``: 1.6 s partials at 1.3 per second,
  the last kept when it covers 75%, the mean of partial embeddings L2-normalised.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import threading
import types
from pathlib import Path

import numpy as np

MODEL = Path(__file__).parent / "models" / "resemblyzer_ge2e.onnx"
MODEL_META = MODEL.with_suffix(".json")
_LOCK = threading.Lock()
_audio: types.ModuleType | None = None


def resemblyzer_dir() -> Path:
    spec = importlib.util.find_spec("resemblyzer")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the resemblyzer package is not installed (pip install --no-deps resemblyzer)")
    return Path(list(spec.submodule_search_locations)[0])


def audio_module() -> types.ModuleType:
    """Resemblyzer's ``audio`` module (and ``hparams``), imported without running its package ``__init__``."""
    global _audio
    with _LOCK:
        if _audio is None:
            root = resemblyzer_dir()
            if "resemblyzer" in sys.modules and hasattr(sys.modules["resemblyzer"], "VoiceEncoder"):
                import resemblyzer.audio as real  # the real package is already loaded (dev environment)

                _audio = real
                return _audio
            package = sys.modules.setdefault("resemblyzer", types.ModuleType("resemblyzer"))
            package.__path__ = [str(root)]  # type: ignore[attr-defined]
            for name in ("hparams", "audio"):
                full = f"resemblyzer.{name}"
                if full not in sys.modules:
                    spec = importlib.util.spec_from_file_location(full, root / f"{name}.py")
                    if spec is None or spec.loader is None:
                        raise ImportError(f"{full}: cannot load {root / f'{name}.py'}")
                    module = importlib.util.module_from_spec(spec)
                    sys.modules[full] = module
                    spec.loader.exec_module(module)
            _audio = sys.modules["resemblyzer.audio"]
        return _audio


def partial_slices(n_samples: int, rate: float = 1.3, min_coverage: float = 0.75) -> tuple[list[slice], list[slice]]:
    """Waveform and mel slices of the partial utterances (``VoiceEncoder.compute_partial_slices``)."""
    hp = sys.modules.get("resemblyzer.hparams") or audio_module() and sys.modules["resemblyzer.hparams"]
    samples_per_frame = int(hp.sampling_rate * hp.mel_window_step / 1000)
    n_frames = int(np.ceil((n_samples + 1) / samples_per_frame))
    frame_step = int(np.round((hp.sampling_rate / rate) / samples_per_frame))
    wav_slices, mel_slices = [], []
    for i in range(0, max(1, n_frames - hp.partials_n_frames + frame_step + 1), frame_step):
        mel_slices.append(slice(i, i + hp.partials_n_frames))
        wav_slices.append(slice(i * samples_per_frame, (i + hp.partials_n_frames) * samples_per_frame))
    last = wav_slices[-1]
    if (n_samples - last.start) / (last.stop - last.start) < min_coverage and len(mel_slices) > 1:
        mel_slices, wav_slices = mel_slices[:-1], wav_slices[:-1]
    return wav_slices, mel_slices


# Partial utterances (1.6 s each, 1.3 per second) per ONNX run: all of a 600 s clip's ~780 at once held
# 1.7 GB of LSTM activations. Each partial's embedding is computed alone, so the runs give the same ones.
PARTIALS_PER_RUN = 64


class OnnxVoiceEncoder:
    def __init__(self, path: Path = MODEL) -> None:
        import onnxruntime as ort

        from voxarena.hashing import sha256_file

        meta = json.loads(MODEL_META.read_text())
        actual = sha256_file(path)
        if actual != meta["sha256"]:
            raise RuntimeError(f"{path}: sha256 {actual} does not match {MODEL_META} ({meta['sha256']})")
        self.meta = meta
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = 1
        opts.inter_op_num_threads = 1
        opts.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(path), sess_options=opts, providers=["CPUExecutionProvider"])

    def embed_utterance(self, wav: np.ndarray) -> np.ndarray:
        wav_slices, mel_slices = partial_slices(len(wav))
        if wav_slices[-1].stop >= len(wav):
            wav = np.pad(wav, (0, wav_slices[-1].stop - len(wav)), "constant")
        mel = audio_module().wav_to_mel_spectrogram(wav)
        mels = np.array([mel[s] for s in mel_slices], dtype=np.float32)
        runs = range(0, len(mels), PARTIALS_PER_RUN)
        partials = np.concatenate([self.session.run(None, {"mels": mels[i : i + PARTIALS_PER_RUN]})[0] for i in runs])
        raw = np.mean(partials, axis=0)
        return raw / np.linalg.norm(raw, 2)


def export(out: Path = MODEL) -> dict:
    """Export resemblyzer's pretrained VoiceEncoder to ONNX (dev only: needs torch)."""
    import hashlib

    import torch
    from resemblyzer import VoiceEncoder

    torch.manual_seed(0)
    enc = VoiceEncoder(device="cpu", verbose=False).eval()
    example = torch.zeros(2, 160, 40)
    torch.onnx.export(
        enc,
        (example,),
        str(out),
        input_names=["mels"],
        output_names=["embeddings"],
        dynamic_axes={"mels": {0: "partials"}, "embeddings": {0: "partials"}},
        opset_version=17,
        dynamo=False,
    )
    from importlib.metadata import version

    meta = {
        "sha256": hashlib.sha256(out.read_bytes()).hexdigest(),
        "source": "resemblyzer pretrained.pt",
        "source_sha256": hashlib.sha256((resemblyzer_dir() / "pretrained.pt").read_bytes()).hexdigest(),
        "resemblyzer_version": version("resemblyzer"),
        "torch_version": torch.__version__,
        "command": "python -m voxarena.scorers.ge2e --export",
    }
    MODEL_META.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return meta


if __name__ == "__main__":
    if sys.argv[1:] == ["--export"]:
        print(json.dumps(export(), indent=2))
    else:
        raise SystemExit("usage: python -m voxarena.scorers.ge2e --export")

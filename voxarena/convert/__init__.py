"""Build-time conversion of registry packages' torch checkpoints to ONNX (``make models``).

Needs torch, so it runs only in the conversion venv (``make convert-venv``: Debian's CPU
``python3-torch`` through ``--system-site-packages``) or the converter image; serving never imports
this package. One module per model (``voxarena/convert/<name>.py``, registered in ``CONVERTERS``) declares
its ``SOURCE`` (the package, version, file inside it and the committed sha256 of the original
weights) and ``convert(out_dir) -> check`` that exports ONNX into ``out_dir`` and returns what it
measured against the torch original (max abs difference, tolerance, clips compared). A model a service
serves has its ``SOURCE`` and file names on the serving side (the service's ``source.py``, a
``voxarena.converted.SourceWeights``); the converter imports them from there, never the other way round.
``python -m convert`` refuses source weights whose sha256 differs from the committed one and writes
``provenance.json`` beside the ONNX (read at serving time by ``voxarena.converted``).

The agreement check runs on real speech: ``check_clips()`` reads a fixed set of LibriSpeech
test-clean clips (each verified by sha256) from ``$VOXARENA_SPEECH`` (default ``../shared/data/speech``
beside the checkout); an image build has no such directory, so ``python -m voxarena.convert --speech-url URL``
fetches the same clips over HTTP first (``compose/build_images.py`` serves them).
This package imports torch only inside the converters' functions.
"""

from __future__ import annotations

import os
import urllib.request
from pathlib import Path

import numpy as np

from voxarena.converted import SourceMismatch
from voxarena.hashing import sha256_file

# name -> module; the name is the directory under the models dir.
CONVERTERS = {
    "aasist-asv19": "voxarena.convert.aasist_asv19",
    "hifigan": "voxarena.convert.hifigan",
    "distillmos": "voxarena.convert.distillmos",
    "perth": "voxarena.convert.perth",
}


SPEECH_ENV = "VOXARENA_SPEECH"

# Real speech the conversions are checked on: LibriSpeech test-clean (CC BY 4.0), 16 kHz FLAC, two
# female and two male speakers, one clip shorter than 4 s (path relative to the speech directory ->
# sha256, as in its SHA256SUMS).
CHECK_CLIPS = {
    "LibriSpeech/test-clean/1089/134691/1089-134691-0000.flac": (
        "1007b1827cd385e3ded575a48811d419d31c495a31784ed260ccfd9fcac2731f"
    ),
    "LibriSpeech/test-clean/2300/131720/2300-131720-0015.flac": (
        "4f40c529c89febe9e5ceaa449efa0395784a0f6362142b32b9e4ad561c517785"
    ),
    "LibriSpeech/test-clean/2961/960/2961-960-0020.flac": (
        "48ed7d9418abd7530d3bd54c929996968edaf2e7f0101aad492cdf830a6eaff6"
    ),
    "LibriSpeech/test-clean/5142/36377/5142-36377-0007.flac": (
        "6b5d1d17b7d2943f67515923348e9de8d76b5dd9e99b821de8e7a67a599bac0a"
    ),
}


def speech_dir() -> Path:
    default = Path(__file__).resolve().parents[3] / "shared" / "data" / "speech"
    return Path(os.environ.get(SPEECH_ENV) or default)


def check_clips() -> list[tuple[str, np.ndarray, int]]:
    """(name, float64 samples, sample rate) of every clip in ``CHECK_CLIPS``, after checking its sha256."""
    import soundfile as sf

    root = speech_dir()
    out = []
    for rel, expected in CHECK_CLIPS.items():
        path = root / rel
        if not path.exists():
            raise FileNotFoundError(
                f"{path}: check clip missing; set {SPEECH_ENV} to the shared speech directory or pass --speech-url"
            )
        actual = sha256_file(path)
        if actual != expected:
            raise SourceMismatch(f"{path}: sha256 {actual} != expected {expected}")
        samples, rate = sf.read(path, dtype="float64")
        out.append((Path(rel).stem, samples, rate))
    return out


def fetch_check_clips(url: str, dest: Path) -> None:
    """Download ``CHECK_CLIPS`` from ``url`` (a speech directory served over HTTP) into ``dest``."""
    for rel in CHECK_CLIPS:
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        with urllib.request.urlopen(url.rstrip("/") + "/" + rel, timeout=60) as r:
            path.write_bytes(r.read())

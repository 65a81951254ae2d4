"""Running a command-line speech engine: text on stdin, a WAV back, a time limit, clear errors.

Used by the engines that ship as programs (espeak-ng, mbrola through espeak-ng, flite, festival).
The text never goes on the command line. ``{out}`` in the command is replaced by a temporary WAV
path for engines that cannot write to a pipe; otherwise the WAV is read from stdout.
"""

from __future__ import annotations

import io
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf

from voxarena.codec import AudioClip

from .errors import InternalError, InvalidArgument, TimeLimitExceeded


def require_program(name: str, package: str) -> str:
    path = shutil.which(name)
    if not path:
        raise RuntimeError(f"{name} is not installed (Debian package {package})")
    return path


def program_version(cmd: list[str]) -> str:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    return (out.stdout or out.stderr).strip().splitlines()[0] if (out.stdout or out.stderr).strip() else ""


def time_limit_for(text: str) -> float:
    """Generous but finite: 30 s plus 1 s per 20 characters."""
    return 30.0 + len(text) / 20.0


def run_engine(cmd: list[str], text: str, seconds_limit: float, engine: str) -> AudioClip:
    with tempfile.TemporaryDirectory(prefix="voxarena-") as tmp:
        out_path = Path(tmp) / "out.wav"
        uses_file = any("{out}" in c for c in cmd)
        argv = [c.replace("{out}", str(out_path)) for c in cmd]
        try:
            proc = subprocess.run(argv, input=text.encode("utf-8"), capture_output=True, timeout=seconds_limit, cwd=tmp)
        except subprocess.TimeoutExpired:
            raise TimeLimitExceeded(f"{engine} took longer than {seconds_limit:.0f} s") from None
        if proc.returncode != 0:
            raise InternalError(f"{engine} exited {proc.returncode}: {proc.stderr.decode(errors='replace')[-300:]}")
        data = out_path.read_bytes() if uses_file and out_path.exists() else proc.stdout
    if not data:
        raise InvalidArgument(f"{engine} produced no audio for this text (nothing speakable?)")
    try:
        samples, rate = sf.read(io.BytesIO(data), dtype="int16")
    except sf.LibsndfileError as e:
        raise InternalError(f"{engine} wrote an unreadable WAV: {e}") from None
    if samples.ndim != 1:
        samples = samples[:, 0]
    # Under 50 ms or all zeros is no speech.
    if samples.size < rate // 20 or not np.any(samples):
        raise InvalidArgument(f"{engine} produced no audio for this text (nothing speakable?)")
    return AudioClip(np.ascontiguousarray(samples), int(rate))

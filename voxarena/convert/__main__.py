"""``python -m voxarena.convert [NAME ...] --out DIR``: convert each model (default: all) and write its provenance."""

from __future__ import annotations

import argparse
import importlib
import inspect
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from voxarena.converted import PROVENANCE_FILE
from voxarena.hashing import sha256_file

from . import CONVERTERS, SPEECH_ENV, fetch_check_clips


def _versions() -> dict[str, str]:
    import onnx
    import torch

    return {"torch": torch.__version__, "onnx": onnx.__version__, "python": sys.version.split()[0]}


def convert_one(name: str, out: Path, force: bool) -> None:
    module = importlib.import_module(CONVERTERS[name])
    target = out / name
    meta_path = target / PROVENANCE_FILE
    # Up to date = same source weights, same converter code, files as recorded.
    converter = {"module": CONVERTERS[name], "module_sha256": sha256_file(inspect.getfile(module))}
    if meta_path.exists() and not force:
        old = json.loads(meta_path.read_text())
        same_converter = {k: old.get("converter", {}).get(k) for k in converter} == converter
        if (
            old.get("source") == module.SOURCE.record()
            and same_converter
            and all((target / f).exists() and sha256_file(target / f) == h for f, h in old.get("files", {}).items())
        ):
            print(f"{name}: up to date in {target}")
            return
    module.SOURCE.locate()  # refuses a different checkpoint before any work
    tmp = out / f".{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    t0 = time.perf_counter()
    check = module.convert(tmp)
    files = {p.name: sha256_file(p) for p in sorted(tmp.iterdir()) if p.is_file()}
    provenance = {
        "name": name,
        "source": module.SOURCE.record(),
        "files": files,
        "check": check,
        "converter": {**_versions(), **converter},
        "convert_seconds": round(time.perf_counter() - t0, 1),
    }
    (tmp / PROVENANCE_FILE).write_text(json.dumps(provenance, indent=2, sort_keys=True) + "\n")
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)
    print(f"{name}: converted into {target} ({provenance['convert_seconds']} s; check {json.dumps(check)})")


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m voxarena.convert", description=__doc__)
    p.add_argument("names", nargs="*", help=f"models to convert (default: all of {', '.join(CONVERTERS)})")
    p.add_argument(
        "--out", type=Path, required=True, help="models directory (build/models; /opt/voxarena/models in images)"
    )
    p.add_argument("--force", action="store_true", help="convert again even when up to date")
    p.add_argument(
        "--speech-url",
        help="fetch the check clips from this URL (a speech directory served over HTTP; "
        f"image builds) instead of reading them from ${SPEECH_ENV}",
    )
    args = p.parse_args(argv)
    unknown = sorted(set(args.names) - set(CONVERTERS))
    if unknown:
        raise SystemExit(f"unknown model(s) {', '.join(unknown)}; known: {', '.join(CONVERTERS)}")
    with tempfile.TemporaryDirectory(prefix="voxarena-speech-") as tmp:
        if args.speech_url:
            fetch_check_clips(args.speech_url, Path(tmp))
            os.environ[SPEECH_ENV] = tmp
        for name in args.names or list(CONVERTERS):
            convert_one(name, args.out, args.force)


if __name__ == "__main__":
    main()

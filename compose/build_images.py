"""Build the VoxArena images without a registry: ``make images`` (or ``python compose/build_images.py``).

Serves ``build/wheelhouse`` over HTTP on the loopback for the duration, builds the shared runtime
image FROM ``$BASE_IMAGE`` and then every service of the catalogue (``voxarena/catalogue.py``) that has
an image (optionally only the named ones; the "torch" profile's hf-audio-classifier only when named,
after ``make wheelhouse-torch``), each with ``docker build --network host`` so pip reaches the
wheelhouse. Cache keys: DEPS_DIGEST (both pyproject.toml files), SOURCE_DIGEST (the code of the
project's two wheels, voxarena and voxarena-sdk) and, for the two slow build steps, a digest of only the
code they run (``STEP_DIGESTS``): the converter's conversions (5 min) and kokoro's style bank (12 min)
are redone when their own code changes, not at every commit.

A service without a Dockerfile of its own is built from ``compose/service.Dockerfile`` with its
catalogue entry as build arguments (EXTRA, DEBIAN_PACKAGES) and its CMD appended to the Dockerfile
(Docker expands no build argument in CMD), sent on stdin.

Before the first service with a converted model, it builds the converter image
(``compose/converter.Dockerfile``: Debian torch, ``python -m convert`` for every model); the server
then also answers ``/speech/<path>`` for the conversions' check clips (``voxarena.convert.CHECK_CLIPS`` only),
from ``$VOXARENA_SPEECH`` (default ``../shared/data/speech``).
"""

from __future__ import annotations

import argparse
import ast
import functools
import hashlib
import http.server
import json
import os
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

from voxarena.catalogue import SERVICE_DOCKERFILE, SERVICES, Service
from voxarena.deploy.monitoring import PROMETHEUS_DOCKERFILE, PROMETHEUS_IMAGE

ROOT = Path(__file__).resolve().parents[1]
WHEELHOUSE = ROOT / "build" / "wheelhouse"
SPEECH = Path(os.environ.get("VOXARENA_SPEECH") or ROOT.parent / "shared" / "data" / "speech")
SPEECH_PREFIX = "/speech/"
CONVERTER_DOCKERFILE = "compose/converter.Dockerfile"


def _digest(*paths: Path) -> str:
    h = hashlib.sha256()
    for path in paths:
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def _code_digest(*wheels: Path) -> str:
    """The project wheels' code, not their bytes: a fresh clone builds a wheel with other file times (and
    the metadata carries the README), so the zip's own hash would rebuild every image's code layer for
    nothing. Hashes each file's name and content, the .dist-info metadata apart."""
    h = hashlib.sha256()
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as z:
            for name in sorted(z.namelist()):
                if ".dist-info/" not in name:
                    h.update(name.encode() + b"\0" + z.read(name) + b"\0")
    return h.hexdigest()[:16]


# The slow build steps, each keyed by the project code it imports (``source_closure``): a Dockerfile declares
# the argument just before the step, after a layer that installs the current code (compose/README.md).
STEP_DIGESTS = {
    "CONVERT_DIGEST": "voxarena.convert",  # compose/converter.Dockerfile: every conversion
    "KOKORO_BANK_DIGEST": "voxarena.services.generators.kokoro",  # kokoro's CLONE style bank
}
# The two roots of the voxarena namespace package (the project and voxarena-sdk).
SOURCE_ROOTS = (ROOT, ROOT / "sdk" / "src")


def _module_file(module: str) -> Path | None:
    for root in SOURCE_ROOTS:
        path = root.joinpath(*module.split("."))
        for candidate in (path.with_suffix(".py"), path / "__init__.py"):
            if candidate.is_file():
                return candidate
    return None


def _imported_modules(path: Path, module: str) -> set[str]:
    """Every module name an import in the file may load, imports inside functions included; for
    ``from pkg import name`` both ``pkg`` and ``pkg.name`` (a name may be a submodule)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")
                parent = parent[: len(parent) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def source_closure(module: str) -> list[Path]:
    """The project's files that ``module`` runs: its package directory whole (data files too), every
    project module it imports at any depth, and the ``__init__.py`` of every package on the way."""
    start = _module_file(module)
    if start is None:
        raise SystemExit(f"build step module {module} not found under {', '.join(map(str, SOURCE_ROOTS))}")
    files = {f for f in start.parent.rglob("*") if f.is_file() and "__pycache__" not in f.parts}
    package = module if start.name == "__init__.py" else module.rpartition(".")[0]
    todo = [module] + [f"{package}.{f.stem}" for f in start.parent.glob("*.py") if f.name != "__init__.py"]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        parts = name.split(".")
        for i in range(1, len(parts) + 1):
            prefix = ".".join(parts[:i])
            path = _module_file(prefix)
            if prefix in seen or path is None:
                continue
            seen.add(prefix)
            files.add(path)
            todo.extend(n for n in _imported_modules(path, prefix) if n.startswith("voxarena"))
    return sorted(files)


def step_digest(module: str) -> str:
    """sha256 of the closure's paths (relative to the checkout) and contents: stable across clones."""
    h = hashlib.sha256()
    for path in source_closure(module):
        h.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def project_wheels(wheelhouse: Path = WHEELHOUSE) -> tuple[Path, Path]:
    """The newest voxarena and voxarena-sdk wheels of the wheelhouse (``make wheelhouse`` builds both)."""
    found = []
    for pattern, name in (("voxarena-*.whl", "voxarena"), ("voxarena_sdk-*.whl", "voxarena-sdk")):
        wheels = sorted(wheelhouse.glob(pattern))
        if not wheels:
            raise SystemExit(f"no {name} wheel in {wheelhouse}: run `make wheelhouse` first")
        found.append(wheels[-1])
    return found[0], found[1]


@functools.lru_cache(maxsize=1)
def _check_clips() -> dict[str, Path]:
    """URL path -> file of every conversion check clip (the converter fetches them; nothing else is served)."""
    sys.path.insert(0, str(ROOT))
    from voxarena.convert import CHECK_CLIPS

    return {SPEECH_PREFIX + rel: SPEECH / rel for rel in CHECK_CLIPS}


def _serve_wheelhouse() -> tuple[http.server.ThreadingHTTPServer, str]:
    clips = _check_clips()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def translate_path(self, path: str) -> str:
            if path.startswith(SPEECH_PREFIX):
                # Only the listed clips; any other path under /speech/ is a 404 (a path that does not exist).
                return str(clips.get(path.split("?", 1)[0], SPEECH / "not-served"))
            return super().translate_path(path)

    handler = functools.partial(Quiet, directory=str(WHEELHOUSE))
    # A fixed port keeps WHEELHOUSE_URL, and so Docker's layer cache keys, the same from build to build.
    port = int(os.environ.get("VOXARENA_WHEELHOUSE_PORT", "8765"))
    try:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    except OSError as e:
        raise SystemExit(
            f"cannot serve the wheelhouse on 127.0.0.1:{port} ({e}); set VOXARENA_WHEELHOUSE_PORT"
        ) from None
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def _build(tag: str, dockerfile: str, args: dict[str, str], cmd: list[str] | None = None) -> float:
    """``docker build`` of ``dockerfile``; with ``cmd``, its text and the line ``CMD cmd`` go on stdin."""
    command = ["docker", "build", "--network", "host", "-f", "-" if cmd else dockerfile, "-t", tag]
    for k, v in args.items():
        command += ["--build-arg", f"{k}={v}"]
    text = f"{(ROOT / dockerfile).read_text()}CMD {json.dumps(cmd)}\n" if cmd else None
    t0 = time.perf_counter()
    print(f"building {tag} ({dockerfile}{' + CMD' if cmd else ''})", flush=True)
    out = subprocess.run(command + [str(ROOT)], cwd=ROOT, input=text, capture_output=True, text=True)
    if out.returncode != 0:
        sys.stderr.write(out.stdout[-4000:] + out.stderr[-4000:])
        raise SystemExit(f"docker build of {tag} failed (exit {out.returncode})")
    return time.perf_counter() - t0


def service_build(svc: Service) -> tuple[dict[str, str], list[str] | None]:
    """A service's own build arguments and the CMD to append: none for an own Dockerfile (it says all)."""
    if svc.dockerfile != SERVICE_DOCKERFILE:
        return {}, None
    return {"EXTRA": svc.extra or "", "DEBIAN_PACKAGES": " ".join(svc.debian_packages)}, svc.command


# Images that serve nothing: tools a user runs (name -> image, Dockerfile); built with every service.
TOOL_IMAGES = {
    "conformance": ("voxarena/conformance:latest", "compose/conformance.Dockerfile"),
    "prometheus": (PROMETHEUS_IMAGE, PROMETHEUS_DOCKERFILE),  # the compose profile "monitoring"
}


def _build_converter(tag: str, args: dict[str, str], url: str) -> None:
    missing = [str(p) for p in _check_clips().values() if not p.exists()]
    if missing:
        raise SystemExit(
            f"the converter checks its conversions on real speech: {', '.join(missing)} missing "
            f"(set VOXARENA_SPEECH to the shared speech directory)"
        )
    seconds = _build(tag, CONVERTER_DOCKERFILE, {**args, "SPEECH_URL": url + SPEECH_PREFIX.lstrip("/")})
    print(f"  {tag}: {seconds:.0f} s", flush=True)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument(
        "services",
        nargs="*",
        help="only these services (default: all with an image, except those of the 'torch' profile)",
    )
    p.add_argument("--base-image", default=os.environ.get("BASE_IMAGE", "voxarena/base:bookworm"))
    p.add_argument("--runtime-image", default=os.environ.get("VOXARENA_RUNTIME_IMAGE", "voxarena/runtime:latest"))
    p.add_argument("--converter-image", default=os.environ.get("VOXARENA_CONVERTER_IMAGE", "voxarena/converter:latest"))
    p.add_argument(
        "--tag",
        help="tag each service image NAME:TAG instead of the catalogue's (e.g. to compare "
        "with the images already built)",
    )
    args = p.parse_args(argv)
    wheels = project_wheels()
    buildable = {svc.name: svc for svc in SERVICES}
    unknown = sorted(set(args.services) - set(buildable) - set(TOOL_IMAGES))
    if unknown:
        known = ", ".join([*buildable, *TOOL_IMAGES])
        raise SystemExit(f"unknown service(s) {', '.join(unknown)}; buildable: {known}")
    server, url = _serve_wheelhouse()
    try:
        common = {
            "WHEELHOUSE_URL": url,
            "DEPS_DIGEST": _digest(ROOT / "pyproject.toml", ROOT / "sdk" / "pyproject.toml"),
            "SOURCE_DIGEST": _code_digest(*wheels),
            **{arg: step_digest(module) for arg, module in STEP_DIGESTS.items()},
        }
        seconds = _build(
            args.runtime_image, "compose/runtime.Dockerfile", {"BASE_IMAGE": args.base_image, "WHEELHOUSE_URL": url}
        )
        print(f"  {args.runtime_image}: {seconds:.0f} s", flush=True)
        default = [name for name, svc in buildable.items() if svc.compose_profile != "torch"]
        converter_built = False
        for name in [n for n in args.services or default if n in buildable]:
            svc = buildable[name]
            build_args = {**common, "RUNTIME_IMAGE": args.runtime_image}
            if svc.converted_model:
                if not converter_built:
                    _build_converter(args.converter_image, {**common, "BASE_IMAGE": args.base_image}, url)
                    converter_built = True
                build_args["CONVERTER_IMAGE"] = args.converter_image
            tag = f"{svc.image.rsplit(':', 1)[0]}:{args.tag}" if args.tag else svc.image
            own_args, cmd = service_build(svc)
            seconds = _build(tag, svc.dockerfile, {**build_args, **own_args}, cmd)
            print(f"  {tag}: {seconds:.0f} s", flush=True)
        for name, (tag, dockerfile) in TOOL_IMAGES.items():
            if not args.services or name in args.services:
                seconds = _build(tag, dockerfile, {**common, "RUNTIME_IMAGE": args.runtime_image})
                print(f"  {tag}: {seconds:.0f} s", flush=True)
    finally:
        server.shutdown()


if __name__ == "__main__":
    main()

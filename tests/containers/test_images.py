"""The built images: no serving image holds torch (only the converter build stage does), each stays
under 1.5 GB, and an image with a converted model carries it with its provenance and serves it.

Needs the images (``make images``); marked ``container``. Conformance of every image in the running
stack is in test_compose_stack.py."""

from __future__ import annotations

import importlib
import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from voxarena import catalogue

pytestmark = [pytest.mark.container, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
MAX_IMAGE_BYTES = 1.5e9
SERVICES = {svc.name: svc for svc in catalogue.SERVICES}
# Every image that serves a model; the torch profile's hf-audio-classifier holds torch by design.
SERVING = sorted(
    svc.name for svc in catalogue.SERVICES if svc.role != "orchestrator" and svc.compose_profile != "torch"
)
CONVERTED = sorted(name for name in SERVING if SERVICES[name].converted_model)


def docker(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    if shutil.which("docker") is None:
        pytest.fail("docker is not installed: container tests need Docker and the images (make images)")
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)


def image_of(name: str) -> str:
    image = SERVICES[name].image
    if docker("image", "inspect", image).returncode != 0:
        pytest.fail(f"{image} is not built (make images)")
    return image


@pytest.mark.parametrize("name", SERVING)
def test_serving_image_holds_no_torch(name):
    out = docker(
        "run",
        "--rm",
        "--entrypoint",
        "python",
        image_of(name),
        "-c",
        "import importlib.util, sys; sys.exit(importlib.util.find_spec('torch') is not None)",
    )
    assert out.returncode == 0, f"{name}: torch is importable in {SERVICES[name].image}"


@pytest.mark.parametrize("name", SERVING)
def test_image_leaves_tmp_to_the_service_user(name):
    """Under a plain `docker run` /tmp is the image's own: a root-owned NUMBA_CACHE_DIR left there by the
    build made librosa's import fail for the service user (kokoro's CLONE answered INTERNAL)."""
    out = docker(
        "run",
        "--rm",
        "--entrypoint",
        "sh",
        image_of(name),
        "-c",
        'mkdir -p "$NUMBA_CACHE_DIR" && test -w "$NUMBA_CACHE_DIR" && touch "$NUMBA_CACHE_DIR/.probe"',
    )
    assert out.returncode == 0, f"{name}: the service user cannot write NUMBA_CACHE_DIR in /tmp: {out.stderr}"


@pytest.mark.parametrize("name", SERVING)
def test_image_is_under_1_5_gb(name):
    size = int(docker("image", "inspect", "-f", "{{.Size}}", image_of(name)).stdout.strip())
    assert size < MAX_IMAGE_BYTES, f"{name}: {size / 1e9:.2f} GB"


def converted_models(service: str) -> list[str]:
    """The converted models a service's Dockerfile copies from the converter image."""
    text = (REPO / SERVICES[service].dockerfile).read_text()
    return re.findall(r"COPY --from=converted /opt/voxarena/models/([\w.-]+)", text)


@pytest.mark.parametrize("name", CONVERTED)
def test_converted_models_in_the_image_are_the_committed_sources(name):
    from voxarena.convert import CONVERTERS

    models = converted_models(name)
    assert models, f"{name}: its Dockerfile takes CONVERTER_IMAGE but copies no model"
    script = (
        "import json, sys; from voxarena.converted import load_converted; "
        "print(json.dumps({m: load_converted(m).provenance for m in sys.argv[1:]}))"
    )
    out = docker("run", "--rm", "--entrypoint", "python", image_of(name), "-c", script, *models)
    assert out.returncode == 0, out.stderr[-2000:]  # load_converted checks every file against provenance
    for model, provenance in json.loads(out.stdout).items():
        committed = importlib.import_module(CONVERTERS[model]).SOURCE.sha256
        assert provenance["source"]["sha256"] == committed, model
        assert provenance["check"], f"{model}: no conversion check recorded"


def test_the_conformance_image_checks_a_service_on_the_host(tmp_path):
    """``docker run --network host voxarena/conformance HOST:PORT``: the checker without Python on the host,
    its report written to a mounted folder, its exit code the checker's."""
    from voxarena.sdk.testing import serve_in_process
    from voxarena.services.testing.dummy_detector import DummyDetector
    from voxarena.services.testing.faulty_generator import FaultyGenerator

    image = "voxarena/conformance:latest"
    if docker("image", "inspect", image).returncode != 0:
        pytest.fail(f"{image} is not built (make images)")
    tmp_path.chmod(0o777)  # the image runs as uid 10001
    for model, expected in ((DummyDetector(), 0), (FaultyGenerator("silent"), 1)):
        with serve_in_process(model, address="127.0.0.1:0") as served:
            out = docker(
                "run", "--rm", "--network", "host", "-v", f"{tmp_path}:/out", image,
                served.address, "--json", "/out/report.json", "--timeout", "60",
            )  # fmt: skip
        assert out.returncode == expected, out.stdout[-3000:] + out.stderr[-2000:]
        report = json.loads((tmp_path / "report.json").read_text())
        assert (report["summary"]["FAIL"] > 0) == bool(expected) and report["summary"]["PASS"] > 20

"""The vendor's path, as examples/vendor-*/README.md tells it, from folders outside this repository:
each example copied with the voxarena-sdk wheel (and, since image builds here have no package index,
the SDK's dependencies downloaded into ``wheels/``), its image built FROM the base image with
``PIP_NO_INDEX=1``, the container run hardened (read-only, tmpfs /tmp, no capabilities) until its
healthcheck says healthy, ``voxarena-conformance`` against the published port with no check failing,
then one small arena with both examples, by ``address:`` (the running containers) and by ``image:``.
The in-repository templates (voxarena/services/template: a copied module and its Dockerfile) go the
same way up to conformance.

Needs Docker, the base image (``make base-image``), a package index on the host for ``pip download``
and the base image's Debian mirror (the generator template installs espeak-ng); marked ``container``.
Images are tagged ``voxarena-example/NAME:test``."""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

pytestmark = [pytest.mark.container, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
BASE_IMAGE = "voxarena/base:bookworm"
TEMPLATE = REPO / "voxarena" / "services" / "template"
# name -> what a vendor's folder holds: {file or folder in it: where it comes from in this repository}
BUILDS = {
    "vendor-generator": {".": REPO / "examples" / "vendor-generator"},
    "vendor-detector": {".": REPO / "examples" / "vendor-detector"},
    "template-generator": {"generator.py": TEMPLATE / "generator.py", "Dockerfile": TEMPLATE / "Dockerfile.generator"},
    "template-detector": {"detector.py": TEMPLATE / "detector.py", "Dockerfile": TEMPLATE / "Dockerfile.detector"},
}
# Checks that do not apply to a model: a TTS-only generator takes no audio to reject.
# A TTS-only generator takes no audio; the example detectors declare no segment scores (segment_hop_seconds 0)
# and no source tracing (no attribution).
NOT_APPLICABLE = {
    name: {"bad audio rejected", "source under min_source_seconds rejected"}
    if name.endswith("generator")
    else {"segment scores", "attribution"}
    for name in BUILDS
}


def docker(*args: str, timeout: float = 600, cwd: Path | None = None) -> subprocess.CompletedProcess:
    if shutil.which("docker") is None:
        pytest.fail("docker is not installed: container tests need Docker")
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, cwd=cwd)


@pytest.fixture(scope="module")
def vendor_wheels(sdk_wheel, tmp_path_factory) -> Path:
    """The SDK wheel and its dependencies for the base image's Python (README step 2, without an index)."""
    if docker("image", "inspect", BASE_IMAGE).returncode != 0:
        pytest.fail(f"{BASE_IMAGE} is not built (make base-image)")
    version = docker("run", "--rm", BASE_IMAGE, "python3", "-c", "import sys; print('%d.%d' % sys.version_info[:2])")
    wheels = tmp_path_factory.mktemp("wheels")
    shutil.copy(sdk_wheel, wheels)
    arch = platform.machine()
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "-d", str(wheels), "--only-binary=:all:"]
        + ["--python-version", version.stdout.strip()]
        + ["--platform", f"manylinux_2_28_{arch}", "--platform", f"manylinux_2_17_{arch}"]
        + [str(wheels / sdk_wheel.name)],
        check=True,
        capture_output=True,
        timeout=900,
    )
    return wheels


def vendor_folder(name: str, parent: Path, wheels: Path) -> Path:
    folder = parent / name
    for target, source in BUILDS[name].items():
        if source.is_dir():
            shutil.copytree(source, folder / target, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
        else:
            folder.mkdir(exist_ok=True)
            shutil.copy(source, folder / target)
    shutil.copytree(wheels, folder / "wheels")
    return folder


@pytest.fixture(scope="module")
def running(vendor_wheels, tmp_path_factory):
    """name -> (address, container id), each image built from a vendor's folder outside the repository."""
    outside = tmp_path_factory.mktemp("vendor")
    assert not outside.resolve().is_relative_to(REPO)
    builds = (
        (name, f"voxarena-example/{name}:test", vendor_folder(name, outside, vendor_wheels), ["PIP_NO_INDEX=1"])
        for name in BUILDS
    )
    with built_and_running(builds) as started:
        yield started


@contextmanager
def built_and_running(builds: Iterable[tuple[str, str, Path, list[str]]]) -> Iterator[dict[str, tuple[str, str]]]:
    """key -> (address, container id): each (key, tag, folder, build args) built as ``tag`` and run hardened
    until healthy; every container stopped (and so removed) at the end."""
    started: dict[str, tuple[str, str]] = {}
    try:
        for key, tag, folder, build_args in builds:
            args = [a for arg in build_args for a in ("--build-arg", arg)]
            built = docker("build", *args, "-t", tag, ".", cwd=folder, timeout=2400)
            assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
            started[key] = run_hardened(tag)
        for _, container in started.values():
            wait_healthy(container)
        yield started
    finally:
        for _, container in started.values():
            docker("stop", "-t", "5", container)


def run_hardened(tag: str) -> tuple[str, str]:
    """``tag`` run detached as a vendor's image runs in the arena (read-only, tmpfs /tmp, no capabilities),
    its port 50051 published on the loopback: (address, container id)."""
    run = docker(
        "run", "-d", "--rm", "-p", "127.0.0.1::50051", "--read-only", "--tmpfs", "/tmp",
        "--cap-drop", "ALL", "--security-opt", "no-new-privileges", tag,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    container = run.stdout.strip()
    port = docker("port", container, "50051/tcp").stdout.splitlines()[0].rsplit(":", 1)[1]
    return f"127.0.0.1:{port}", container


def wait_healthy(container: str, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        status = docker("inspect", "-f", "{{.State.Health.Status}}", container).stdout.strip()
        if status == "healthy":
            return
        time.sleep(1)
    logs = docker("logs", container)
    pytest.fail(
        f"{container} not healthy after {seconds:.0f} s ({status}):\n{logs.stdout[-2000:]}{logs.stderr[-2000:]}"
    )


@pytest.mark.parametrize("name", list(BUILDS))
def test_the_image_runs_hardened_and_passes_conformance(running, name, tmp_path):
    address, container = running[name]
    assert docker("exec", container, "id", "-u").stdout.strip() == "10001"
    report = tmp_path / "conformance.json"
    script = Path(sys.executable).with_name("voxarena-conformance")
    checked = subprocess.run(
        [str(script), address, "--json", str(report), "--timeout", "60"], capture_output=True, text=True, timeout=900
    )
    data = json.loads(report.read_text())
    failed = [c for c in data["checks"] if c["status"] == "FAIL"]
    assert checked.returncode == 0 and not failed, checked.stdout[-4000:]
    assert {c["name"] for c in data["checks"] if c["status"] == "SKIP"} == NOT_APPLICABLE[name]


@pytest.mark.parametrize("by", ["address", "image"])
def test_both_examples_play_an_arena(running, by, tmp_path, speech_dir, make_config, run_arena, read_csv):
    """By ``address:`` the running containers; by ``image:`` the orchestrator launches its own from the images."""
    entry = {
        name: {"address": running[name][0]} if by == "address" else {"image": f"voxarena-example/{name}:test"}
        for name in ("vendor-generator", "vendor-detector")
    }
    config = make_config(
        tmp_path,
        speech_dir,
        **{
            "dataset.max_items": 3,
            "protocol.tasks": ["TTS"],
            "generators": {"acme-formant": entry["vendor-generator"]},
            "detectors": {"acme-flatness": entry["vendor-detector"]},
        },
    )
    record = run_arena(config, tmp_path / "run")
    if by == "image":
        launched = json.loads((tmp_path / "run" / "run.json").read_text())["services"]
        assert {launched[n]["mode"] for n in ("acme-formant", "acme-flatness")} == {"image"}, record
    assert_vendor_arena(tmp_path / "run", "acme-formant", "acme-flatness", read_csv)


def assert_vendor_arena(run: Path, generator: str, detector: str, read_csv) -> None:
    """A 3-item TTS arena of one vendor generator and one uncalibrated vendor detector: every clip made,
    every clip scored (not as LLRs), and the pair's row in the detection metrics."""
    generations = [json.loads(line) for line in (run / "generations.jsonl").read_text().splitlines()]
    assert len(generations) == 3 and {g["status"] for g in generations} == {"ok"}, generations
    detections = [json.loads(line) for line in (run / "detections.jsonl").read_text().splitlines()]
    assert {d["generator"] for d in detections} == {"bonafide", generator}
    assert {d["status"] for d in detections} == {"ok"} and not any(d["is_llr"] for d in detections)
    rows = read_csv(run / "metrics" / "detection_metrics.csv")
    assert (detector, generator) in {(r["detector"], r["generator"]) for r in rows}

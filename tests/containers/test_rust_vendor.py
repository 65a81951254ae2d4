"""The vendor's path in another language (examples/rust-vendor/README.md): Acme's Rust services, written
from the .proto alone with tonic and prost, built as images with no network in the build (the .proto
files and `cargo vendor`'s crates copied into the context, as the README says), run hardened until
healthy, checked by ``voxarena-conformance`` (every MUST passes; the SHOULD rules a stock tonic server
cannot meet are WARNs, listed), then played in an arena by ``image:``.

Needs Docker, the base image (``make base-image``), cargo and crates.io on the host (for ``cargo vendor``)
and the base image's Debian mirror (rustc-web, protobuf-compiler); marked ``container``.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_vendor_examples import (
    assert_vendor_arena,
    built_and_running,
    docker,
)  # this folder is on sys.path (pytest prepend mode)

pytestmark = [pytest.mark.container, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "rust-vendor"
IMAGES = {"generator": "voxarena-example/rust-formant:test", "detector": "voxarena-example/rust-flatness:test"}
# What tonic 0.12 does not let a service control, and the example does not add (README.md).
EXPECTED_WARNINGS = {"request.undecodable", "message.limit-code", "service.reflection"}


@pytest.fixture(scope="module")
def context(tmp_path_factory) -> Path:
    """The build context a vendor would have: the crate, the .proto files and the vendored crates."""
    if shutil.which("cargo") is None:
        pytest.fail("cargo is not installed: the Rust example's crates are vendored with it")
    folder = tmp_path_factory.mktemp("acme-rs")
    for name in ("Cargo.toml", "Cargo.lock", "build.rs", "Dockerfile"):
        shutil.copy(EXAMPLE / name, folder / name)
    shutil.copytree(EXAMPLE / "src", folder / "src")
    shutil.copytree(REPO / "proto" / "voxarena", folder / "proto" / "voxarena", ignore=shutil.ignore_patterns("*.py"))
    vendored = subprocess.run(
        ["cargo", "vendor", "--locked", "vendor"], cwd=folder, capture_output=True, text=True, timeout=900
    )
    assert vendored.returncode == 0, vendored.stderr[-3000:]
    return folder


@pytest.fixture(scope="module")
def running(context):
    """role -> (address, container id): both images built from the context, run hardened."""
    with built_and_running((role, tag, context, [f"SERVICE={role}"]) for role, tag in IMAGES.items()) as started:
        yield started


@pytest.mark.parametrize("role", list(IMAGES))
def test_the_rust_image_passes_every_must(running, role, tmp_path):
    address, container = running[role]
    assert docker("exec", container, "acme-service", "--healthcheck").returncode == 0
    report = tmp_path / "conformance.json"
    script = Path(sys.executable).with_name("voxarena-conformance")
    checked = subprocess.run(
        [str(script), address, "--json", str(report), "--timeout", "60"], capture_output=True, text=True, timeout=900
    )
    data = json.loads(report.read_text())
    assert checked.returncode == 0 and data["summary"]["FAIL"] == 0, checked.stdout[-4000:]
    assert {c["rule"] for c in data["checks"] if c["status"] == "WARN"} == EXPECTED_WARNINGS, checked.stdout[-4000:]
    assert data["summary"]["PASS"] > 30
    strict = subprocess.run([str(script), address, "--strict"], capture_output=True, text=True, timeout=900)
    assert strict.returncode == 1  # the WARNs fail under --strict


def test_the_rust_services_play_an_arena_by_image(running, tmp_path, speech_dir, make_config, run_arena, read_csv):
    config = make_config(
        tmp_path,
        speech_dir,
        **{
            "dataset.max_items": 3,
            "protocol.tasks": ["TTS"],
            "generators": {"acme-formant-rs": {"image": IMAGES["generator"]}},
            "detectors": {"acme-flatness-rs": {"image": IMAGES["detector"]}},
        },
    )
    record = run_arena(config, tmp_path / "run")
    launched = json.loads((tmp_path / "run" / "run.json").read_text())["services"]
    assert {launched[n]["mode"] for n in ("acme-formant-rs", "acme-flatness-rs")} == {"image"}, record
    assert_vendor_arena(tmp_path / "run", "acme-formant-rs", "acme-flatness-rs", read_csv)

"""The service catalogue against every place that names a service and is not written from it: the
Dockerfiles, the image build, the pyproject extras and install profiles, the Makefile, local mode, the
detectors' training registry and the model classes. (docker-compose.yml, the mTLS overlay, the Swarm stack,
deploy/k8s and the README's services table are ``make generate``'s output: tests/deploy/test_generate.py.)
Fast: files are parsed, nothing is built or started."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from voxarena.catalogue import SERVICE_DOCKERFILE, SERVICES, TEST_DOUBLES, image_extras, local_modules, trainable

REPO = Path(__file__).resolve().parents[2]
BY_NAME = {s.name: s for s in SERVICES}
OWN = [s.name for s in SERVICES if s.own_dockerfile]
SHARED = [s.name for s in SERVICES if not s.own_dockerfile]


def instructions(dockerfile: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of a Dockerfile, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", dockerfile.read_text())
    lines = [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "") for line in lines]


def dockerfile_facts(dockerfile: Path) -> dict:
    """What a Dockerfile says about its service: extra, Debian packages, converted models, CMD, ENTRYPOINT."""
    facts: dict = {"extra": [], "debian_packages": [], "converted": [], "cmd": None, "entrypoint": None}
    for op, rest in instructions(dockerfile):
        if op == "RUN":
            for install in re.findall(r"apt-get install -y --no-install-recommends ([^&]+)", rest):
                facts["debian_packages"] += install.split()
            for pip in re.split(r"&&", rest):
                m = re.search(r'pip install --find-links \S+ "?voxarena(?:\[([\w,-]+)\])?"?\s*$', pip.strip())
                if m and "--no-deps" not in pip:
                    facts["extra"].append(m.group(1))
        elif op == "COPY":
            facts["converted"] += re.findall(r"--from=converted /opt/voxarena/models/([\w.-]+)", rest)
        elif op in ("CMD", "ENTRYPOINT"):
            facts[op.lower()] = json.loads(rest)
    return facts


def build_images_module():
    spec = importlib.util.spec_from_file_location("build_images", REPO / "compose" / "build_images.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------------------------------- Dockerfiles
@pytest.mark.parametrize("name", OWN)
def test_an_own_dockerfile_installs_and_serves_what_the_catalogue_says(name):
    svc = BY_NAME[name]
    facts = dockerfile_facts(REPO / svc.dockerfile)
    assert facts["extra"] == [svc.extra], f"{svc.dockerfile}: pip extra"
    assert facts["debian_packages"] == list(svc.debian_packages), f"{svc.dockerfile}: Debian packages"
    assert facts["converted"] == ([svc.converted_model] if svc.converted_model else []), svc.dockerfile
    if svc.role == "orchestrator":
        assert facts["entrypoint"] == ["orchestrator"], svc.dockerfile
    else:
        assert facts["cmd"] == svc.command, f"{svc.dockerfile}: CMD"


def test_every_service_dockerfile_in_the_tree_is_a_catalogued_own_one():
    """A near-copy left beside a service that the shared Dockerfile builds, or a Dockerfile no build reads."""
    found = {str(p.relative_to(REPO)) for p in (REPO / "voxarena").rglob("Dockerfile")}
    assert found == {BY_NAME[name].dockerfile for name in OWN}


def test_the_shared_dockerfile_takes_what_the_build_passes_and_leaves_the_cmd_to_it():
    build_images = build_images_module()
    ops = instructions(REPO / SERVICE_DOCKERFILE)
    declared = {rest.split("=", 1)[0] for op, rest in ops if op == "ARG"}
    assert not [op for op, _ in ops if op in ("CMD", "ENTRYPOINT")]
    for name in SHARED:
        own_args, cmd = build_images.service_build(BY_NAME[name])
        assert set(own_args) <= declared, name
        assert own_args["EXTRA"] == BY_NAME[name].extra
        assert own_args["DEBIAN_PACKAGES"].split() == list(BY_NAME[name].debian_packages)
        assert cmd == ["python", "-m", BY_NAME[name].module, "--port", "50051"]
    # The common arguments every service build gets (compose/build_images.py main()).
    assert {"RUNTIME_IMAGE", "WHEELHOUSE_URL", "DEPS_DIGEST", "SOURCE_DIGEST"} <= declared


def test_the_shared_dockerfile_cannot_copy_a_converted_model():
    """A converted model needs the converter stage and VOXARENA_MODELS: only an own Dockerfile does that."""
    assert [name for name in SHARED if BY_NAME[name].converted_model] == []


def test_converted_models_are_registered_converters():
    from voxarena.convert import CONVERTERS

    for svc in SERVICES:
        assert svc.converted_model is None or svc.converted_model in CONVERTERS, svc.name


# --------------------------------------------------------------------------- pyproject, Makefile, local mode
def optional_dependencies() -> dict[str, list[str]]:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def profile_extras(profile: str) -> set[str]:
    """The extras an install profile (pyproject ``demo = ["voxarena[a,b]"]``) names directly."""
    (entry,) = [d for d in optional_dependencies()[profile] if d.startswith("voxarena[")]
    return set(entry[len("voxarena[") : -1].split(","))


def test_every_catalogued_extra_is_a_pyproject_extra():
    extras = optional_dependencies()
    assert [s.name for s in SERVICES if s.extra and s.extra not in extras] == []


def test_the_demo_profile_installs_exactly_the_demo_services_extras():
    assert profile_extras("demo") == {s.extra for s in SERVICES if s.profile == "demo" and s.extra}


def test_the_test_profile_adds_the_test_services_extras():
    test = profile_extras("test")
    assert "demo" in test
    assert {s.extra for s in SERVICES if s.profile == "test" and s.extra} <= test


def test_make_setup_installs_the_debian_packages_local_mode_needs():
    makefile = (REPO / "Makefile").read_text()
    setup = set(re.search(r"^DEBIAN_PACKAGES := (.*)$", makefile, re.M).group(1).split())
    mbrola_recipe = r"^setup-mbrola:\n(?:\t.*\n)*?\t.*apt-get install -y -qq (.*)$"
    mbrola = set(re.search(mbrola_recipe, makefile, re.M).group(1).split())
    for svc in SERVICES:
        allowed = setup | mbrola if svc.profile == "optional" else setup
        assert set(svc.debian_packages) <= allowed, svc.name


def test_make_wheelhouse_builds_the_images_extras():
    out = subprocess.run(
        ["make", "-n", "--no-print-directory", "wheelhouse", f"VENV={sys.prefix}"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # voxarena-sdk from this checkout in the same command, never from an index
    (extras,) = re.findall(r'pip wheel -q -w build/wheelhouse \./sdk "\.\[([^\]]+)\]"', out)
    assert extras.split(",") == image_extras()
    assert set(image_extras()) == {s.extra for s in SERVICES if s.extra and s.compose_profile != "torch"}


def test_local_mode_starts_every_service_and_test_double_by_its_module():
    from voxarena.orchestrator.fleet.local_services import KNOWN_SERVICES

    assert KNOWN_SERVICES == local_modules()
    assert set(KNOWN_SERVICES) == {s.name for s in SERVICES if s.role != "orchestrator"} | set(TEST_DOUBLES)
    for name, module in KNOWN_SERVICES.items():
        package = importlib.util.find_spec(module).submodule_search_locations is not None
        runnable = f"{module}.__main__" if package else module
        assert importlib.util.find_spec(runnable) is not None, f"{name}: no {runnable}"


# ------------------------------------------------------------------------- trainable detectors, model classes
def test_the_training_registry_trains_exactly_the_trainable_rows_with_their_own_trainer_and_class():
    from voxarena.services.detectors.training.__main__ import TRAINERS

    assert list(TRAINERS) == trainable() == [s.name for s in SERVICES if s.trainable]
    for name, (trainer, model) in TRAINERS.items():
        svc = BY_NAME[name]
        assert svc.role == "detector", name
        assert trainer == f"{svc.module}.train" and importlib.util.find_spec(trainer) is not None, name
        assert model.startswith(f"{svc.module}.model:"), name


def test_make_train_detectors_trains_the_trainable_rows():
    out = subprocess.run(
        ["make", "-s", "--no-print-directory", "--eval", "print-detectors: ; @echo $(DETECTORS)", "print-detectors"],
        cwd=REPO,
        env={**os.environ, "VENV": sys.prefix},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert out.split() == trainable()
    cli = subprocess.run([sys.executable, "-m", "voxarena.catalogue", "trainable"], capture_output=True, text=True)
    assert cli.returncode == 0 and cli.stdout.split() == trainable()


def test_every_served_row_has_one_model_class_that_answers_getinfo_with_its_name():
    from voxarena.services.model_class import model_class

    for svc in SERVICES:
        if svc.role in ("generator", "detector", "transform"):
            assert model_class(svc.module).name == svc.name, svc.name


def test_an_opt_in_nonfree_service_says_so_in_its_licence():
    """GetInfo's licence is what the README's table shows: a user must read "non-free" before opting in."""
    from voxarena.services.model_class import model_class

    for svc in SERVICES:
        if svc.role in ("generator", "detector", "transform"):
            nonfree = "non-free" in model_class(svc.module).licence.lower()
            assert nonfree == (svc.compose_profile == "nonfree"), svc.name


# ------------------------------------------------------------------------- slow build steps' cache keys
STEP_DOCKERFILES = {
    "CONVERT_DIGEST": (REPO / "compose" / "converter.Dockerfile", "python -m voxarena.convert "),
    "KOKORO_BANK_DIGEST": (REPO / "voxarena/services/generators/kokoro/Dockerfile", "--build-bank"),
}


def test_every_slow_step_is_keyed_by_its_digest_and_installs_the_code_it_was_keyed_on():
    build_images = build_images_module()
    assert set(build_images.STEP_DIGESTS) == set(STEP_DOCKERFILES)
    for arg, (dockerfile, step) in STEP_DOCKERFILES.items():
        ops = instructions(dockerfile)
        declared = [i for i, (op, rest) in enumerate(ops) if op == "ARG" and rest.split("=")[0] == arg]
        assert declared, f"{dockerfile.name} does not declare ARG {arg}"
        run = next(rest for op, rest in ops[declared[0] :] if op == "RUN")
        # the step's layer installs the code of this build, so the digest and the code it ran agree
        assert "--no-deps --force-reinstall voxarena voxarena-sdk" in run, dockerfile.name
        assert step in run, dockerfile.name
        # and no earlier step runs it (it would be keyed by the dependencies alone)
        assert not any(step in rest for op, rest in ops[: declared[0]] if op == "RUN"), dockerfile.name


def test_a_step_closure_follows_imports_at_any_depth_and_inside_functions():
    build_images = build_images_module()
    convert = {str(p.relative_to(REPO)) for p in build_images.source_closure("voxarena.convert")}
    # imported inside functions: the conversions are checked against the serving code
    assert {"voxarena/scorers/mos_distill.py", "voxarena/services/generators/hifigan/mel.py"} <= convert
    assert {"voxarena/converted.py", "voxarena/hashing.py", "voxarena/convert/requirements.txt"} <= convert
    # a served model's source weights are on the serving side: its source.py, nothing else of the detectors
    serving = {"voxarena/services/detectors/aasist_asv19/source.py"}
    assert serving <= convert
    detectors = [p for p in convert if p.startswith("voxarena/services/detectors/") and not p.endswith("__init__.py")]
    assert set(detectors) == serving
    assert not [p for p in convert if p.startswith("voxarena/orchestrator/")]
    kokoro = {str(p.relative_to(REPO)) for p in build_images.source_closure("voxarena.services.generators.kokoro")}
    # through the SDK (another source root) and a relative import of the package's own modules
    assert {"sdk/src/voxarena/sdk/vocoding.py", "voxarena/services/generators/kokoro/style_space.py"} <= kokoro


def test_a_step_digest_changes_with_its_code_and_only_with_it(tmp_path, monkeypatch):
    build_images = build_images_module()
    pkg = tmp_path / "voxarena" / "step"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "run.py").write_text("def main():\n    from ..deep import value\n    return value\n")
    (tmp_path / "voxarena" / "deep.py").write_text("from voxarena.deeper import x\nvalue = x\n")
    (tmp_path / "voxarena" / "deeper.py").write_text("x = 1\n")
    (tmp_path / "voxarena" / "elsewhere.py").write_text("y = 1\n")
    monkeypatch.setattr(build_images, "ROOT", tmp_path)
    monkeypatch.setattr(build_images, "SOURCE_ROOTS", (tmp_path,))
    first = build_images.step_digest("voxarena.step")
    (tmp_path / "voxarena" / "elsewhere.py").write_text("y = 2\n")
    assert build_images.step_digest("voxarena.step") == first
    (tmp_path / "voxarena" / "deeper.py").write_text("x = 2\n")
    assert build_images.step_digest("voxarena.step") != first
    with pytest.raises(SystemExit, match="voxarena.nowhere"):
        build_images.step_digest("voxarena.nowhere")

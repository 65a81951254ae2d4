"""Launch by image without Docker: the config's rules for an ``image:`` entry, the container spec every
launched image gets (its hardening flags), what is transport and what is protocol, the image id in the
resume check and in compare-check, and the launcher's errors (against a stand-in Docker client).
The real containers: tests/containers/test_launch_by_image.py."""

from __future__ import annotations

import json
from pathlib import Path

import docker.errors
import pytest
import yaml

from voxarena.orchestrator.fleet import containers
from voxarena.orchestrator.fleet.containers import (
    ContainerError,
    ImageIdentity,
    ImageService,
    Launcher,
    container_spec,
)
from voxarena.orchestrator.fleet.fleet import RunError, Service, ServiceFleet
from voxarena.orchestrator.metrics.compare import protocol_differences
from voxarena.orchestrator.run.config import ConfigError, ContainerConfig, load_config, protocol_view
from voxarena.v1 import common_pb2, generator_pb2

BASE = {"name": "t", "dataset": {"root": "data", "subsets": ["test-clean"]}}
IMAGE_ID = "sha256:" + "ab" * 32


def write(tmp_path: Path, generators: dict, **top) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({**BASE, "generators": generators, **top}))
    return path


# ------------------------------------------------------------------------------------ config
def test_an_image_entry_with_every_setting_resolves_its_model_dir(tmp_path):
    (tmp_path / "models" / "acme").mkdir(parents=True)
    container = {
        "env": {"ACME_THREADS": 1},
        "model_dir": "models/acme",
        "cpus": 2,
        "memory": "4g",
        "pids": 256,
        "port": 9000,
        "user": "20000:20000",
    }
    cfg = load_config(write(tmp_path, {"acme-clone": {"image": "acme/clone:1.0", "container": container}}))
    c = cfg.generators["acme-clone"].container_settings()
    assert cfg.generators["acme-clone"].image == "acme/clone:1.0"
    assert c.model_dir == str(tmp_path / "models" / "acme")
    assert (c.env, c.cpus, c.memory, c.pids, c.port, c.user, c.pull) == (
        {"ACME_THREADS": "1"},
        2.0,
        "4g",
        256,
        9000,
        "20000:20000",
        False,
    )


def test_an_image_entry_alone_gets_the_compose_services_limits(tmp_path):
    cfg = load_config(write(tmp_path, {"acme": {"image": "acme/clone:1.0"}}))
    c = cfg.generators["acme"].container_settings()
    compose = yaml.safe_load((Path(__file__).resolve().parents[2] / "docker-compose.yml").read_text())
    model = compose["x-model"]
    assert (c.cpus, c.memory, c.user, c.env, c.model_dir) == (
        model["cpus"],
        model["mem_limit"],
        model["user"],
        {},
        None,
    )
    assert [f"/tmp:{containers.TMPFS['/tmp']}"] == model["tmpfs"]
    hardened, flags = compose["x-hardened"], containers.hardening(c)
    assert (flags["cap_drop"], flags["security_opt"], flags["pids_limit"]) == (
        hardened["cap_drop"],
        hardened["security_opt"],
        hardened["pids_limit"],
    )


@pytest.mark.parametrize(
    "entry, fragment",
    [
        ({"image": "acme/clone:1.0", "address": "h:1"}, "generators.acme: image and address: an entry is launched"),
        ({"image": "acme/clone:1.0", "module": "m"}, "generators.acme: image and module"),
        ({"image": "acme/clone:1.0", "args": ["--x"]}, "generators.acme: args: are for a local process"),
        ({"container": {"cpus": 2}}, "generators.acme: container: applies to an entry launched from an image"),
        ({"image": "acme/clone:1.0", "container": {"cpu": 2}}, "generators.acme.container.cpu: unknown key"),
        ({"image": "acme/clone:1.0", "imag": "x"}, "generators.acme.imag: unknown key"),
        ({"image": "acme/clone:1.0", "container": {"user": "0:0"}}, "never runs as root"),
        ({"image": "acme/clone:1.0", "container": {"user": "root"}}, "give numeric uid[:gid]"),
        ({"image": "acme/clone:1.0", "container": {"env": {"A-B": 1}}}, "'A-B' is not an environment variable"),
        ({"image": "acme/clone:1.0", "container": {"memory": "lots"}}, "generators.acme.container.memory"),
        ({"image": "acme/clone:1.0", "container": {"cpus": 0}}, "generators.acme.container.cpus"),
        ({"image": "acme clone"}, "'acme clone' is not an image reference"),
        ({"image": "acme/clone:1.0", "container": {"model_dir": "nowhere"}}, "container.model_dir: "),
    ],
)
def test_a_bad_image_entry_names_the_entry_the_key_and_the_file(tmp_path, entry, fragment):
    path = write(tmp_path, {"acme": entry})
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert fragment in str(e.value) and str(path) in str(e.value)
    assert "Value error" not in str(e.value)


def test_a_detector_and_the_scorer_may_be_images_too(tmp_path):
    path = write(
        tmp_path,
        {"espeak-ng": {}},
        detectors={"acme-detect": {"image": "acme/detect@sha256:" + "0" * 64}},
        scorer={"image": "voxarena/scorer:latest", "metrics": ["rtf"]},
    )
    cfg = load_config(path)
    assert cfg.detector_services()["acme-detect"].image.startswith("acme/detect@sha256:")
    assert cfg.scorer.image == "voxarena/scorer:latest"


def test_the_image_name_and_the_limits_are_transport_env_and_model_dir_are_protocol(tmp_path):
    def view(entry: dict) -> dict:
        return protocol_view(load_config(write(tmp_path, {"acme": entry})).model_dump(mode="json"))

    plain = view({"image": "acme/clone:1.0"})
    assert view({"image": "acme/clone:1.1"}) == plain  # the id decides, on resume (fleet.check_unchanged)
    limits = {"cpus": 4, "memory": "8g", "pids": 100, "port": 9000, "user": "1:1", "pull": True}
    assert view({"image": "acme/clone:1.0", "container": limits}) == plain
    assert view({"image": "acme/clone:1.0", "container": {"env": {"MODE": "fast"}}}) != plain
    # a run.json written before image entries existed has neither key: still the same protocol
    old = load_config(write(tmp_path, {"acme": {}})).model_dump(mode="json")
    for key in ("image", "container"):
        del old["generators"]["acme"][key]
    assert protocol_view(old) == view({})


# ------------------------------------------------------------------------------------ the container spec
def spec(**settings) -> dict:
    image = ImageIdentity("acme/clone:1.0", IMAGE_ID)
    return container_spec("acme-clone", "generator", image, ContainerConfig(**settings), "voxarena-net", "f" * 32)


def test_every_container_is_hardened():
    s = spec()
    assert s["user"] == "10001:10001"
    assert s["read_only"] is True and s["privileged"] is False
    assert s["tmpfs"] == {"/tmp": "size=512m"}
    assert s["cap_drop"] == ["ALL"] and "cap_add" not in s
    assert s["security_opt"] == ["no-new-privileges:true"]
    assert (s["pids_limit"], s["nano_cpus"], s["mem_limit"], s["memswap_limit"]) == (256, 10**9, "3g", "3g")
    # no egress: only the fleet's internal network, and no port published on the host
    assert s["network"] == "voxarena-net" and "ports" not in s and "network_mode" not in s
    assert s["volumes"] == {} and s["environment"] == {}


def test_the_spec_runs_the_image_by_id_with_the_entrys_settings_and_labels(tmp_path):
    s = spec(cpus=1.5, memory="512m", pids=64, env={"A": "1"}, model_dir=str(tmp_path), user="2000:3000")
    assert s["image"] == IMAGE_ID  # what runs is what run.json records, even if the tag moves
    assert (s["nano_cpus"], s["mem_limit"], s["memswap_limit"], s["pids_limit"]) == (1_500_000_000, "512m", "512m", 64)
    assert s["volumes"] == {str(tmp_path): {"bind": "/model", "mode": "ro"}}
    assert s["environment"] == {"A": "1"} and s["user"] == "2000:3000" and s["detach"] is True
    assert s["labels"] == {
        "voxarena.launched-by": "voxarena-orchestrator",
        "voxarena.owner": "f" * 32,
        "voxarena.service": "acme-clone",
        "voxarena.role": "generator",
        "voxarena.image": "acme/clone:1.0",
    }
    assert s["name"] == "voxarena-acme-clone-ffffffff"


# ------------------------------------------------------------------------------------ the launcher's errors
class FakeImages:
    def __init__(self, present: dict[str, str]) -> None:
        self.present, self.pulled = present, []

    def get(self, ref):
        if ref not in self.present:
            raise docker.errors.ImageNotFound(f"No such image: {ref}")
        return type("Image", (), {"id": self.present[ref], "attrs": {"RepoDigests": []}})()

    def pull(self, ref):
        self.pulled.append(ref)
        raise docker.errors.APIError("registry unreachable")


class FakeClient:
    def __init__(self, present: dict[str, str]) -> None:
        self.images = FakeImages(present)

    def ping(self):
        return True


@pytest.fixture
def launcher(monkeypatch, tmp_path):
    client = FakeClient({"acme/clone:1.0": IMAGE_ID})
    monkeypatch.setattr(containers.docker, "from_env", lambda: client)
    return Launcher(tmp_path)


def test_an_image_that_is_present_resolves_to_its_id(launcher):
    assert launcher.resolve("generators.acme", "acme/clone:1.0", pull=False) == ImageIdentity(
        "acme/clone:1.0", IMAGE_ID
    )


def test_an_image_not_present_is_never_pulled_unless_asked(launcher):
    with pytest.raises(ContainerError, match=r"generators.acme.image: acme/clone:2.0 is not present locally"):
        launcher.resolve("generators.acme", "acme/clone:2.0", pull=False)
    assert launcher.client.images.pulled == []
    with pytest.raises(ContainerError, match="generators.acme.image: pulling acme/clone:2.0 failed"):
        launcher.resolve("generators.acme", "acme/clone:2.0", pull=True)
    assert launcher.client.images.pulled == ["acme/clone:2.0"]


def test_no_docker_daemon_is_an_error_naming_every_image_entry(monkeypatch, tmp_path):
    def unreachable():
        raise docker.errors.DockerException("Error while fetching server API version")

    monkeypatch.setattr(containers.docker, "from_env", unreachable)
    path = write(tmp_path, {"acme": {"image": "acme/clone:1.0"}, "espeak-ng": {}})
    fleet = ServiceFleet(load_config(path), tmp_path / "logs")
    with pytest.raises(RunError, match=r"generators.acme \(acme/clone:1.0\): no Docker daemon to launch images"):
        fleet.start()
    assert fleet.services == {}  # nothing was started


class ExitedContainer:
    attrs = {"State": {"Status": "exited", "ExitCode": 3, "OOMKilled": False}, "NetworkSettings": {"Networks": {}}}

    def reload(self):
        pass

    def logs(self, tail=None):
        return b"loading acme weights\nFileNotFoundError: /model/acme.onnx\n"


def test_a_container_that_exits_is_an_error_with_its_image_and_last_log_lines(launcher):
    svc = ImageService(launcher, "acme", "generator", ImageIdentity("acme/clone:1.0", IMAGE_ID), ContainerConfig())
    svc.container = ExitedContainer()
    with pytest.raises(ContainerError) as e:
        svc.wait_ready(5)
    message = str(e.value)
    assert message.startswith("acme (image acme/clone:1.0, sha256:abababababab): the container exited with code 3")
    assert "FileNotFoundError: /model/acme.onnx" in message


class RunningContainer:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def stats(self, stream, one_shot):
        return {"cpu_stats": {"cpu_usage": {"total_usage": 2_500_000_000}}}

    def stop(self, timeout):
        self.calls.append(("stop", timeout))
        if not isinstance(timeout, int):  # as the Docker API: whole seconds
            raise docker.errors.APIError("invalid value for t")

    def logs(self, tail=None):
        return b"SERVING on port 50051\n"

    def remove(self, force):
        self.calls.append(("remove", force))


def test_stop_keeps_the_log_and_the_cpu_time_and_removes_the_container(launcher, tmp_path):
    svc = ImageService(launcher, "acme", "generator", ImageIdentity("acme/clone:1.0", IMAGE_ID), ContainerConfig())
    svc.container = container = RunningContainer()
    svc.stop()
    assert container.calls == [("stop", 10), ("remove", True)]
    assert (tmp_path / "acme.log").read_text() == "SERVING on port 50051\n" and svc.cpu_seconds == 2.5
    svc.stop()  # twice: nothing more
    assert len(container.calls) == 2


# ------------------------------------------------------------------------------------ identity: resume, compare
class FakeContainer:
    def __init__(self, image_id: str) -> None:
        self.image_id = image_id

    def record(self) -> dict:
        return {"ref": "acme/clone:1.0", "id": self.image_id, "repo_digests": []}


def fleet_with(tmp_path, image_id: str | None) -> ServiceFleet:
    fleet = ServiceFleet(load_config(write(tmp_path, {"acme": {"image": "acme/clone:1.0"}})), tmp_path)
    info = generator_pb2.GeneratorInfo(model=common_pb2.ModelInfo(name="acme", version="1.0"))
    svc = Service("acme", "generator", fleet.cfg.generators["acme"], info=info)
    svc.container = FakeContainer(image_id) if image_id else None  # type: ignore[assignment]
    fleet.services["acme"] = svc
    return fleet


def test_resume_refuses_another_image_id_like_another_model_version(tmp_path):
    before = {"services": {"acme": fleet_with(tmp_path, IMAGE_ID).services["acme"].record()}}
    fleet_with(tmp_path, IMAGE_ID).check_unchanged(before)
    fleet_with(tmp_path, None).check_unchanged(before)  # now a local process or an address: GetInfo decides
    other = "sha256:" + "cd" * 32
    with pytest.raises(
        RunError, match=f"acme: image id changed since this run started \\('{IMAGE_ID}' -> '{other}'\\)"
    ):
        fleet_with(tmp_path, other).check_unchanged(before)


def run_json(tmp_path: Path, name: str, image: dict | None) -> Path:
    run = tmp_path / name
    (run / "metrics").mkdir(parents=True)
    service = {"role": "generator", "info": {"model": {"name": "acme", "version": "1.0"}}}
    record = {
        "manifest": {"sha256": "m" * 64, "items": 4},
        "seeds": {"run_seed": 1},
        "config": {"protocol": {"tasks": ["TTS"]}},
        "services": {"acme": {**service, **({"image": image} if image else {})}},
    }
    (run / "run.json").write_text(json.dumps(record))
    (run / "metrics" / "fingerprint.json").write_text(json.dumps({"fingerprint": {"scorer": "1"}}))
    return run


def test_compare_check_reports_another_image_id(tmp_path):
    a = run_json(tmp_path, "a", {"ref": "acme/clone:1.0", "id": IMAGE_ID})
    b = run_json(tmp_path, "b", {"ref": "acme/clone:1.0", "id": "sha256:" + "cd" * 32})
    retagged = run_json(tmp_path, "c", {"ref": "acme/clone:stable", "id": IMAGE_ID})
    local = run_json(tmp_path, "d", None)
    assert protocol_differences(a, b) == [
        f"acme: image differs (acme/clone:1.0 {IMAGE_ID} vs acme/clone:1.0 sha256:{'cd' * 32})"
    ]
    assert protocol_differences(a, retagged) == [] and protocol_differences(a, local) == []

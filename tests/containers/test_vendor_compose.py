"""The compose path for a vendor's black box: ``compose/vendor.example.yml`` merges over the project's
docker-compose.yml (``-f docker-compose.yml -f compose/vendor.example.yml``) without editing it, its
service is hardened like the project's (and as launch by image), joins the internal ``arena`` network
and turns healthy; ``configs/vendor.example.yaml`` names it.

The vendor image is stood in for by espeak-ng's (an SDK service: the override's healthcheck is the
SDK's). Needs the images (``make images``) and docker-compose; marked ``container``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from voxarena.orchestrator.run.config import load_config

pytestmark = [pytest.mark.container, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
COMPOSE = shutil.which("docker-compose") and ["docker-compose"] or ["docker", "compose"]
FILES = ["-f", "docker-compose.yml", "-f", "compose/vendor.example.yml"]
PROJECT = f"voxarena-vendor-test-{os.getpid()}"
STAND_IN = "voxarena/espeak-ng:latest"


def compose(*args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "VENDOR_IMAGE": STAND_IN}
    out = subprocess.run(
        [*COMPOSE, "-p", PROJECT, *FILES, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout, env=env
    )
    if check and out.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {out.returncode}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return out


def docker(*args: str) -> str:
    return subprocess.run(["docker", *args], capture_output=True, text=True, check=True, timeout=60).stdout


def test_the_merged_file_adds_the_vendor_service_hardened_and_leaves_the_project_services_alone():
    if shutil.which(COMPOSE[0]) is None:
        pytest.fail("docker-compose is not installed")
    merged = yaml.safe_load(compose("config").stdout)["services"]
    alone = yaml.safe_load(
        subprocess.run(
            [*COMPOSE, "-f", "docker-compose.yml", "config"], cwd=REPO, capture_output=True, text=True, check=True
        ).stdout
    )["services"]
    vendor = merged.pop("acme-tts")
    for services in (merged, alone):  # a merged file's networks are {} where a lone one's are null, volumes reordered
        for svc in services.values():
            svc.update({k: sorted(svc[k] or ()) for k in ("networks", "volumes") if k in svc})
    assert merged == alone
    assert vendor["image"] == STAND_IN and list(vendor["networks"]) == ["arena"]
    assert (vendor["user"], vendor["read_only"], vendor["tmpfs"]) == ("10001:10001", True, ["/tmp:size=512m"])
    assert (vendor["cap_drop"], vendor["security_opt"]) == (["ALL"], ["no-new-privileges:true"])
    assert (vendor["pids_limit"], vendor["mem_limit"], vendor["memswap_limit"]) == (256, "3g", "3g")


def test_the_run_config_names_the_vendor_service():
    cfg = load_config(REPO / "configs" / "vendor.example.yaml")
    assert cfg.generators["acme-tts"].address is None and cfg.generators["acme-tts"].image is None  # compose's


def test_the_vendor_service_comes_up_healthy_and_hardened():
    if subprocess.run(["docker", "image", "inspect", STAND_IN], capture_output=True).returncode != 0:
        pytest.fail(f"{STAND_IN} is not built (make images)")
    try:
        compose("up", "-d", "acme-tts")
        cid = compose("ps", "-q", "acme-tts").stdout.strip()
        deadline = time.monotonic() + 300
        while (health := docker("inspect", "-f", "{{.State.Health.Status}}", cid).strip()) != "healthy":
            assert health == "starting" and time.monotonic() < deadline, health
            time.sleep(2)
        attrs = json.loads(docker("inspect", cid))[0]
        host = attrs["HostConfig"]
        assert attrs["Config"]["User"] == "10001:10001"
        assert host["ReadonlyRootfs"] and host["CapDrop"] == ["ALL"] and host["PidsLimit"] == 256
        assert host["SecurityOpt"] == ["no-new-privileges:true"] and host["Memory"] == host["MemorySwap"] == 3 * 2**30
        (network,) = attrs["NetworkSettings"]["Networks"]
        assert network.endswith("_arena")
        assert json.loads(docker("network", "inspect", network))[0]["Internal"] is True
    finally:
        compose("down", "--timeout", "10", check=False)

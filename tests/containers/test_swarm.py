"""VoxArena on Docker Swarm, for real: compose/swarm.yml deployed with ``docker stack deploy`` on a single-node
swarm runs the smoke arena (configs/compose-smoke.yaml) with the same generations, scores and metrics as local
mode; espeak-ng runs two replicas and both must serve calls (``endpoint_mode: dnsrr`` and the orchestrator's
round-robin channel).

The engine is left as it was found: a swarm is initialised only if ``docker info`` says inactive, and then left
again (with the docker_gwbridge network it made) after the stack's services, network and volumes are gone,
also when the test fails. The fast tests check the stack file against docker-compose.yml (no Docker needed);
that it is ``make generate``'s output, tests/deploy/test_generate.py.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import docker
import docker.errors
import pytest
import yaml
from smoke_arena import REPO, SMOKE_CONFIG, assert_same_arena, compose, rows, run_locally, writable_run_dir

from voxarena.catalogue import SERVICES
from voxarena.deploy import swarm as swarm_stack

STACK = "voxarena-swarm-test"
NETWORK = f"{STACK}_arena"  # `docker stack deploy` names a stack's networks STACK_NAME
NAMESPACE = f"com.docker.stack.namespace={STACK}"
REPLICATED = "espeak-ng"  # runs two replicas
HEALTHY_SECONDS = 300
GONE_SECONDS = 90
SYNTHESIZE = "/voxarena.v1.GeneratorService/Synthesize"  # the SDK logs each call at DEBUG with this method
ORCHESTRATOR_FILES = ("docker-compose.yml", "compose/swarm-orchestrator.yml")


# ----------------------------------------------------------------------------------- the stack file (fast)
def test_swarm_file_runs_every_default_service_as_compose_limits_it():
    compose_services = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
    stack = yaml.safe_load((REPO / "compose" / "swarm.yml").read_text())
    assert list(stack["services"]) == [s.name for s in SERVICES if s.compose_profile is None]
    for name, service in stack["services"].items():
        source = compose_services[name]
        limits = service["deploy"]["resources"]["limits"]
        assert (float(limits["cpus"]), limits["memory"], limits["pids"]) == (
            source["cpus"],
            source["mem_limit"],
            source["pids_limit"],
        ), name
        assert service["deploy"]["endpoint_mode"] == "dnsrr", name
        assert service["volumes"] == [{"type": "tmpfs", "target": "/tmp", "tmpfs": {"size": 512 << 20}}], name
        assert {k: service[k] for k in ("image", "user", "read_only", "cap_drop")} == {
            k: source[k] for k in ("image", "user", "read_only", "cap_drop")
        }, name
        # The same probe, with swarm's patience: a slow probe must not get a working replica replaced.
        assert service["healthcheck"] == {**source["healthcheck"], **swarm_stack.SWARM_HEALTH}, name
    assert stack["networks"] == {"arena": {"driver": "overlay", "attachable": True, "internal": True}}


def test_a_compose_key_without_a_swarm_meaning_is_refused_by_name():
    with pytest.raises(swarm_stack.StackError, match=r"services\.flite\.devices: no swarm translation"):
        swarm_stack.swarm_service("flite", {"image": "voxarena/flite:latest", "devices": ["/dev/snd"]})
    with pytest.raises(swarm_stack.StackError, match=r"services\.flite\.tmpfs: tmpfs option 'mode'"):
        swarm_stack.swarm_service("flite", {"tmpfs": ["/tmp:mode=1777"]})


# ----------------------------------------------------------------------------------- Docker Swarm (slow)
def docker_cli(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check and out.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} exited {out.returncode}: {out.stderr.strip()}")
    return out


def has_network(name: str) -> bool:
    return docker_cli("network", "inspect", name, check=False).returncode == 0


@pytest.fixture(scope="module")
def swarm():
    """A swarm manager: this engine's own if it is one, else a single-node swarm made here and left after."""
    if shutil.which("docker") is None:
        pytest.fail("docker is not installed: container tests need Docker and the images (make images)")
    state, manager = docker_cli(
        "info", "--format", "{{.Swarm.LocalNodeState}} {{.Swarm.ControlAvailable}}"
    ).stdout.split()
    if state not in ("inactive", "active") or (state == "active" and manager != "true"):
        pytest.fail(f"the engine's swarm state is {state!r} (manager: {manager}); the test needs inactive or a manager")
    made = state == "inactive"
    had_gwbridge = has_network("docker_gwbridge")
    if made:
        docker_cli("swarm", "init", "--advertise-addr", "127.0.0.1")
    try:
        yield docker.from_env()
    finally:
        if made:
            docker_cli("swarm", "leave", "--force", check=False)
            if not had_gwbridge:
                docker_cli("network", "rm", "docker_gwbridge", check=False)


def smoke_stack_file(path: Path) -> Path:
    """compose/swarm.yml cut to the smoke arena's services, REPLICATED at two replicas logging every call."""
    config = yaml.safe_load((REPO / SMOKE_CONFIG).read_text())
    wanted = [*config["generators"], *config["detectors"], "scorer"]
    stack = yaml.safe_load((REPO / "compose" / "swarm.yml").read_text())
    stack["services"] = {name: stack["services"][name] for name in wanted}
    replicated = stack["services"][REPLICATED]
    replicated["deploy"]["replicas"] = 2
    (entry,) = (s for s in SERVICES if s.name == REPLICATED)
    replicated["command"] = [*entry.command, "--log-level", "DEBUG"]
    path.write_text(yaml.safe_dump(stack, sort_keys=False))
    return path


def task_states(client) -> dict[str, tuple[int, list[str]]]:
    """Each stack service: its wanted replicas and its tasks meant to run, as state/health (error)."""
    states = {}
    for service in client.services.list(filters={"label": NAMESPACE}):
        tasks = []
        for task in service.tasks(filters={"desired-state": "running"}):
            status = task["Status"]
            health = "-"
            cid = status.get("ContainerStatus", {}).get("ContainerID")
            if status["State"] == "running" and cid:
                try:
                    health = client.containers.get(cid).attrs["State"].get("Health", {}).get("Status", "no healthcheck")
                except docker.errors.NotFound:
                    health = "container gone"
            tasks.append(f"{status['State']}/{health}" + (f" ({status['Err']})" if status.get("Err") else ""))
        states[service.name] = (service.attrs["Spec"]["Mode"]["Replicated"]["Replicas"], tasks)
    return states


def wait_healthy(client, services: int) -> dict[str, tuple[int, list[str]]]:
    """Every one of ``services`` with all its replicas running and healthy, or fail with each task's state."""
    deadline = time.monotonic() + HEALTHY_SECONDS
    while True:
        states = task_states(client)
        healthy = [
            len(tasks) == wanted and all(t == "running/healthy" for t in tasks) for wanted, tasks in states.values()
        ]
        if len(healthy) == services and all(healthy):
            return states
        if time.monotonic() > deadline:
            raise AssertionError(f"stack {STACK} not healthy after {HEALTHY_SECONDS} s: {states}")
        time.sleep(3)


def stack_containers(client) -> list[str]:
    """Names of the stack's containers, running or not (a listing only: they vanish while it is read)."""
    return [c["Names"][0].lstrip("/") for c in client.api.containers(all=True, filters={"label": NAMESPACE})]


def remove_stack(client) -> None:
    """The stack's services, then (once their containers are gone) its network and any volume it made."""
    docker_cli("stack", "rm", STACK, check=False)
    deadline = time.monotonic() + GONE_SECONDS
    while stack_containers(client) and time.monotonic() < deadline:
        time.sleep(2)
    while has_network(NETWORK) and time.monotonic() < deadline:
        docker_cli("network", "rm", NETWORK, check=False)  # swarm removes it itself, but not always at once
        time.sleep(2)
    for volume in client.volumes.list(filters={"label": NAMESPACE}):
        volume.remove(force=True)
    left = stack_containers(client)
    assert not left and not has_network(NETWORK), f"stack {STACK} not removed: containers {left}, network {NETWORK}"


@pytest.fixture(scope="module")
def stack(swarm, speech_dir, tmp_path_factory):
    file = smoke_stack_file(tmp_path_factory.mktemp("swarm") / "stack.yml")
    t0 = time.monotonic()
    try:
        docker_cli("stack", "deploy", "--resolve-image", "never", "-c", str(file), STACK)
        states = wait_healthy(swarm, len(yaml.safe_load(file.read_text())["services"]))
        print(f"\nswarm: deployed and healthy in {time.monotonic() - t0:.1f} s: {states}")
        yield {"client": swarm, "speech": str(speech_dir)}
    finally:
        t1 = time.monotonic()
        remove_stack(swarm)
        print(f"swarm: stack removed in {time.monotonic() - t1:.1f} s")


def calls_per_replica(client, service: str) -> tuple[dict[str, int], int]:
    """Synthesize calls logged per replica slot of ``service`` (task name -> count), summed over every task
    the slot had (swarm may replace a task's container during a run), and how many containers were gone."""
    counts: dict[str, int] = {}
    gone = 0
    for task in client.services.get(f"{STACK}_{service}").tasks():
        cid = task["Status"].get("ContainerStatus", {}).get("ContainerID")
        if not cid:
            continue
        try:
            log = client.containers.get(cid).logs().decode(errors="replace")
        except docker.errors.NotFound:
            gone += 1
            continue
        slot = f"{service}.{task['Slot']}"
        counts[slot] = counts.get(slot, 0) + sum(SYNTHESIZE in line for line in log.splitlines())
    return counts, gone


@pytest.mark.container
@pytest.mark.slow
def test_swarm_run_matches_local_run_and_spreads_calls(stack, tmp_path):
    env = {"VOXARENA_SPEECH": stack["speech"], "VOXARENA_STACK_NETWORK": NETWORK}
    with writable_run_dir("swarm-smoke") as (name, in_swarm):
        t0 = time.monotonic()
        out = compose(
            STACK,
            "run",
            "--rm",
            "orchestrator",
            "run",
            SMOKE_CONFIG,
            "--out",
            f"runs/{name}",
            "--no-progress",
            files=ORCHESTRATOR_FILES,
            env=env,
            timeout=900,
            check=False,
        )
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        swarm_seconds = time.monotonic() - t0
        record = json.loads((in_swarm / "run.json").read_text())
        assert record["services"][REPLICATED]["address"] == f"dns:///{REPLICATED}:50051"

        calls, gone = calls_per_replica(stack["client"], REPLICATED)
        attempts = sum(
            r["attempts"] for r in rows(in_swarm, "generations.jsonl").values() if r["generator"] == REPLICATED
        )
        assert len(calls) == 2 and all(calls.values()), f"{REPLICATED} calls per replica: {calls}"
        if not gone:  # every container's log read: each attempt was logged by exactly one replica
            assert sum(calls.values()) == attempts, f"{REPLICATED}: {calls} logged, {attempts} attempts recorded"

        t1 = time.monotonic()
        local = run_locally(tmp_path / "local", stack["speech"])
        local_seconds = time.monotonic() - t1
        print(f"swarm: arena {swarm_seconds:.1f} s in the swarm, {local_seconds:.1f} s locally; calls {calls}")
        assert_same_arena(in_swarm, local)

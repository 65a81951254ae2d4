"""The container stack: every reference service's image passes conformance, an arena run against
`docker-compose up` gives the same generations, scores and metrics as the same config in local mode, and
the monitoring profile's Prometheus scrapes every service, whose counters move with a run.

Needs the images (`make images`) and Docker with docker-compose; marked ``container`` (CI builds the
images first and runs these)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import smoke_arena
import yaml
from smoke_arena import REPO, SERVICE_UID, SMOKE_CONFIG, assert_same_arena, run_locally, writable_run_dir

pytestmark = [pytest.mark.container, pytest.mark.slow]
PROJECT = "voxarena-test"


def compose(*args: str, **kw) -> subprocess.CompletedProcess:
    return smoke_arena.compose(PROJECT, *args, **kw)


def reference_services() -> list[str]:
    services = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
    return [n for n, s in services.items() if "profiles" not in s]


@pytest.fixture(scope="module")
def stack(speech_dir):
    if shutil.which("docker") is None:
        pytest.fail("docker is not installed: container tests need Docker and the images (make images)")
    # The orchestrator runs as the compose file's default user (unprivileged): no VOXARENA_UID here.
    env = {"VOXARENA_SPEECH": str(speech_dir)}
    compose("--profile", "monitoring", "up", "-d", env=env)
    try:
        deadline = time.monotonic() + 600
        names = reference_services()
        while True:
            states = {}
            for n in names:
                cid = compose("ps", "-q", n, env=env).stdout.strip()
                states[n] = (
                    subprocess.run(
                        ["docker", "inspect", "-f", "{{.State.Health.Status}}", cid], capture_output=True, text=True
                    ).stdout.strip()
                    if cid
                    else "missing"
                )
            if all(s == "healthy" for s in states.values()):
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"services not healthy after 600 s: {states}")
            time.sleep(3)
        yield env
    finally:
        compose("--profile", "monitoring", "down", "--timeout", "20", env=env, check=False)


# One orchestrator container checks every service, two at a time (each service has one core, the machine two;
# a container per service cost about 5 s each in `docker-compose run` alone), then prints each report in turn,
# followed by a line with its exit code.
CONFORMANCE_LOOP = """
printf '%s\\n' "$@" | xargs -P 2 -I NAME sh -c \\
  'orchestrator conformance --strict NAME:50051 > /tmp/NAME.txt 2>&1; echo $? > /tmp/NAME.code'
for s in "$@"; do echo "=== $s"; cat "/tmp/$s.txt"; echo "=== exit $(cat "/tmp/$s.code")"; done
"""


@pytest.fixture(scope="module")
def conformance_reports(stack) -> dict[str, tuple[int, str]]:
    """service -> (exit code, report) of the strict conformance check."""
    names = reference_services()
    out = compose(
        "run", "--rm", "-T", "--entrypoint", "sh", "orchestrator", "-c", CONFORMANCE_LOOP, "sh", *names,
        env=stack, timeout=3600,
    )  # fmt: skip
    blocks = re.findall(r"^=== (\S+)\n(.*?)^=== exit (\d+)$", out.stdout.replace("\r\n", "\n"), re.S | re.M)
    reports = {name: (int(code), report) for name, report, code in blocks}
    assert sorted(reports) == sorted(names), out.stdout[-3000:] + out.stderr[-3000:]
    return reports


@pytest.mark.parametrize("service", reference_services())
def test_every_reference_image_conforms(conformance_reports, service):
    """Our own services pass every rule, the SHOULD ones too (--strict)."""
    code, report = conformance_reports[service]
    assert code == 0, report[-4000:]
    assert " 0 FAIL, 0 WARN" in report


def test_compose_run_matches_local_run(stack, tmp_path):
    with writable_run_dir("compose-smoke") as (name, in_stack):
        out = compose(
            "run",
            "--rm",
            "orchestrator",
            "run",
            SMOKE_CONFIG,
            "--out",
            f"runs/{name}",
            "--no-progress",
            env=stack,
            timeout=1800,
            check=False,
        )
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        local = run_locally(tmp_path / "local", stack["VOXARENA_SPEECH"])
        record = json.loads((in_stack / "run.json").read_text())
        assert record["stack"] == "compose" and record["services"]["espeak-ng"]["address"] == "dns:///espeak-ng:50051"
        assert_same_arena(in_stack, local)


PROMQL = """
import json, sys, urllib.parse, urllib.request
url = "http://127.0.0.1:9090/api/v1/query?query=" + urllib.parse.quote(sys.argv[1])
print(json.dumps(json.load(urllib.request.urlopen(url, timeout=10))["data"]["result"]))
"""


def promql(stack: dict, query: str) -> dict[str, float]:
    """service -> value of a PromQL query that keeps the ``service`` label, asked of the stack's Prometheus."""
    cid = compose("--profile", "monitoring", "ps", "-q", "prometheus", env=stack).stdout.strip()
    out = subprocess.run(["docker", "exec", cid, "python", "-c", PROMQL, query], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    return {r["metric"].get("service", ""): float(r["value"][1]) for r in json.loads(out.stdout)}


def wait_for(stack: dict, query: str, ok, seconds: float = 90) -> dict[str, float]:
    deadline = time.monotonic() + seconds
    while True:
        got = promql(stack, query)
        if ok(got) or time.monotonic() > deadline:
            return got
        time.sleep(3)


def test_prometheus_scrapes_every_service_and_its_counters_move_with_a_run(stack):
    names = reference_services()
    up = wait_for(stack, 'up{job="voxarena"}', lambda got: all(got.get(n) == 1 for n in names))
    assert {n: up.get(n) for n in names} == {n: 1.0 for n in names}
    ready = promql(stack, "voxarena_model_ready")
    assert all(ready.get(n) == 1 for n in names), ready
    calls = 'sum by (service) (voxarena_requests_total{method=~".*/(Synthesize|ScoreBatch|MeasureClips)",code="OK"})'
    before = promql(stack, calls)
    with writable_run_dir("compose-monitored") as (name, _in_stack):
        out = compose(
            "run", "--rm", "orchestrator", "run", SMOKE_CONFIG, "--out", f"runs/{name}", "--no-progress",
            env=stack, timeout=1800, check=False,
        )  # fmt: skip
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    used = ("espeak-ng", "flite", "lfcc-gmm", "scorer")  # configs/compose-smoke.yaml's services
    after = wait_for(stack, calls, lambda got: all(got.get(n, 0) > before.get(n, 0) for n in used))
    assert all(after.get(n, 0) > before.get(n, 0) for n in used), (before, after)
    clips = promql(stack, 'sum by (service) (voxarena_scorer_clips_total{metric="wer"})')
    assert clips.get("scorer", 0) > 0, clips


# Run inside each container: who it runs as, its effective capabilities, whether it can write its root
# and whether it can open a connection outside the stack's internal network (a public resolver).
PROBE = """
import os, socket
caps = next(line.split()[1] for line in open("/proc/self/status") if line.startswith("CapEff:"))
try:
    open("/probe", "w").close(); root_writable = True
except OSError:
    root_writable = False
try:
    socket.create_connection(("1.1.1.1", 53), timeout=3).close(); egress = True
except OSError:
    egress = False
print(os.getuid(), os.getgid(), int(caps, 16), root_writable, egress)
"""


def _inspect(cid: str) -> dict:
    out = subprocess.run(["docker", "inspect", cid], capture_output=True, text=True, check=True)
    return json.loads(out.stdout)[0]


def _assert_hardened(name: str, host: dict, probe: str) -> None:
    assert host["ReadonlyRootfs"] is True, name
    assert host["CapDrop"] == ["ALL"] and not host["CapAdd"], name
    assert "no-new-privileges:true" in host["SecurityOpt"], name
    assert host["PidsLimit"] and host["PidsLimit"] > 0, name
    assert host["Memory"] > 0 and host["NanoCpus"] > 0, name
    uid, gid, caps, root_writable, egress = probe.split()
    assert (int(uid), int(gid)) == (SERVICE_UID, SERVICE_UID), f"{name} runs as {uid}:{gid}"
    assert int(caps) == 0, f"{name} has effective capabilities {caps}"
    assert root_writable == "False", f"{name} can write its root file system"
    assert egress == "False", f"{name} reaches outside its network"


def test_every_container_is_hardened(stack):
    """Each running service and the orchestrator: unprivileged user, no capabilities, no privilege gain,
    read-only root, limits, and no route out of the internal network."""
    listed = subprocess.run(
        ["docker", "ps", "--filter", f"label=com.docker.compose.project={PROJECT}", "--format",
         '{{.Label "com.docker.compose.service"}} {{.ID}}'],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    ids = dict(zip(listed[::2], listed[1::2]))

    def probe(name: str) -> subprocess.CompletedProcess:  # about 3 s each: the egress attempt times out
        return subprocess.run(["docker", "exec", ids[name], "python", "-c", PROBE], capture_output=True, text=True)

    names = reference_services()
    with ThreadPoolExecutor(8) as pool:
        probes = dict(zip(names, pool.map(probe, names)))
    for name, out in probes.items():
        assert out.returncode == 0, f"{name}: {out.stderr[-2000:]}"
        _assert_hardened(name, _inspect(ids[name])["HostConfig"], out.stdout)
    container = f"{PROJECT}-hardening-probe"
    out = compose(
        "run", "-d", "--name", container, "--entrypoint", "sleep", "orchestrator", "120", env=stack, check=True
    )
    try:
        probe = subprocess.run(["docker", "exec", container, "python", "-c", PROBE], capture_output=True, text=True)
        assert probe.returncode == 0, probe.stderr[-2000:] + out.stdout
        _assert_hardened("orchestrator", _inspect(container)["HostConfig"], probe.stdout)
    finally:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True)

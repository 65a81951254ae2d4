"""The container stack: every reference service's image passes conformance, and an arena run against
`docker-compose up` gives the same generations, scores and metrics as the same config in local mode.

Needs the images (`make images`) and Docker with docker-compose; marked ``container`` (CI builds the
images first and runs these)."""

from __future__ import annotations

import csv
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

pytestmark = [pytest.mark.container, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
COMPOSE = shutil.which("docker-compose") and ["docker-compose"] or ["docker", "compose"]
PROJECT = "voxarena-test"


def compose(
    *args: str, env: dict | None = None, timeout: float = 900, check: bool = True
) -> subprocess.CompletedProcess:
    import os

    full_env = {**os.environ, **(env or {})}
    out = subprocess.run(
        [*COMPOSE, "-p", PROJECT, *args], cwd=REPO, capture_output=True, text=True, timeout=timeout, env=full_env
    )
    if check and out.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {out.returncode}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return out


def reference_services() -> list[str]:
    services = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
    return [n for n, s in services.items() if "profiles" not in s]


@pytest.fixture(scope="module")
def stack(speech_dir):
    if shutil.which("docker") is None:
        pytest.fail("docker is not installed: container tests need Docker and the images (make images)")
    env = {"VOXARENA_SPEECH": str(speech_dir), "VOXARENA_UID": "0", "VOXARENA_GID": "0"}
    compose("up", "-d", env=env)
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
        compose("down", "--timeout", "20", env=env, check=False)


@pytest.mark.parametrize("service", reference_services())
def test_every_reference_image_conforms(stack, service):
    out = compose("run", "--rm", "orchestrator", "conformance", f"{service}:50051", env=stack, check=False)
    assert out.returncode == 0, out.stdout[-4000:]
    assert " 0 FAIL" in out.stdout


def _rows(run: Path, table: str) -> dict:
    rows = [json.loads(line) for line in (run / table).read_text().splitlines()]
    return {r["id"]: r for r in rows}


def _csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_compose_run_matches_local_run(stack, tmp_path):
    name = f"compose-smoke-{int(time.time())}"
    in_stack = REPO / "runs" / name
    try:
        out = compose(
            "run",
            "--rm",
            "orchestrator",
            "run",
            "configs/compose-smoke.yaml",
            "--out",
            f"runs/{name}",
            "--no-progress",
            env=stack,
            timeout=1800,
            check=False,
        )
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
        local = tmp_path / "local"
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "voxarena.orchestrator",
                "run",
                "configs/compose-smoke.yaml",
                "--out",
                str(local),
                "--no-progress",
                "--stack",
                "local",
            ],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=1800,
            env={**__import__("os").environ, "VOXARENA_SPEECH": stack["VOXARENA_SPEECH"]},
        )
        assert done.returncode == 0, done.stderr[-3000:]
        record = json.loads((in_stack / "run.json").read_text())
        assert record["stack"] == "compose" and record["services"]["espeak-ng"]["address"] == "dns:///espeak-ng:50051"
        a, b = _rows(in_stack, "generations.jsonl"), _rows(local, "generations.jsonl")
        assert a.keys() == b.keys() and len(a) == 12
        assert {k: r["audio_sha256"] for k, r in a.items()} == {k: r["audio_sha256"] for k, r in b.items()}
        da, db = _rows(in_stack, "detections.jsonl"), _rows(local, "detections.jsonl")
        assert {k: r["score"] for k, r in da.items()} == {k: r["score"] for k, r in db.items()}
        for table in ("detection_metrics.csv", "generator_metrics.csv"):
            ta, tb = _csv(in_stack / "metrics" / table), _csv(local / "metrics" / table)
            drop = {"rtf", "rtf_ci_low", "rtf_ci_high", "scorer_fingerprint"}  # wall-clock timing differs
            assert [{k: v for k, v in r.items() if k not in drop} for r in ta] == [
                {k: v for k, v in r.items() if k not in drop} for r in tb
            ], table
    finally:
        shutil.rmtree(in_stack, ignore_errors=True)

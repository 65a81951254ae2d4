"""The smoke arena (configs/compose-smoke.yaml) in a container stack and in local mode, shared by the tests
that run it through docker-compose (test_compose_stack) and Docker Swarm (test_swarm): docker-compose with a
project name, a run directory the unprivileged orchestrator container may write, the local-mode run, and
the comparison that says both runs made the same generations, scores and metrics."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
COMPOSE = shutil.which("docker-compose") and ["docker-compose"] or ["docker", "compose"]
SMOKE_CONFIG = "configs/compose-smoke.yaml"
SMOKE_GENERATIONS = 12  # 6 items x 2 generators (espeak-ng, flite), TTS only
SERVICE_UID = 10001  # the images' unprivileged user, and the orchestrator's default in docker-compose.yml
TIMING_COLUMNS = {"rtf", "rtf_ci_low", "rtf_ci_high", "scorer_fingerprint"}  # wall-clock timing differs


def compose(
    project: str,
    *args: str,
    files: Sequence[str] = (),
    env: dict | None = None,
    timeout: float = 900,
    check: bool = True,
) -> subprocess.CompletedProcess:
    """``docker-compose -p PROJECT [-f FILE ...] ARGS`` in the repository; ``check``: fail with its output."""
    full_env = {**os.environ, **(env or {})}
    command = [*COMPOSE, "-p", project, *(a for f in files for a in ("-f", f)), *args]
    out = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=timeout, env=full_env)
    if check and out.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {out.returncode}:\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}")
    return out


@contextmanager
def writable_run_dir(prefix: str) -> Iterator[tuple[str, Path]]:
    """``(name, REPO/runs/name)``, owned by the services' user so the unprivileged orchestrator container
    can write it through the ``./runs`` mount; removed afterwards."""
    name = f"{prefix}-{int(time.time())}"
    path = REPO / "runs" / name
    path.mkdir(parents=True)
    os.chown(path, SERVICE_UID, SERVICE_UID)
    try:
        yield name, path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def run_locally(out: Path, speech: str) -> Path:
    """The smoke arena in local mode (every service a local process) into ``out``."""
    done = subprocess.run(
        [sys.executable, "-m", "voxarena.orchestrator", "run", SMOKE_CONFIG, "--out", str(out), "--no-progress"]
        + ["--stack", "local"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=1800,
        env={**os.environ, "VOXARENA_SPEECH": speech},
    )
    assert done.returncode == 0, f"local run exited {done.returncode}:\n{done.stderr[-3000:]}"
    return out


def rows(run: Path, table: str) -> dict:
    """A run's JSONL table by row id."""
    return {r["id"]: r for r in map(json.loads, (run / table).read_text().splitlines())}


def csv_rows(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def assert_same_arena(stack_run: Path, local_run: Path) -> None:
    """The same generated audio (sha256), detection scores and metrics, timing columns apart."""
    a, b = rows(stack_run, "generations.jsonl"), rows(local_run, "generations.jsonl")
    assert a.keys() == b.keys() and len(a) == SMOKE_GENERATIONS, (sorted(a), sorted(b))
    assert {k: r["audio_sha256"] for k, r in a.items()} == {k: r["audio_sha256"] for k, r in b.items()}
    da, db = rows(stack_run, "detections.jsonl"), rows(local_run, "detections.jsonl")
    assert {k: r["score"] for k, r in da.items()} == {k: r["score"] for k, r in db.items()}
    for table in ("detection_metrics.csv", "generator_metrics.csv"):
        ta, tb = csv_rows(stack_run / "metrics" / table), csv_rows(local_run / "metrics" / table)
        assert ta and [{k: v for k, v in r.items() if k not in TIMING_COLUMNS} for r in ta] == [
            {k: v for k, v in r.items() if k not in TIMING_COLUMNS} for r in tb
        ], table

"""Throughput of a CPU-bound generator (griffin-lim) with one and with two compose replicas.

Brings the stack up with ``--scale griffin-lim=N`` (each replica limited to one CPU), runs
``configs/bench-replicas.yaml`` (16 RECONSTRUCT items, 4 calls in flight) from the orchestrator
container after one warm-up call to every replica (the first call compiles librosa's numba kernels),
and times the generation stage from the run's own records (first request start to last
response end). Prints clips per second for N=1 and N=2 and their ratio (ideal 2.0 on >= 2 free cores).

    python benchmarks/replica_throughput.py          # needs the images (make images)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMPOSE = ["docker-compose"] if shutil.which("docker-compose") else ["docker", "compose"]
PROJECT = "voxarena-bench"


def compose(*args: str, env: dict) -> str:
    out = subprocess.run([*COMPOSE, "-p", PROJECT, *args], cwd=REPO, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: {out.stdout[-2000:]}{out.stderr[-2000:]}")
    return out.stdout


def wait_healthy(env: dict, service: str, replicas: int) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        ids = compose("ps", "-q", service, env=env).split() + compose("ps", "-q", "scorer", env=env).split()
        states = [
            subprocess.run(
                ["docker", "inspect", "-f", "{{.State.Health.Status}}", i], capture_output=True, text=True
            ).stdout.strip()
            for i in ids
        ]
        if len(ids) == replicas + 1 and all(s == "healthy" for s in states):
            return
        time.sleep(2)
    raise SystemExit(f"{service} x{replicas} not healthy within 300 s")


def _seconds(stamp: str) -> float:
    """RFC 3339 with nanoseconds ('...T06:38:08.864665088Z') -> POSIX seconds."""
    whole, _, frac = stamp.rstrip("Z").partition(".")
    return datetime.fromisoformat(whole + "+00:00").timestamp() + float("0." + (frac or "0"))


WARM_UP = """
import socket, numpy as np
from voxarena.codec import AudioClip, encode_audio
from voxarena.orchestrator.fleet.clients import channel
from voxarena.v1 import generator_pb2, generator_pb2_grpc
clip = encode_audio(AudioClip((0.1 * np.sin(np.arange(32000) * 0.05)).astype(np.float32), 16000))
for ip in sorted({a[4][0] for a in socket.getaddrinfo("griffin-lim", 50051)}):
    stub = generator_pb2_grpc.GeneratorServiceStub(channel(f"{ip}:50051"))
    stub.Synthesize(generator_pb2.SynthesizeRequest(request_id="warm", seed=1, task=generator_pb2.RECONSTRUCT,
                                                    source_audio=clip), timeout=300)
    print("warmed", ip)
"""


def generation_span(run: Path) -> tuple[int, float]:
    """Clips made and the span from the first request's start to the last one's end (server clocks)."""
    rows = [json.loads(line) for line in (run / "generations.jsonl").read_text().splitlines()]
    ok = [r for r in rows if r["status"] == "ok"]
    return len(ok), max(_seconds(r["timing"]["end"]) for r in ok) - min(_seconds(r["timing"]["start"]) for r in ok)


def main() -> None:
    speech = os.environ.get("VOXARENA_SPEECH", str((REPO / ".." / "shared" / "data" / "speech").resolve()))
    env = {**os.environ, "VOXARENA_SPEECH": speech, "VOXARENA_UID": "0", "VOXARENA_GID": "0"}
    results = {}
    try:
        for n in (1, 2):
            compose("up", "-d", "--scale", f"griffin-lim={n}", "griffin-lim", "scorer", env=env)
            wait_healthy(env, "griffin-lim", n)
            # Each replica's first call pays one-off costs (numba compiles librosa's kernels): excluded.
            compose("run", "--rm", "--entrypoint", "python", "orchestrator", "-c", WARM_UP, env=env)
            out = REPO / "runs" / f"bench-replicas-{n}-{int(time.time())}"
            compose(
                "run",
                "--rm",
                "orchestrator",
                "run",
                "configs/bench-replicas.yaml",
                "--out",
                str(out.relative_to(REPO)),
                "--no-progress",
                env=env,
            )
            clips, seconds = generation_span(out)
            results[n] = clips / seconds
            print(f"griffin-lim x{n}: {clips} clips in {seconds:.1f} s = {results[n]:.3f} clips/s", flush=True)
            shutil.rmtree(out, ignore_errors=True)
    finally:
        compose("down", "--timeout", "10", env=env)
    print(f"throughput ratio, 2 replicas / 1 replica: {results[2] / results[1]:.2f} (ideal 2.00 on 2 free cores)")


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    sys.exit(main())

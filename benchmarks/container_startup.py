"""Image sizes and time from `docker run` to SERVING for every reference image.

Each container starts as in the stack (read-only root, tmpfs /tmp, uid 10001), with its port
published on the loopback only; the clock runs from `docker run` to the first grpc.health.v1
SERVING answer (polled every 50 ms). Targets: at most 1.5 GB per image, SERVING within 15 s.

    python benchmarks/container_startup.py [SERVICE ...]     # needs the images (make images)
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import grpc
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

REPO = Path(__file__).resolve().parents[1]
SIZE_TARGET_GB, START_TARGET_S = 1.5, 15.0


def serving_after(image: str, timeout: float = 120.0) -> float:
    t0 = time.perf_counter()
    cid = subprocess.run(
        [
            "docker",
            "run",
            "-d",
            "--rm",
            "--read-only",
            "--tmpfs",
            "/tmp",
            "--user",
            "10001:10001",
            "-p",
            "127.0.0.1::50051",
            image,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    try:
        port = ""
        while not port:
            port = subprocess.run(["docker", "port", cid, "50051/tcp"], capture_output=True, text=True).stdout.strip()
        address = port.splitlines()[0].replace("0.0.0.0", "127.0.0.1")
        stub = health_pb2_grpc.HealthStub(grpc.insecure_channel(address))
        while time.perf_counter() - t0 < timeout:
            try:
                if (
                    stub.Check(health_pb2.HealthCheckRequest(), timeout=1).status
                    == health_pb2.HealthCheckResponse.SERVING
                ):
                    return time.perf_counter() - t0
            except grpc.RpcError:
                pass
            time.sleep(0.05)
        return float("inf")
    finally:
        subprocess.run(["docker", "stop", "-t", "2", cid], capture_output=True)


def main(argv: list[str]) -> int:
    import argparse

    services = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("services", nargs="*", help="compose services (default: all without a profile)")
    names = ap.parse_args(argv).services or [n for n, s in services.items() if "profiles" not in s]
    if unknown := sorted(set(names) - set(services)):
        ap.error(f"not in docker-compose.yml: {', '.join(unknown)} (known: {', '.join(sorted(services))})")
    rows = []
    print(f"{'image':34} {'size GB':>8} {'to SERVING s':>13}")
    for name in names:
        image = services[name]["image"]
        size = (
            int(
                subprocess.run(
                    ["docker", "image", "inspect", "-f", "{{.Size}}", image], capture_output=True, text=True, check=True
                ).stdout
            )
            / 1e9
        )
        seconds = serving_after(image)
        rows.append((image, size, seconds))
        print(f"{image:34} {size:8.2f} {seconds:13.1f}", flush=True)
    worst_size = max(r[1] for r in rows)
    worst_start = max(r[2] for r in rows)
    print(
        f"largest image {worst_size:.2f} GB = {worst_size / SIZE_TARGET_GB:.2f} x the 1.5 GB target; "
        f"slowest start {worst_start:.1f} s = {worst_start / START_TARGET_S:.2f} x the 15 s target"
    )
    return 0 if worst_size <= SIZE_TARGET_GB and worst_start <= START_TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

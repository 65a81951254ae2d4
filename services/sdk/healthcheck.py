"""``python -m services.sdk.healthcheck [PORT]``: exit 0 when the local service reports SERVING.

Container healthchecks call it (grpc.health.v1, the same check the orchestrator waits on).
"""
from __future__ import annotations

import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc


def main(argv: list[str]) -> int:
    port = argv[0] if argv else "50051"
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as ch:
            status = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=3).status
    except grpc.RpcError as e:
        print(f"not serving: {e.code().name}", file=sys.stderr)
        return 1
    if status != health_pb2.HealthCheckResponse.SERVING:
        print(f"not serving: {health_pb2.HealthCheckResponse.ServingStatus.Name(status)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""``python -m voxarena.sdk.healthcheck [PORT]``: exit 0 when the local service reports SERVING.

Container healthchecks call it (grpc.health.v1, the same check the orchestrator waits on). When the
service serves TLS (``VOXARENA_TLS_CERT``), it connects with TLS, trusting ``VOXARENA_TLS_CA`` (else the
client CA), and under mTLS presents the service's own certificate, which the CA issued for both
server and client use (``make certs``). Health needs no token.
"""

from __future__ import annotations

import os
import sys

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from voxarena.transport import ENV_CERT, ENV_CLIENT_CA, ENV_KEY, ClientSecurity

ENV_CA = "VOXARENA_TLS_CA"


def _security() -> ClientSecurity:
    if not os.environ.get(ENV_CERT):
        return ClientSecurity()
    mtls = bool(os.environ.get(ENV_CLIENT_CA))
    return ClientSecurity.from_settings(
        ca=os.environ.get(ENV_CA) or os.environ.get(ENV_CLIENT_CA) or None,
        cert=os.environ[ENV_CERT] if mtls else None,
        key=os.environ.get(ENV_KEY) if mtls else None,
        server_name="localhost",
        tls=True,
    )


def main(argv: list[str]) -> int:
    port = argv[0] if argv else "50051"
    try:
        with _security().channel(f"127.0.0.1:{port}") as ch:
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

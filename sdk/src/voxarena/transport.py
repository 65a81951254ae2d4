"""Transport security for every party: TLS, mutual TLS and bearer tokens (server and client sides).

A service is plaintext unless given a certificate and key (``--tls-cert``/``--tls-key``, or the
``VOXARENA_TLS_CERT``/``VOXARENA_TLS_KEY`` environment variables in containers); with a client CA
(``--tls-client-ca`` / ``VOXARENA_TLS_CLIENT_CA``) it also demands a client certificate signed by that
CA (mTLS). With a token in the environment variable named by ``--token-env`` (default
``VOXARENA_TOKEN``), every call but the health check must carry ``authorization: Bearer <token>``;
the comparison is constant-time, and the token is never logged. The token is read from the
environment, never from the command line, where ``ps`` would show it.

A client (the orchestrator, conformance, the container healthcheck) describes its side with
``ClientSecurity``: the CA to trust, its own certificate and key for mTLS, the token, and the name
the server's certificate must carry when it differs from the address's host. Call credentials need
a secure channel: gRPC never sends a token over plaintext, and neither does this module.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

import grpc

ENV_CERT, ENV_KEY, ENV_CLIENT_CA = "VOXARENA_TLS_CERT", "VOXARENA_TLS_KEY", "VOXARENA_TLS_CLIENT_CA"
DEFAULT_TOKEN_ENV = "VOXARENA_TOKEN"
# The health check stays open: orchestrators, compose and Kubernetes probes poll it without a token.
UNAUTHENTICATED_METHODS = ("/grpc.health.v1.Health/",)


class TransportConfigError(ValueError):
    """A TLS or token setting that cannot work (missing file, key without certificate, token over plaintext)."""


def _read(path: str | Path | None, what: str) -> bytes | None:
    if not path:
        return None
    try:
        return Path(path).read_bytes()
    except OSError as e:
        raise TransportConfigError(f"{what} {path}: {e.strerror or e}") from None


@dataclass(frozen=True)
class ServerSecurity:
    cert: bytes | None = None
    key: bytes | None = None
    client_ca: bytes | None = None
    token: str | None = None

    @classmethod
    def from_settings(
        cls, cert: str | None, key: str | None, client_ca: str | None, token_env: str | None = DEFAULT_TOKEN_ENV
    ) -> ServerSecurity:
        """From paths (command line, falling back to the environment variables) and the token's variable."""
        cert = cert or os.environ.get(ENV_CERT) or None
        key = key or os.environ.get(ENV_KEY) or None
        client_ca = client_ca or os.environ.get(ENV_CLIENT_CA) or None
        if bool(cert) != bool(key):
            raise TransportConfigError("TLS needs both a certificate (--tls-cert) and its key (--tls-key)")
        if client_ca and not cert:
            raise TransportConfigError("--tls-client-ca (mutual TLS) needs --tls-cert and --tls-key")
        token = os.environ.get(token_env) if token_env else None
        return cls(
            _read(cert, "TLS certificate"), _read(key, "TLS key"), _read(client_ca, "TLS client CA"), token or None
        )

    @property
    def tls(self) -> bool:
        return self.cert is not None

    def credentials(self) -> grpc.ServerCredentials | None:
        if self.cert is None:
            return None
        if self.key is None:
            raise TransportConfigError("a TLS certificate needs its private key (--tls-key)")
        return grpc.ssl_server_credentials(
            [(self.key, self.cert)], root_certificates=self.client_ca, require_client_auth=self.client_ca is not None
        )

    def interceptors(self) -> list[grpc.ServerInterceptor]:
        return [BearerTokenInterceptor(self.token)] if self.token else []

    def describe(self) -> str:
        mode = "mTLS" if self.client_ca else "TLS" if self.tls else "plaintext"
        return mode + (" + bearer token" if self.token else "")


if TYPE_CHECKING:  # grpc's classes are not generic at run time
    # A handler of any of the four call shapes, as grpc passes it to interceptors.
    MethodHandler: TypeAlias = grpc.RpcMethodHandler[Any, Any]
    Continuation: TypeAlias = Callable[[grpc.HandlerCallDetails], MethodHandler | None]


class BearerTokenInterceptor(grpc.ServerInterceptor):  # type: ignore[misc]  # grpc ships no type stubs
    """UNAUTHENTICATED for a call without the right ``authorization: Bearer`` metadata (health exempt)."""

    def __init__(self, token: str) -> None:
        self._expected = f"Bearer {token}".encode()

    def intercept_service(
        self, continuation: Continuation, handler_call_details: grpc.HandlerCallDetails
    ) -> MethodHandler | None:
        if handler_call_details.method.startswith(UNAUTHENTICATED_METHODS):
            return continuation(handler_call_details)
        sent = dict(handler_call_details.invocation_metadata or ()).get("authorization", "")
        if hmac.compare_digest(sent.encode() if isinstance(sent, str) else sent, self._expected):
            return continuation(handler_call_details)
        return _refusal(continuation(handler_call_details))


def _refusal(handler: MethodHandler | None) -> MethodHandler | None:
    def deny(request: object, context: grpc.ServicerContext) -> None:
        context.abort(grpc.StatusCode.UNAUTHENTICATED, "missing or wrong bearer token")

    if handler is None:
        return None
    if handler.unary_unary is not None:
        return grpc.unary_unary_rpc_method_handler(deny, request_deserializer=handler.request_deserializer)
    if handler.unary_stream is not None:
        return grpc.unary_stream_rpc_method_handler(deny, request_deserializer=handler.request_deserializer)
    if handler.stream_unary is not None:
        return grpc.stream_unary_rpc_method_handler(deny, request_deserializer=handler.request_deserializer)
    return grpc.stream_stream_rpc_method_handler(deny, request_deserializer=handler.request_deserializer)


@dataclass(frozen=True)
class ClientSecurity:
    ca: bytes | None = None  # trust this CA (None with tls: the system roots)
    cert: bytes | None = None  # client certificate for mTLS
    key: bytes | None = None
    token: str | None = None
    server_name: str | None = None  # name the server certificate must carry, if not the address's host
    tls: bool = False

    @classmethod
    def from_settings(
        cls,
        ca: str | None = None,
        cert: str | None = None,
        key: str | None = None,
        token_env: str | None = None,
        server_name: str | None = None,
        tls: bool | None = None,
    ) -> ClientSecurity:
        if bool(cert) != bool(key):
            raise TransportConfigError("a client certificate (mTLS) needs both cert and key")
        token = None
        if token_env:
            token = os.environ.get(token_env)
            if not token:
                raise TransportConfigError(f"token_env: environment variable {token_env} is not set or empty")
        use_tls = bool(ca or cert or server_name) if tls is None else tls
        if token and not use_tls:
            raise TransportConfigError("a bearer token needs TLS (tls: {ca: ...}); it is never sent in plaintext")
        return cls(
            _read(ca, "TLS CA"),
            _read(cert, "TLS client certificate"),
            _read(key, "TLS client key"),
            token,
            server_name or None,
            use_tls,
        )

    def channel(self, address: str, options: list[tuple[str, object]] | None = None) -> grpc.Channel:
        options = list(options or [])
        if not self.tls:
            return grpc.insecure_channel(address, options=options)
        creds = grpc.ssl_channel_credentials(
            root_certificates=self.ca, private_key=self.key, certificate_chain=self.cert
        )
        if self.token:
            creds = grpc.composite_channel_credentials(creds, grpc.access_token_call_credentials(self.token))
        if self.server_name:
            options.append(("grpc.ssl_target_name_override", self.server_name))
        return grpc.secure_channel(address, creds, options=options)

    def __repr__(self) -> str:  # never print the token or key material
        return f"ClientSecurity(tls={self.tls}, mtls={self.cert is not None}, token={'set' if self.token else 'none'})"


PLAINTEXT = ClientSecurity()

"""TLS, mutual TLS and bearer tokens, with certificates made at test time by compose/tls/make-certs.sh.

Each case talks to a real server on a free port: plaintext to a TLS server is refused, a client that
trusts another CA is refused, a missing or wrong token is UNAUTHENTICATED, the right ones are served,
and the health check stays open without a token.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from voxarena.sdk.testing import serve_in_process
from voxarena.services.testing.dummy_generator import DummyGenerator
from voxarena.transport import ClientSecurity, ServerSecurity, TransportConfigError
from voxarena.v1 import common_pb2, generator_pb2_grpc

MAKE_CERTS = Path(__file__).resolve().parents[2] / "compose" / "tls" / "make-certs.sh"
TOKEN = "s3cret-token-for-tests"


@pytest.fixture(scope="module")
def certs(tmp_path_factory) -> dict[str, Path]:
    good, other = tmp_path_factory.mktemp("ca"), tmp_path_factory.mktemp("other-ca")
    for d in (good, other):
        subprocess.run(["bash", str(MAKE_CERTS), str(d), "dummy-generator"], check=True, capture_output=True)
    return {"dir": good, "other": other}


def _serve(d: Path, model=None, **security):
    """``model`` (a DummyGenerator) served with ``_server_security(d, **security)``, loaded and SERVING; its
    readiness is read over TLS trusting ``d``'s CA, with its client certificate."""
    client = ClientSecurity.from_settings(ca=str(d / "ca.pem"), cert=str(d / "client.pem"), key=str(d / "client.key"))
    served = serve_in_process(
        model or DummyGenerator(), "[::]:0", security=_server_security(d, **security), client=client
    )
    return served.running


def _get_info(port: int, client: ClientSecurity) -> common_pb2.GetInfoResponse:
    with client.channel(f"127.0.0.1:{port}") as ch:
        return generator_pb2_grpc.GeneratorServiceStub(ch).GetInfo(common_pb2.GetInfoRequest(), timeout=5)


def _code(port: int, client: ClientSecurity) -> grpc.StatusCode:
    try:
        _get_info(port, client)
    except grpc.RpcError as e:
        return e.code()
    return grpc.StatusCode.OK


def _server_security(d: Path, mtls: bool = False, token: str | None = None, monkeypatch=None) -> ServerSecurity:
    if token and monkeypatch:
        monkeypatch.setenv("TEST_SERVICE_TOKEN", token)
    return ServerSecurity.from_settings(
        str(d / "server.pem"), str(d / "server.key"), str(d / "ca.pem") if mtls else None, "TEST_SERVICE_TOKEN"
    )


def test_tls_refuses_plaintext_and_a_foreign_ca(certs, monkeypatch):
    monkeypatch.delenv("TEST_SERVICE_TOKEN", raising=False)
    running = _serve(certs["dir"])
    try:
        assert _code(running.port, ClientSecurity()) == grpc.StatusCode.UNAVAILABLE
        foreign = ClientSecurity.from_settings(ca=str(certs["other"] / "ca.pem"))
        assert _code(running.port, foreign) == grpc.StatusCode.UNAVAILABLE
        trusted = ClientSecurity.from_settings(ca=str(certs["dir"] / "ca.pem"))
        assert _get_info(running.port, trusted).model.name == "dummy-generator"
    finally:
        running.server.stop(0)


def test_mtls_demands_a_client_certificate_from_its_ca(certs, monkeypatch):
    monkeypatch.delenv("TEST_SERVICE_TOKEN", raising=False)
    running = _serve(certs["dir"], mtls=True)
    d, other = certs["dir"], certs["other"]
    try:
        no_cert = ClientSecurity.from_settings(ca=str(d / "ca.pem"))
        assert _code(running.port, no_cert) == grpc.StatusCode.UNAVAILABLE
        foreign_cert = ClientSecurity.from_settings(
            ca=str(d / "ca.pem"), cert=str(other / "client.pem"), key=str(other / "client.key")
        )
        assert _code(running.port, foreign_cert) == grpc.StatusCode.UNAVAILABLE
        good = ClientSecurity.from_settings(ca=str(d / "ca.pem"), cert=str(d / "client.pem"), key=str(d / "client.key"))
        assert _get_info(running.port, good).model.name == "dummy-generator"
    finally:
        running.server.stop(0)


def test_bearer_token_is_required_and_health_stays_open(certs, monkeypatch):
    running = _serve(certs["dir"], token=TOKEN, monkeypatch=monkeypatch)
    ca = str(certs["dir"] / "ca.pem")
    try:
        assert _code(running.port, ClientSecurity.from_settings(ca=ca)) == grpc.StatusCode.UNAUTHENTICATED
        monkeypatch.setenv("CLIENT_TOKEN", "wrong-token")
        wrong = ClientSecurity.from_settings(ca=ca, token_env="CLIENT_TOKEN")
        assert _code(running.port, wrong) == grpc.StatusCode.UNAUTHENTICATED
        monkeypatch.setenv("CLIENT_TOKEN", TOKEN)
        right = ClientSecurity.from_settings(ca=ca, token_env="CLIENT_TOKEN")
        assert _get_info(running.port, right).model.name == "dummy-generator"
        with ClientSecurity.from_settings(ca=ca).channel(f"127.0.0.1:{running.port}") as ch:
            status = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(), timeout=5).status
        assert status == health_pb2.HealthCheckResponse.SERVING
    finally:
        running.server.stop(0)


def test_a_token_is_never_sent_in_plaintext_and_settings_are_checked(certs, monkeypatch):
    monkeypatch.setenv("CLIENT_TOKEN", TOKEN)
    with pytest.raises(TransportConfigError, match="never sent in plaintext"):
        ClientSecurity.from_settings(token_env="CLIENT_TOKEN")
    monkeypatch.delenv("UNSET_TOKEN_VAR", raising=False)
    with pytest.raises(TransportConfigError, match="UNSET_TOKEN_VAR is not set"):
        ClientSecurity.from_settings(ca=str(certs["dir"] / "ca.pem"), token_env="UNSET_TOKEN_VAR")
    with pytest.raises(TransportConfigError, match="needs both"):
        ServerSecurity.from_settings(str(certs["dir"] / "server.pem"), None, None, None)
    with pytest.raises(TransportConfigError, match="no-such.pem"):
        ServerSecurity.from_settings("/no-such.pem", "/no-such.key", None, None)
    with pytest.raises(TransportConfigError, match="needs its private key"):
        ServerSecurity(cert=(certs["dir"] / "server.pem").read_bytes()).credentials()
    assert TOKEN not in repr(ClientSecurity.from_settings(ca=str(certs["dir"] / "ca.pem"), token_env="CLIENT_TOKEN"))


def test_service_entry_point_serves_tls_and_its_healthcheck_speaks_it(certs, tmp_path):
    """`python -m ... --tls-cert/--tls-key --tls-client-ca` and the container healthcheck under mTLS."""
    import os
    import sys

    from voxarena.lifecycle import PORT_ANNOUNCEMENT

    d = certs["dir"]
    env = {
        **os.environ,
        "VOXARENA_TLS_CERT": str(d / "server.pem"),
        "VOXARENA_TLS_KEY": str(d / "server.key"),
        "VOXARENA_TLS_CLIENT_CA": str(d / "ca.pem"),
    }
    env.pop("VOXARENA_TOKEN", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "voxarena.services.testing.dummy_generator", "--port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert line.startswith(PORT_ANNOUNCEMENT), line
        port = line[len(PORT_ANNOUNCEMENT) :].strip()
        for _ in range(100):
            check = subprocess.run(
                [sys.executable, "-m", "voxarena.sdk.healthcheck", port], env=env, capture_output=True, text=True
            )
            if check.returncode == 0:
                break
        assert check.returncode == 0, check.stderr
        plain = subprocess.run(
            [sys.executable, "-m", "voxarena.sdk.healthcheck", port],
            env={k: v for k, v in env.items() if not k.startswith("VOXARENA_TLS")},
            capture_output=True,
            text=True,
        )
        assert plain.returncode == 1 and "UNAVAILABLE" in plain.stderr
    finally:
        proc.terminate()
        proc.wait(10)


def test_conformance_speaks_tls_and_tokens(certs, monkeypatch):
    from typer.testing import CliRunner

    from voxarena.orchestrator.cli.app import app

    running = _serve(certs["dir"], mtls=True, token=TOKEN, monkeypatch=monkeypatch)
    d = certs["dir"]
    tls = ["--tls-ca", str(d / "ca.pem"), "--tls-cert", str(d / "client.pem"), "--tls-key", str(d / "client.key")]
    try:
        monkeypatch.setenv("CLIENT_TOKEN", TOKEN)
        result = CliRunner().invoke(
            app, ["conformance", f"127.0.0.1:{running.port}", *tls, "--token-env", "CLIENT_TOKEN"]
        )
        assert result.exit_code == 0, result.output
        monkeypatch.setenv("CLIENT_TOKEN", "wrong")
        result = CliRunner().invoke(
            app, ["conformance", f"127.0.0.1:{running.port}", *tls, "--token-env", "CLIENT_TOKEN"]
        )
        assert result.exit_code == 1 and "UNAUTHENTICATED" in result.output
        result = CliRunner().invoke(app, ["conformance", f"127.0.0.1:{running.port}", "--token-env", "CLIENT_TOKEN"])
        assert result.exit_code == 2 and "never sent in plaintext" in result.output
    finally:
        running.server.stop(0)


def test_a_run_reaches_tls_services_with_tokens_and_records_no_secret(
    certs, monkeypatch, tmp_path, synthetic_dataset, make_config, run_arena, read_csv
):
    from voxarena.orchestrator.run.config import ConfigError, load_config
    from voxarena.services.testing.dummy_detector import DummyDetector

    gen = _serve(certs["dir"], mtls=True, token=TOKEN, monkeypatch=monkeypatch)
    det = _serve(certs["dir"], DummyDetector(), token=TOKEN)
    d = certs["dir"]
    monkeypatch.setenv("ARENA_TOKEN", TOKEN)
    mtls = {"ca": str(d / "ca.pem"), "cert": str(d / "client.pem"), "key": str(d / "client.key")}
    try:
        config = make_config(
            tmp_path,
            synthetic_dataset,
            **{
                "generators.dummy-generator": {
                    "address": f"localhost:{gen.port}",
                    "tls": mtls,
                    "token_env": "ARENA_TOKEN",
                },
                "detectors.dummy-detector": {
                    "address": f"127.0.0.1:{det.port}",
                    "tls": {"ca": str(d / "ca.pem")},
                    "token_env": "ARENA_TOKEN",
                },
            },
        )
        run_arena(config, tmp_path / "run")
        rows = read_csv(tmp_path / "run" / "metrics" / "detection_metrics.csv")
        assert rows and all(r["n_spoof"] != "0" for r in rows)
        stored = "".join(
            p.read_text(errors="replace")
            for p in (tmp_path / "run").rglob("*")
            if p.is_file() and p.suffix in (".json", ".jsonl", ".csv", ".log", ".yaml")
        )
        assert TOKEN not in stored
        bad = make_config(
            tmp_path,
            synthetic_dataset,
            **{"detectors.dummy-detector": {"address": f"127.0.0.1:{det.port}", "token_env": "X"}},
        )
        with pytest.raises(ConfigError, match="token_env: .*over TLS only"):
            load_config(bad)
    finally:
        gen.server.stop(0)
        det.server.stop(0)


def test_the_mtls_override_covers_every_compose_service():
    import yaml

    root = MAKE_CERTS.parents[2]
    services = yaml.safe_load((root / "docker-compose.yml").read_text())["services"]
    override = yaml.safe_load((root / "compose" / "tls" / "docker-compose.mtls.yml").read_text())["services"]
    # Prometheus (profile monitoring) serves no gRPC: it scrapes /metrics over HTTP inside the stack's network.
    assert set(override) == set(services) - {"prometheus"}
    for name in set(services) - {"orchestrator", "prometheus"}:
        assert override[name]["environment"]["VOXARENA_TLS_CLIENT_CA"] == "/tls/ca.pem", name
    assert override["orchestrator"]["environment"]["VOXARENA_CLIENT_TLS_CERT"] == "/tls/client.pem"

"""Failure triage: ``orchestrator status RUN --failed`` and ``orchestrator explain RUN ID`` on a local run
with test doubles that fail (a generator whose CLONE crashes, one that echoes a wrong request id, a
hand-written detector that does too), and the log sources (files, docker SDK fakes, commands)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import docker.errors
import pytest
import soundfile as sf
from typer.testing import CliRunner

from voxarena.orchestrator.cli.app import app
from voxarena.orchestrator.fleet.service_logs import (
    ComposeLog,
    ContainerLog,
    FileLog,
    KubernetesLog,
    LogUnavailable,
    RemoteLog,
    SwarmLog,
    lines_naming,
    log_source,
)
from voxarena.orchestrator.store.triage import RunTables

CRASHING = {
    "module": "voxarena.services.testing.faulty_generator",
    # DEBUG: the SDK then logs every finished call with its request id, not only the errors.
    "args": ["--fault", "clone_crashes", "--log-level", "DEBUG"],
}
RAW_DETECTOR = {
    "module": "voxarena.services.testing.raw_faulty_services",
    "args": ["--role", "detector", "--fault", "wrong_request_id"],
}


@pytest.fixture(scope="module")
def failed_run(tmp_path_factory, synthetic_dataset, make_config, run_arena) -> Path:
    tmp = tmp_path_factory.mktemp("triage")
    config = make_config(
        tmp,
        synthetic_dataset,
        **{
            "dataset.max_items": 3,
            "protocol.seed": 0,
            "protocol.tasks": ["TTS", "CLONE"],
            "generators": {
                "misbehaving-generator": {"parameters": {"modes": "ok,wrong_id"}},
                "faulty-generator": CRASHING,
            },
            "detectors": {"dummy-detector": {}, "raw-detector": RAW_DETECTOR},
            "execution.retries": 0,
        },
    )
    run_arena(config, tmp / "run")
    return tmp / "run"


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def test_status_failed_lists_every_failed_row_with_its_log(failed_run):
    code, out = cli("status", str(failed_run), "--failed")
    assert code == 4  # as `status`: permanent failures only
    header, *lines = out.splitlines()
    assert header.split("\t") == ["stage", "id", "service", "kind", "code", "log", "reason"]
    listed = {tuple(line.split("\t")[:5]) for line in lines}
    failed = [("generation", r) for r in rows(failed_run / "generations.jsonl") if r["status"] != "ok"]
    failed += [("detection", r) for r in rows(failed_run / "detections.jsonl") if r["status"] != "ok"]
    service = {"generation": "generator", "detection": "detector"}
    assert listed == {(s, r["id"], r[service[s]], r["failure"], r["code"]) for s, r in failed}
    crashed = [line.split("\t") for line in lines if line.startswith("generation\tfaulty-generator|CLONE|")]
    log = str(failed_run / "logs" / "faulty-generator.log")
    assert len(crashed) == 3 and all(c[3:6] == ["service_error", "INTERNAL", log] for c in crashed)
    assert {line.split("\t")[3] for line in lines if "\traw-detector\t" in line} == {"invalid_response"}


def test_status_failed_filters_by_stage_and_service(failed_run):
    _, out = cli("status", str(failed_run), "--failed", "--stage", "generation", "--json")
    gens = json.loads(out)["failed"]
    assert gens and {r["stage"] for r in gens} == {"generation"}
    assert {r["service"] for r in gens} == {"faulty-generator", "misbehaving-generator"}
    _, out = cli("status", str(failed_run), "--failed", "--service", "misbehaving-generator", "--json")
    mis = json.loads(out)["failed"]
    assert mis and all(r["service"] == "misbehaving-generator" and r["kind"] == "invalid_response" for r in mis)
    assert all("request_id echo" in r["reason"] for r in mis)
    _, out = cli("status", str(failed_run), "--failed", "--stage", "detection", "--service", "dummy-detector", "--json")
    assert json.loads(out)["failed"] == []
    code, out = cli("status", str(failed_run), "--failed", "--stage", "scoring")
    assert code == 2 and "--stage scoring: not a stage" in " ".join(out.split())


def test_explain_shows_the_row_the_request_and_the_log_lines(failed_run):
    row_id = "faulty-generator|CLONE|syn0-1"
    code, out = cli("explain", str(failed_run), row_id, "--json")
    assert code == 0
    (part,) = json.loads(out)["rows"]
    assert part["stage"] == "generation" and part["row"]["id"] == row_id and part["kind"] == "service_error"
    (sent,) = part["sent"]
    assert sent["method"] == "/voxarena.v1.GeneratorService/Synthesize"
    request = sent["request"]
    assert request["request_id"] == row_id and request["task"] == "CLONE" and request["seed"] == "1"
    # The target speaker's recording as sent: int16 samples, hashed here from the file itself.
    target = part["row"]["speaker_reference"]
    samples, rate = sf.read(sent["inputs"]["reference_audio"]["path"], dtype="int16")
    assert sent["inputs"]["reference_audio"]["what"] == f"target speaker (item {target})"
    assert request["reference_audio"]["sha256"] == hashlib.sha256(samples.astype("<i2").tobytes()).hexdigest()
    assert request["reference_audio"]["sample_rate"] == rate
    (log,) = part["logs"]
    assert log["log"] == str(failed_run / "logs" / "faulty-generator.log")
    texts = [line["text"] for line in log["lines"]]
    assert texts and all(row_id in t for t in texts if "voxarena.service" in t)
    assert any("ERROR" in t for t in texts) and any("speaker encoder failed" in t for t in texts)  # and its traceback
    assert not any("syn0-10" in t or "syn0-1|" in t for t in texts)


def test_explain_prints_it_for_a_reader(failed_run):
    row_id = "raw-detector|misbehaving-generator|TTS|syn0-0"
    code, out = cli("explain", str(failed_run), row_id)
    gen = next(r for r in rows(failed_run / "generations.jsonl") if r["id"] == "misbehaving-generator|TTS|syn0-0")
    assert code == 0 and "detection row (detections.jsonl): invalid_response" in out
    assert "sent to raw-detector: /voxarena.v1.DetectorService/ScoreBatch" in out
    assert f"audio <- spoof clip {gen['id']}: {failed_run / gen['audio']}" in out
    assert f"log of raw-detector: {failed_run / 'logs' / 'raw-detector.log'}" in out
    assert f"search it yourself: grep -F -- '{row_id}'" in out


def test_an_id_shared_by_a_generation_and_its_measurement_explains_both(failed_run):
    code, out = cli("explain", str(failed_run), "misbehaving-generator|TTS|syn0-0", "--json")
    assert code == 0, out
    parts = json.loads(out)["rows"]
    assert [p["stage"] for p in parts] == ["generation", "measurement"]
    assert parts[1]["sent"][0]["method"] == "/voxarena.v1.ScorerService/MeasureClips"
    assert parts[1]["sent"][0]["request"]["request_id"] == "misbehaving-generator|TTS|syn0-0"


def test_an_unknown_id_says_what_ids_look_like_and_names_close_ones(failed_run):
    code, out = cli("explain", str(failed_run), "faulty-generator|CLONE|syn0-9")
    said = " ".join(out.split())
    assert code == 2 and "no row has the id 'faulty-generator|CLONE|syn0-9'" in said
    assert "did you mean: faulty-generator|CLONE|syn0-" in said and "GENERATOR|TASK|ITEM" in said


# ---------------------------------------------------------------------------------------- rows, unit
def write_rows(path: Path, rows_: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows_))


def test_degradation_and_detection_rows_name_the_transform_and_its_request_id(tmp_path):
    noisy = [{"transform": "laundering", "parameters": {"noise": "white"}}]
    failed = {"status": "failed", "failure": "input", "code": "INVALID_ARGUMENT", "reason": "s0: silent"}
    write_rows(tmp_path / "degradations.jsonl", [{"id": "noisy|s0", "condition": "noisy", "clip": "s0", **failed}])
    det = {"id": "det@noisy|s0", "detector": "det", "condition": "noisy", "clip": "s0", **failed}
    write_rows(tmp_path / "detections.jsonl", [det, {**det, "id": "det|s0", "condition": "clean", "status": "ok"}])
    tables = RunTables(tmp_path, {"config": {"conditions": {"noisy": noisy}}})
    (deg,) = tables.failed(stage="degradation")
    assert deg.request_ids == {"laundering": "laundering|noisy|s0"} and deg.label == "noisy"
    (d,) = tables.failed(stage="detection")
    assert d.request_ids == {"det": "det@noisy|s0", "laundering": "laundering|noisy|s0"} and d.label == "det@noisy"
    assert [r.id for r in tables.failed(service="laundering")] == ["noisy|s0", "det@noisy|s0"]
    assert [r.id for r in tables.failed(service="det@noisy")] == ["det@noisy|s0"]


# ---------------------------------------------------------------------------------------- logs, unit
def test_a_request_id_is_matched_as_a_whole_word():
    rid = "gen|TTS|a1"
    lines = [
        f"2025-01-01 10:00:00,000 INFO voxarena.service: call method=/x/Synthesize request_id={rid} code=OK ms=3",
        f"call method=/x/ScoreBatch request_id=det|other,{rid},det|more code=OK ms=1",
        f"{rid}: internal error",
        f"call method=/x/Synthesize request_id={rid}|i2d2 code=OK ms=3",  # a later I2D iteration
        f"call method=/x/ScoreBatch request_id=det|{rid} code=OK ms=3",  # a detection of the clip
        f"call method=/x/Synthesize request_id={rid}0 code=OK ms=3",  # another item
        f"echo '{rid}-x' != sent",
    ]
    assert [n for n, _ in lines_naming(lines, [rid])] == [1, 2, 3]


def test_an_error_line_comes_with_its_traceback_and_nothing_after():
    lines = [
        "2025-01-01 10:00:00,000 ERROR voxarena.service: /x/Synthesize g|T|a failed",
        "Traceback (most recent call last):",
        '  File "model.py", line 3, in synthesize',
        "RuntimeError: boom",
        "2025-01-01 10:00:00,001 DEBUG voxarena.service: /x/Synthesize g|T|b OK 1 ms",
        "2025-01-01 10:00:00,002 INFO voxarena.service: g|T|a retried",
        "plain output of the model",
    ]
    assert [n for n, _ in lines_naming(lines, ["g|T|a"])] == [1, 2, 3, 4, 6]


class FakeContainer:
    """What the SDK's ``Container`` offers that the log sources use."""

    def __init__(self, name: str, log: bytes) -> None:
        self.name, self._log = name, log

    def logs(self, stdout: bool = True, stderr: bool = True) -> bytes:
        return self._log


class FakeContainers:
    def __init__(self, containers: list[FakeContainer], labels: dict[str, str]) -> None:
        self._containers, self._labels = containers, labels
        self.asked: list[dict] = []

    def list(self, all: bool = False, filters: dict | None = None) -> list[FakeContainer]:
        self.asked.append(dict(filters or {}))
        wanted = (filters or {}).get("label", "")
        return [c for c in self._containers if self._labels[c.name] == wanted]

    def get(self, name: str) -> FakeContainer:
        for c in self._containers:
            if c.name == name:
                return c
        raise docker.errors.NotFound(f"No such container: {name}")


class FakeService:
    def __init__(self, name: str, chunks: list[bytes]) -> None:
        self.name, self._chunks = name, chunks

    def logs(self, stdout: bool = True, stderr: bool = True):
        return iter(self._chunks)


class FakeClient:
    def __init__(self, containers: FakeContainers, services: list[FakeService] | None = None) -> None:
        self.containers = containers
        self._services = services or []
        self.services = self

    def list(self, filters: dict | None = None) -> list[FakeService]:  # client.services.list
        return [s for s in self._services if (filters or {}).get("name", "") in s.name]


LINE = "call method=/voxarena.v1.DetectorService/ScoreBatch request_id=aasist|c1,aasist|c2 code=OK ms=9"


def test_the_compose_log_reads_every_replica_through_the_docker_sdk():
    replicas = [FakeContainer("arena-aasist-1", f"{LINE}\nother\n".encode()), FakeContainer("arena-aasist-2", b"x\n")]
    labels = {
        "arena-aasist-1": "com.docker.compose.service=aasist",
        "arena-aasist-2": "com.docker.compose.service=aasist",
    }
    containers = FakeContainers(
        [*replicas, FakeContainer("arena-scorer-1", LINE.encode())],
        {**labels, "arena-scorer-1": "com.docker.compose.service=scorer"},
    )
    source = ComposeLog("aasist", lambda: FakeClient(containers))
    assert source.lines() == [f"arena-aasist-1 | {LINE}", "arena-aasist-1 | other", "arena-aasist-2 | x"]
    assert containers.asked == [{"label": "com.docker.compose.service=aasist"}]
    assert lines_naming(source.lines(), ["aasist|c2"]) == [(1, f"arena-aasist-1 | {LINE}")]
    assert source.where() == "docker-compose logs --no-color aasist"
    with pytest.raises(LogUnavailable, match="no container of the compose service 'rawnet2'"):
        ComposeLog("rawnet2", lambda: FakeClient(containers)).lines()


def test_a_launched_container_and_a_swarm_service_through_the_docker_sdk():
    containers = FakeContainers([FakeContainer("voxarena-ab12-aasist", LINE.encode())], {})
    container = ContainerLog("aasist", "voxarena-ab12-aasist", lambda: FakeClient(containers))
    assert container.lines() == [LINE] and container.where() == "docker logs voxarena-ab12-aasist"
    with pytest.raises(LogUnavailable, match="No such container"):
        ContainerLog("aasist", "gone", lambda: FakeClient(containers)).lines()
    services = [FakeService("voxarena_aasist", [LINE.encode()[:20], LINE.encode()[20:] + b"\n"])]
    swarm = SwarmLog("aasist", lambda: FakeClient(containers, services))
    assert swarm.lines() == [LINE] and swarm.where() == "docker service logs --raw voxarena_aasist"


def test_where_the_log_is_follows_run_json(tmp_path):
    def record(mode: str, address: str, stack: str = "compose", **extra) -> dict:
        return {"stack": stack, "services": {"svc": {"mode": mode, "address": address, **extra}}}

    local = log_source(tmp_path, record("local", "local", "local"), "svc")
    assert isinstance(local, FileLog) and local.path == tmp_path / "logs" / "svc.log"
    image = record("image", "172.18.0.2:50051", "local", image={"container": {"name": "voxarena-ab-svc"}})
    assert isinstance(log_source(tmp_path, image, "svc"), ContainerLog)  # the run is still going
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "svc.log").write_text("kept when the run stopped it\n")
    assert isinstance(log_source(tmp_path, image, "svc"), FileLog)
    compose = record("remote", "dns:///svc:50051")
    assert isinstance(log_source(tmp_path, compose, "svc", "compose"), ComposeLog)
    assert isinstance(log_source(tmp_path, compose, "svc", "swarm"), SwarmLog)
    k8s = log_source(tmp_path, compose, "svc", "kubernetes")
    assert isinstance(k8s, KubernetesLog)
    assert k8s.where() == "kubectl logs -n voxarena -l app.kubernetes.io/name=svc --all-containers --prefix --tail=-1"
    with pytest.raises(LogUnavailable, match="kubectl logs"):
        k8s.lines()
    remote = log_source(tmp_path, record("remote", "models.example.org:443"), "svc")
    assert isinstance(remote, RemoteLog) and "models.example.org:443" in remote.where()
    with pytest.raises(ValueError, match="unknown platform 'nomad'"):
        log_source(tmp_path, compose, "svc", "nomad")


def test_no_docker_daemon_is_said_not_raised():
    def refuse():
        raise docker.errors.DockerException("Error while fetching server API version")

    with pytest.raises(LogUnavailable, match="fetching server API version"):
        ComposeLog("aasist", refuse).lines()


def test_a_missing_log_file_is_said(tmp_path):
    with pytest.raises(LogUnavailable, match="svc.log"):
        FileLog("svc", tmp_path / "svc.log").lines()

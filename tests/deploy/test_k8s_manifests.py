"""deploy/k8s against the catalogue, docker-compose.yml and the Kubernetes API schemas, offline.

The committed tree is ``make generate``'s output (tests/deploy/test_generate.py); every document listed by
a kustomization validates strictly (``kubernetes_validate``) against the oldest API it targets (1.31:
podFailurePolicy GA) and the newest the package ships; with kubectl on PATH, every buildable kustomization is rendered
(``kubectl kustomize``) and its output validated too. No cluster: nothing here is applied.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from voxarena.catalogue import PORT, SERVICES

REPO = Path(__file__).resolve().parents[2]
K8S = REPO / "deploy" / "k8s"
VERSIONS = ("1.31.0", "1.37.0")
MODELS = [s for s in SERVICES if s.role != "orchestrator"]
BY_NAME = {s.name: s for s in SERVICES}
COMPOSE = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
HARDENED = {
    "runAsNonRoot": True,
    "runAsUser": 10001,
    "runAsGroup": 10001,
    "readOnlyRootFilesystem": True,
    "allowPrivilegeEscalation": False,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}


@cache  # the tree is read, never written, by these tests
def kustomizations() -> dict[Path, dict]:
    return {p.parent: yaml.safe_load(p.read_text()) for p in sorted(K8S.rglob("kustomization.yaml"))}


def resource_files(folder: Path, kustomization: dict) -> list[Path]:
    """The files (not folders) a kustomization lists as resources."""
    return [folder / r for r in kustomization.get("resources", []) if (folder / r).is_file()]


def documents(path: Path) -> list[dict]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


@cache
def listed_documents() -> list[tuple[Path, dict]]:
    return [(f, d) for folder, k in kustomizations().items() for f in resource_files(folder, k) for d in documents(f)]


def find(kind: str, name: str, folder: str) -> dict:
    docs = [d for f in resource_files(K8S / folder, kustomizations()[K8S / folder]) for d in documents(f)]
    found = [d for d in docs if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(found) == 1, f"{folder}: {len(found)} {kind} named {name}"
    return found[0]


def selects(selector: dict, labels: dict[str, str]) -> bool:
    """Kubernetes label-selector semantics (matchLabels and matchExpressions; {} selects everything)."""
    if any(labels.get(k) != v for k, v in selector.get("matchLabels", {}).items()):
        return False
    for e in selector.get("matchExpressions", []):
        value, op = labels.get(e["key"]), e["operator"]
        ok = {
            "In": value in e.get("values", []),
            "NotIn": value not in e.get("values", []),
            "Exists": e["key"] in labels,
            "DoesNotExist": e["key"] not in labels,
        }[op]
        if not ok:
            return False
    return True


# ------------------------------------------------------------------------------------- the tree itself
def test_every_file_is_listed_by_a_kustomization_and_every_listed_path_exists():
    listed: set[Path] = set()
    for folder, k in kustomizations().items():
        for entry in k.get("resources", []):
            path = (folder / entry).resolve()
            assert path.is_file() or (path / "kustomization.yaml").is_file(), f"{folder}: resource {entry} missing"
            listed.add(path)
        for entry in k.get("components", []):
            component = yaml.safe_load(((folder / entry) / "kustomization.yaml").read_text())
            assert component["kind"] == "Component", f"{folder}: {entry} is not a kustomize Component"
    files = {p.resolve() for p in K8S.rglob("*") if p.is_file() and p.name not in ("kustomization.yaml", "README.md")}
    assert sorted(str(p.relative_to(K8S)) for p in files - listed) == [], "files no kustomization lists"


@pytest.mark.parametrize("version", VERSIONS)
def test_every_listed_document_validates_against_the_api_schemas(version):
    docs = listed_documents()
    assert len(docs) > 2 * len(MODELS)
    errors = []
    for path, doc in docs:
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except (kubernetes_validate.ValidationError, kubernetes_validate.SchemaNotFoundError) as e:
            errors.append(f"{path.relative_to(K8S)}: {doc['kind']}/{doc['metadata']['name']}: {e}")
    assert errors == []


def kubectl_kustomize(folder: Path) -> list[dict]:
    out = subprocess.run(["kubectl", "kustomize", str(folder)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, f"kubectl kustomize {folder.relative_to(K8S)}: {out.stderr}"
    return [d for d in yaml.safe_load_all(out.stdout) if d]


BUILDABLE = [str(f.relative_to(K8S)) for f, k in kustomizations().items() if k["kind"] == "Kustomization"]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl (its built-in kustomize) is not installed")
@pytest.mark.parametrize("folder", BUILDABLE)
def test_every_kustomization_builds_and_its_output_validates(folder):
    rendered = kubectl_kustomize(K8S / folder)
    listed = [d for _, d in listed_documents()]
    for doc in rendered:
        if doc not in listed:  # what kustomize changed (a patch, an image, a namespace): validated here
            kubernetes_validate.validate(doc, VERSIONS[-1], strict=True)
        assert doc["kind"] == "Namespace" or doc["metadata"]["namespace"] == "voxarena", doc["metadata"]["name"]
    names = {(d["kind"], d["metadata"]["name"]) for d in rendered}
    if folder == "overlays/sharded":  # the Indexed Job replaces the single one, on a claim every node mounts
        assert ("Job", "arena-shards") in names and ("Job", "arena") not in names
        (runs,) = [d for d in rendered if d["metadata"]["name"] == "voxarena-runs"]
        assert runs["spec"]["accessModes"] == ["ReadWriteMany"]
    if folder == "overlays/all-services":
        assert {("Deployment", s.name) for s in MODELS} <= names


# ----------------------------------------------------------------------------------- the model services
def compose_limits(name: str) -> dict[str, str]:
    """docker-compose.yml's cpus / mem_limit in Kubernetes quantities (compose's g is GiB)."""
    mem = COMPOSE[name]["mem_limit"]
    assert mem.endswith("g"), f"{name}: mem_limit {mem} (this test reads whole GiB only)"
    return {"cpu": f"{COMPOSE[name]['cpus']:g}", "memory": f"{mem[:-1]}Gi"}


@pytest.mark.parametrize("name", [s.name for s in MODELS])
def test_every_catalogued_service_has_a_probed_hardened_deployment_and_a_headless_service(name):
    svc = BY_NAME[name]
    folder = "base" if svc.compose_profile is None else f"components/{svc.compose_profile}"
    deployment, service = find("Deployment", name, folder), find("Service", name, folder)
    pod = deployment["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    assert container["image"] == svc.image and container["imagePullPolicy"] == "IfNotPresent"
    for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
        assert container.get(probe, {}).get("grpc") == {"port": PORT}, f"{name}: {probe} missing or not grpc on {PORT}"
    assert container["resources"]["limits"] == compose_limits(name)
    assert set(container["resources"]["requests"]) == {"cpu", "memory"}
    assert container["securityContext"] == HARDENED
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert pod["spec"]["automountServiceAccountToken"] is False
    tmp = [m for m in container["volumeMounts"] if m["mountPath"] == "/tmp"]
    assert tmp and any(v["name"] == tmp[0]["name"] and "emptyDir" in v for v in pod["spec"]["volumes"])
    assert service["spec"]["clusterIP"] == "None"
    assert [(p["name"], p["port"]) for p in service["spec"]["ports"]] == [("grpc", PORT)]
    assert selects({"matchLabels": service["spec"]["selector"]}, pod["metadata"]["labels"])
    assert selects(deployment["spec"]["selector"], pod["metadata"]["labels"])


def test_optional_services_are_not_in_base_and_every_component_is_in_all_services():
    deployments = [(f.parent, d["metadata"]["name"]) for f, d in listed_documents() if d["kind"] == "Deployment"]
    assert {name for folder, name in deployments if folder == K8S / "base"} == {
        s.name for s in MODELS if s.compose_profile is None
    }
    assert sorted(name for _, name in deployments) == sorted(s.name for s in MODELS)
    overlay = kustomizations()[K8S / "overlays" / "all-services"]
    assert sorted(overlay["components"]) == sorted(
        {f"../../components/{s.compose_profile}" for s in MODELS if s.compose_profile}
    )


# ------------------------------------------------------------------------------------------- the network
def policies() -> list[dict]:
    return [d for _, d in listed_documents() if d["kind"] == "NetworkPolicy"]


def allowed(labels: dict[str, str], direction: str) -> list[dict] | None:
    """The union of the rules of every policy selecting the pod in ``direction`` (None: not isolated)."""
    governing = [
        p for p in policies() if selects(p["spec"]["podSelector"], labels) and direction in p["spec"]["policyTypes"]
    ]
    if not governing:
        return None
    return [rule for p in governing for rule in p["spec"].get(direction.lower(), [])]


def pod_labels(kind: str) -> list[dict[str, str]]:
    docs = [d for _, d in listed_documents() if d["kind"] == kind]
    if kind == "CronJob":
        return [d["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"] for d in docs]
    return [d["spec"]["template"]["metadata"]["labels"] for d in docs]


def test_model_pods_send_nothing_and_take_only_the_orchestrators_grpc():
    orchestrators = pod_labels("Job") + pod_labels("CronJob")
    models = pod_labels("Deployment")
    assert len(models) == len(MODELS) and orchestrators
    for labels in models:
        name = labels["app.kubernetes.io/name"]
        assert allowed(labels, "Egress") == [], f"{name}: egress allowed"
        ingress = allowed(labels, "Ingress")
        assert ingress, f"{name}: not reachable (or not isolated)"
        for rule in ingress:
            assert rule["ports"] == [{"protocol": "TCP", "port": PORT}], name
            for peer in rule["from"]:
                assert set(peer) == {"podSelector"}, f"{name}: ingress from {peer}"
                assert not any(selects(peer["podSelector"], m) for m in models), f"{name}: ingress from a model"
                assert all(selects(peer["podSelector"], o) for o in orchestrators), name


def test_the_orchestrator_reaches_the_models_and_dns_only():
    models = pod_labels("Deployment")
    for labels in pod_labels("Job") + pod_labels("CronJob"):
        assert allowed(labels, "Ingress") == []
        for rule in allowed(labels, "Egress") or pytest.fail("orchestrator egress not isolated"):
            ports = {(p["protocol"], p["port"]) for p in rule["ports"]}
            if ports == {("TCP", PORT)}:
                assert all(set(peer) == {"podSelector"} for peer in rule["to"])
                assert all(any(selects(peer["podSelector"], m) for peer in rule["to"]) for m in models)
            else:
                assert ports == {("UDP", 53), ("TCP", 53)}, rule
                assert [peer["podSelector"] for peer in rule["to"]] == [{"matchLabels": {"k8s-app": "kube-dns"}}]


def test_anything_else_in_the_namespace_is_denied_both_ways():
    stranger = {"app.kubernetes.io/name": "debug-shell"}
    assert allowed(stranger, "Ingress") == [] and allowed(stranger, "Egress") == []


# ---------------------------------------------------------------------------------- the orchestrator pods
def orchestrator_pods() -> dict[str, dict]:
    pods = {}
    for _, d in listed_documents():
        if d["kind"] == "Job":
            pods[d["metadata"]["name"]] = d["spec"]["template"]
        elif d["kind"] == "CronJob":
            pods[d["metadata"]["name"]] = d["spec"]["jobTemplate"]["spec"]["template"]
    return pods


@pytest.mark.parametrize("job", ["arena", "nightly", "arena-shards", "arena-merge"])
def test_orchestrator_pods_mount_what_the_compose_orchestrator_does(job):
    """configs/ read-only, runs/ writable, the speech data read-only: the compose container's paths."""
    pod = orchestrator_pods()[job]
    (container,) = pod["spec"]["containers"]
    assert container["image"] == BY_NAME["orchestrator"].image and container["securityContext"] == HARDENED
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["spec"]["volumes"]}
    # SOURCE:PATH[:ro], SOURCE possibly ${VAR:-default}: the container path is the last field but ro
    compose = {v.removesuffix(":ro").rsplit(":", 1)[1]: v.endswith(":ro") for v in COMPOSE["orchestrator"]["volumes"]}
    for path, read_only in compose.items():
        mount = mounts[path if path.startswith("/") else f"{container['workingDir']}/{path}"]
        assert mount.get("readOnly", False) == read_only, f"{job}: {path}"
        claim = volumes[mount["name"]].get("persistentVolumeClaim")
        assert claim is None or claim.get("readOnly", False) == read_only, f"{job}: {path}"
    env = {e["name"]: e["value"] for e in container["env"]}
    assert {k: env[k] for k in COMPOSE["orchestrator"]["environment"]} == COMPOSE["orchestrator"]["environment"]


def test_the_jobs_config_reads_the_speech_data_from_the_mounted_claim(tmp_path, monkeypatch):
    from voxarena.orchestrator.run.config import load_config

    configmap = find("ConfigMap", "voxarena-arena-config", "base")
    pod = orchestrator_pods()["arena"]
    (container,) = pod["spec"]["containers"]
    config_arg = container["args"][1]
    (tmp_path / config_arg).parent.mkdir(parents=True)
    (tmp_path / config_arg).write_text(configmap["data"][Path(config_arg).name])
    env = {e["name"]: e["value"] for e in container["env"]}
    monkeypatch.setenv("VOXARENA_SPEECH", env["VOXARENA_SPEECH"])
    cfg = load_config(tmp_path / config_arg)
    speech = next(m["mountPath"] for m in container["volumeMounts"] if m["name"] == "speech")
    assert str(cfg.dataset.root).startswith(speech + "/"), cfg.dataset.root


def test_the_run_job_retries_an_incomplete_run_but_not_permanent_failures():
    spec = find("Job", "arena", "base")["spec"]
    rules: list[dict[str, Any]] = spec["podFailurePolicy"]["rules"]
    from voxarena.orchestrator.store.outcome import EXIT_PERMANENT

    fail = [r for r in rules if r["action"] == "FailJob"]
    # EXIT_RETRY (a rerun has work) counts against backoffLimit and is retried; a rerun redoes no permanent failure
    assert [r["onExitCodes"]["values"] for r in fail] == [[EXIT_PERMANENT]]
    assert spec["backoffLimit"] >= 1 and spec["template"]["spec"]["restartPolicy"] == "Never"


@pytest.mark.parametrize("job", ["arena", "arena-shards", "arena-merge"])
def test_the_jobs_arguments_are_a_valid_orchestrator_command_line(job):
    """Parsed by the orchestrator's own CLI (click): an unknown option or a missing argument fails here."""
    import typer

    from voxarena.orchestrator.cli.app import app

    (container,) = orchestrator_pods()[job]["spec"]["containers"]
    assert "command" not in container  # the image's ENTRYPOINT, orchestrator
    args = [a.replace("$(JOB_COMPLETION_INDEX)", "3") for a in container["args"]]
    group = typer.main.get_command(app)  # a click group (typer's own click, whichever it is)
    with group.make_context("orchestrator", list(args)) as ctx:
        command = group.get_command(ctx, args[0])
        assert command is not None, f"{job}: no command {args[0]}"
        params = command.make_context(args[0], args[1:], parent=ctx).params
    if job == "arena-shards":  # K/N with N the Job's completions; K is the pod's index
        spec = find("Job", "arena-shards", "overlays/sharded")["spec"]
        assert params["shard"] == f"3/{spec['completions']}" and spec["completionMode"] == "Indexed"
    if job == "arena-merge":  # every shard the Indexed Job writes, merged into the single Job's run directory
        spec = find("Job", "arena-shards", "overlays/sharded")["spec"]
        (shard_out,) = [a for a in orchestrator_pods()["arena-shards"]["spec"]["containers"][0]["args"] if "$(" in a][
            :1
        ]
        expected = [Path(shard_out.replace("$(JOB_COMPLETION_INDEX)", str(k))) for k in range(spec["completions"])]
        assert params["shard_dirs"] == expected
        assert params["out"] == Path(orchestrator_pods()["arena"]["spec"]["containers"][0]["args"][3])


def test_the_nightly_cronjob_runs_nightly_sh_against_the_running_services(tmp_path):
    """The CronJob's command, arguments, environment and script mount, run with bash against a stub
    ``orchestrator`` that logs its arguments: a first night pins the baseline, a second compares."""
    cronjob = find("CronJob", "nightly", "base")
    pod = cronjob["spec"]["jobTemplate"]["spec"]["template"]
    (container,) = pod["spec"]["containers"]
    work = container["workingDir"]
    root = tmp_path / "root"
    for mount in container["volumeMounts"]:
        volume = next(v for v in pod["spec"]["volumes"] if v["name"] == mount["name"])
        if "configMap" in volume:
            configmap = next(
                d
                for _, d in listed_documents()
                if d["kind"] == "ConfigMap" and d["metadata"]["name"] == volume["configMap"]["name"]
            )
            for key, text in configmap["data"].items():
                (root / mount["mountPath"].lstrip("/") / key).parent.mkdir(parents=True, exist_ok=True)
                (root / mount["mountPath"].lstrip("/") / key).write_text(text)
        else:
            (root / mount["mountPath"].lstrip("/")).mkdir(parents=True, exist_ok=True)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls"
    stub = bin_dir / "orchestrator"
    # `run ... --out DIR`: make DIR; everything else: succeed. Log the arguments and the working directory.
    stub.write_text(
        '#!/bin/sh\necho "$PWD $*" >> ' + str(log) + "\n"
        'if [ "$1" = run ]; then while [ "$1" != --out ]; do shift; done; mkdir -p "$2"; fi\n'
    )
    stub.chmod(0o755)
    env = {e["name"]: e["value"] for e in container["env"]}
    command = [c.replace(work, str(root / work.lstrip("/")), 1) for c in container["command"]]
    for night in (1, 2):
        out = subprocess.run(
            [*command, *container["args"]],
            env={**env, "PATH": f"{bin_dir}:{os.environ['PATH']}"},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert out.returncode == 0, f"night {night}: {out.stdout}{out.stderr}"
        if night == 1:
            time.sleep(1.1)  # the next run directory's name is the next second's
    calls = [line.split() for line in log.read_text().splitlines()]
    cwd = str(root / work.lstrip("/"))
    assert [c[0] for c in calls] == [cwd] * len(calls)
    runs = [c for c in calls if c[1] == "run"]
    assert len(runs) == 2
    for call in runs:
        assert call[2:4] == [container["args"][0], "--out"] and call[4].startswith(env["NIGHTLY_DIR"] + "/")
        assert call[-2:] == ["--stack", "compose"]  # services by name, as the compose stack's
    assert [c[1] for c in calls] == ["run", "status", "leaderboard", "run", "status", "compare", "leaderboard"]
    assert (Path(cwd) / env["NIGHTLY_DIR"] / "baseline").is_dir()


def test_read_only_claims_bind_to_existing_data_and_are_mounted_read_only():
    """A ReadOnlyMany claim stands for data made beforehand (speech, a checkpoint): a static PersistentVolume
    (storageClassName ""), never a provisioner's new empty one; every pod mounts it read-only."""
    docs = [d for _, d in listed_documents()]
    read_only = {
        d["metadata"]["name"]
        for d in docs
        if d["kind"] == "PersistentVolumeClaim" and "ReadOnlyMany" in d["spec"]["accessModes"]
    }
    assert {"voxarena-speech", "hf-audio-classifier-model"} <= read_only
    for d in docs:
        if d["kind"] == "PersistentVolumeClaim" and d["metadata"]["name"] in read_only:
            assert d["spec"]["storageClassName"] == "", d["metadata"]["name"]
    templates = [d["spec"]["template"] for d in docs if d["kind"] in ("Deployment", "Job")]
    templates += [d["spec"]["jobTemplate"]["spec"]["template"] for d in docs if d["kind"] == "CronJob"]
    templates += [d for d in docs if d["kind"] == "Pod"]
    for pod in templates:
        for volume in pod["spec"]["volumes"]:
            if volume.get("persistentVolumeClaim", {}).get("claimName") in read_only:
                mounts = [
                    m for c in pod["spec"]["containers"] for m in c["volumeMounts"] if m["name"] == volume["name"]
                ]
                assert volume["persistentVolumeClaim"].get("readOnly") and all(m.get("readOnly") for m in mounts)


def test_the_runs_reader_pod_has_no_network():
    (reader,) = [d for _, d in listed_documents() if d["kind"] == "Pod"]
    labels = reader["metadata"]["labels"]
    assert allowed(labels, "Ingress") == [] and allowed(labels, "Egress") == []
    assert reader["spec"]["containers"][0]["securityContext"] == HARDENED


def test_every_name_is_one_the_api_server_accepts():
    """The schemas do not check names: DNS-1123 subdomains (at most 253), DNS-1035 labels for Services and
    Namespaces, 63 for a label value; a CronJob's name leaves room for its Jobs' suffix (52)."""
    subdomain = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
    label = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
    for path, d in listed_documents():
        name, where = d["metadata"]["name"], f"{path.relative_to(K8S)}: {d['kind']} {d['metadata']['name']!r}"
        assert subdomain.fullmatch(name) and len(name) <= 253, where
        if d["kind"] in ("Service", "Namespace"):
            assert label.fullmatch(name) and len(name) <= 63, where
        if d["kind"] == "CronJob":
            assert len(name) <= 52, where
        for value in d["metadata"].get("labels", {}).values():
            assert re.fullmatch(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]?", value) and len(value) <= 63, where


@pytest.mark.parametrize(
    "change, message",
    [
        ({"read_only": False}, "services.espeak-ng: not read_only with a /tmp tmpfs"),
        ({"mem_limit": "3 gigs"}, "services.espeak-ng.mem_limit: size '3 gigs'"),
        ({"user": "voxarena"}, "services.espeak-ng: user 'voxarena' is not UID:GID"),
        ({"cpus": None}, "services.espeak-ng: no 'cpus'"),
    ],
)
def test_what_compose_says_and_the_pods_cannot_carry_is_an_error_naming_the_service(change, message):
    from voxarena.deploy.k8s import ComposeError, compose_runtime

    entry = {**COMPOSE["espeak-ng"], **change}
    entry = {k: v for k, v in entry.items() if v is not None}
    with pytest.raises(ComposeError, match=re.escape(f"docker-compose.yml: {message}")):
        compose_runtime({"services": {"espeak-ng": entry}}, "espeak-ng")

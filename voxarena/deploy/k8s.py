"""The kustomize tree of the Kubernetes deployment, ``deploy/k8s``, written by ``make generate``.

Which services there are comes from the catalogue (``voxarena/catalogue.py``); how each runs (limits, user,
/tmp, mounts, the orchestrator's environment) from ``docker-compose.yml`` as ``voxarena.deploy.compose``
writes it; the run config of the Job from ``configs/compose-smoke.yaml`` and the nightly comparison from
``compose/nightly/nightly.sh``. Change those and regenerate; ``tests/deploy/test_generate.py`` fails while
the committed tree differs.

The tree (``kubectl apply -k deploy/k8s/base``; deploy/k8s/README.md):
  base/                    namespace, claims, policies, every default model, the orchestrator Job and nightly CronJob
  components/PROFILE/      the services of an opt-in compose profile (nonfree: mbrola, torch: the hf-* adapters)
  overlays/all-services/   base + every component
  overlays/sharded/        base with the single Job replaced by an Indexed Job of SHARDS shards
  overlays/sharded/merge/  the Job that merges the shards, applied once they are complete
  overlays/runs-reader/    a pod holding the runs claim, to copy a run out
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from voxarena.catalogue import Service

from . import k8s_objects as ko
from .compose import COMPOSE_FILE, RUN_CONFIG, orchestrators
from .header import yaml_header
from .k8s_objects import Doc, Runtime

K8S_DIR = "deploy/k8s"
ARENA_CONFIG = RUN_CONFIG  # the Job runs the compose stack's example run
NIGHTLY_SCRIPT = "compose/nightly/nightly.sh"
SHARDS = 4
RUNS_SIZE, SPEECH_SIZE, MODEL_DIR_SIZE = "20Gi", "10Gi", "10Gi"
KUSTOMIZE = "kustomize.config.k8s.io/v1beta1"
HEADER = yaml_header("voxarena/deploy/compose.py", "voxarena/deploy/k8s.py", ARENA_CONFIG, NIGHTLY_SCRIPT)


class ComposeError(ValueError):
    """docker-compose.yml (or nightly.sh) says something the manifests cannot carry over."""


# ----------------------------------------------------------------------------- docker-compose.yml -> Runtime
def _bytes(size: str, where: str) -> int:
    m = re.fullmatch(r"(\d+)([bkmg]?)", str(size).lower())
    if not m:
        raise ComposeError(f"{where}: size {size!r} is not a number with b, k, m or g")
    return int(m.group(1)) * 1024 ** "bkmg".index(m.group(2) or "b")


def _id(value: str, where: str) -> int:
    """A uid or gid, or the default of a ``${VAR:-default}`` one."""
    m = re.fullmatch(r"(\d+)|\$\{\w+:-(\d+)\}", value)
    if not m:
        raise ComposeError(f"{where}: user {value!r} is neither a number nor ${{VAR:-number}}")
    return int(m.group(1) or m.group(2))


def _container_path(volume: str) -> str:
    """The container path of a compose volume ``SOURCE:PATH[:ro]`` (SOURCE may be ``${VAR:-a/default}``)."""
    return volume.removesuffix(":ro").rsplit(":", 1)[1]


def compose_runtime(compose: dict[str, Any], name: str) -> Runtime:
    """How the compose service ``name`` runs: what its pod must match."""
    where = f"{COMPOSE_FILE}: services.{name}"
    try:
        entry = compose["services"][name]
        user = re.fullmatch(r"([^:]+|\$\{[^}]+\}):([^:]+|\$\{[^}]+\})", entry["user"])
        if not user:
            raise ComposeError(f"{where}: user {entry['user']!r} is not UID:GID")
        uid, gid = user.groups()
        tmp = [t for t in entry.get("tmpfs", []) if t.split(":")[0] == "/tmp"]
        if not (entry["read_only"] and tmp):
            raise ComposeError(f"{where}: not read_only with a /tmp tmpfs; the pods are")
        size = re.search(r"size=(\w+)", tmp[0])
        return Runtime(
            cpus=float(entry["cpus"]),
            memory_bytes=_bytes(entry["mem_limit"], f"{where}.mem_limit"),
            uid=_id(uid, where),
            gid=_id(gid, where),
            tmp_bytes=_bytes(size.group(1), f"{where}.tmpfs") if size else None,
            read_only_mounts=tuple(_container_path(v) for v in entry.get("volumes", []) if v.endswith(":ro")),
            environment=tuple((k, str(v)) for k, v in entry.get("environment", {}).items()),
        )
    except KeyError as e:
        raise ComposeError(f"{where}: no {e.args[0]!r}") from None


def nightly_schedule(script: str) -> str:
    """The schedule of the cron line in nightly.sh's header (``#   30 2 * * * cd /path ... nightly.sh``)."""
    m = re.search(r"^#\s+((?:\S+\s+){4}\S+)\s+cd\s.*nightly\.sh", script, re.M)
    if not m:
        raise ComposeError(f"{NIGHTLY_SCRIPT}: no cron line (MIN HOUR DOM MON DOW cd ... nightly.sh) in its header")
    return m.group(1)


# ------------------------------------------------------------------------------------------------ the tree
def _kustomization(resources: list[str], images: list[Service], kind: str = "Kustomization", **more: Any) -> Doc:
    """A kustomization (or a Component: the services of an opt-in profile) listing ``resources``."""
    version = KUSTOMIZE if kind == "Kustomization" else "kustomize.config.k8s.io/v1alpha1"
    doc: Doc = {"apiVersion": version, "kind": kind, **more, "resources": resources}
    if images:
        # Retarget a registry in an overlay: images: [{name: voxarena/NAME, newName: REGISTRY/voxarena/NAME}].
        doc["images"] = [{"name": s.image.split(":")[0], "newTag": s.image.split(":")[1]} for s in images]
    return doc


def _namespace() -> Doc:
    # Pod Security "restricted" is enforced: a pod that loses its hardening is refused by the API server.
    psa = {f"pod-security.kubernetes.io/{mode}": "restricted" for mode in ("enforce", "warn", "audit")}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ko.NAMESPACE, "labels": psa}}


def _configmap(name: str, key: str, text: str) -> Doc:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": ko.metadata(name), "data": {key: text}}


def _run_job_spec() -> Doc:
    """Retries and exit codes of ``orchestrator run`` and ``merge``: 3 (a rerun has work) is retried and resumes; 4
    (permanent failures only) ends the Job, a rerun would redo nothing; an evicted pod does not count."""
    return {
        "backoffLimit": 4,
        "podFailurePolicy": {
            "rules": [
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
                {
                    "action": "FailJob",
                    "onExitCodes": {"containerName": "orchestrator", "operator": "In", "values": [4]},
                },
            ]
        },
    }


def _run_args(out: str) -> list[str]:
    return ["run", f"configs/{ko.ARENA_CONFIG_KEY}", "--out", out, "--no-progress"]


class Tree:
    """The files of the tree, path -> list of documents, built from the catalogue and the compose file
    (parsed); ``source`` is the root the Job's run config and the nightly script are read from."""

    def __init__(self, services: tuple[Service, ...], compose: dict[str, Any], source: Path) -> None:
        self.services = services
        self.repo = source
        self.compose = compose
        self.orchestrator = orchestrators(services)
        self.files: dict[str, list[Doc]] = {}

    def orchestrator_pod(self, instance: str, args: list[str], command: list[str] | None = None) -> Doc:
        rt = compose_runtime(self.compose, self.orchestrator.name)
        return ko.orchestrator_pod(rt, self.orchestrator.image, instance, args, command)

    def build(self) -> dict[str, list[Doc]]:
        models = [s for s in self.services if s.role != "orchestrator"]
        base = [s for s in models if s.compose_profile is None]
        for svc in models:
            folder = "base" if svc in base else f"components/{svc.compose_profile}"
            rt = compose_runtime(self.compose, svc.name)
            claims = [
                ko.claim(ko.mount_claim_name(svc.name, p), "ReadOnlyMany", MODEL_DIR_SIZE, f"{svc.name}'s {p}")
                for p in rt.read_only_mounts
            ]
            self.files[f"{folder}/{svc.name}.yaml"] = ko.model_objects(svc, rt) + claims
        for profile in sorted({s.compose_profile for s in models if s.compose_profile}):
            own = [s for s in models if s.compose_profile == profile]
            doc = _kustomization([f"{s.name}.yaml" for s in own], own, kind="Component")
            self.files[f"components/{profile}/kustomization.yaml"] = [doc]
        self._base(base)
        self._overlays()
        return self.files

    def _base(self, models: list[Service]) -> None:
        speech = f"the speech data (VOXARENA_SPEECH, mounted read-only at {ko.SPEECH_MOUNT})"
        self.files["base/namespace.yaml"] = [_namespace()]
        self.files["base/storage.yaml"] = [
            ko.claim(ko.RUNS_CLAIM, "ReadWriteOnce", RUNS_SIZE, "run directories (runs/ of the compose stack)"),
            ko.claim(ko.SPEECH_CLAIM, "ReadOnlyMany", SPEECH_SIZE, speech),
        ]
        self.files["base/network-policies.yaml"] = ko.network_policies()
        config = (self.repo / ARENA_CONFIG).read_text()
        self.files["base/arena-config.yaml"] = [_configmap(ko.ARENA_CONFIGMAP, ko.ARENA_CONFIG_KEY, config)]
        job = ko.job("arena", self.orchestrator_pod("arena", _run_args("runs/arena")), _run_job_spec())
        self.files["base/orchestrator-job.yaml"] = [job]
        self.files["base/nightly-cronjob.yaml"] = self._nightly()
        resources = [
            "namespace.yaml",
            "storage.yaml",
            "network-policies.yaml",
            *[f"{s.name}.yaml" for s in models],
            "arena-config.yaml",
            "orchestrator-job.yaml",
            "nightly-cronjob.yaml",
        ]
        kustomization = _kustomization(resources, [*models, self.orchestrator], namespace=ko.NAMESPACE)
        self.files["base/kustomization.yaml"] = [kustomization]

    def _nightly(self) -> list[Doc]:
        """nightly.sh inside the orchestrator image on the running stack (STACK=incluster): run, compare with
        the baseline pinned on the runs claim, keep the last 7; exit 1 (a regression) fails the Job."""
        script = Path(NIGHTLY_SCRIPT)
        text = (self.repo / script).read_text()
        folder = f"{ko.WORKDIR}/{script.parent}"
        pod = self.orchestrator_pod("nightly", [f"configs/{ko.ARENA_CONFIG_KEY}"], ["bash", f"{folder}/{script.name}"])
        pod["spec"]["containers"][0]["env"] += [
            {"name": "STACK", "value": "incluster"},
            {"name": "NIGHTLY_DIR", "value": "runs/nightly"},
        ]
        ko.add_mount(
            pod,
            {"name": "nightly", "configMap": {"name": "voxarena-nightly"}},
            {"name": "nightly", "mountPath": folder, "readOnly": True},
        )
        cronjob = {
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "metadata": ko.metadata("nightly", pod["metadata"]["labels"]),
            "spec": {
                "schedule": nightly_schedule(text),
                "timeZone": "Etc/UTC",
                "concurrencyPolicy": "Forbid",
                "startingDeadlineSeconds": 3600,
                "successfulJobsHistoryLimit": 3,
                "failedJobsHistoryLimit": 3,
                "jobTemplate": {
                    "metadata": {"labels": pod["metadata"]["labels"]},
                    "spec": {"backoffLimit": 0, "template": pod},
                },
            },
        }
        return [_configmap("voxarena-nightly", script.name, text), cronjob]

    def _overlays(self) -> None:
        components = sorted({p.split("/")[1] for p in self.files if p.startswith("components/")})
        self.files["overlays/all-services/kustomization.yaml"] = [
            _kustomization(["../../base"], [], components=[f"../../components/{c}" for c in components])
        ]
        index = "$(JOB_COMPLETION_INDEX)"  # set by Kubernetes in every pod of an Indexed Job
        args = [*_run_args(f"runs/arena-shards/{index}"), "--shard", f"{index}/{SHARDS}"]
        spec = {**_run_job_spec(), "completionMode": "Indexed", "completions": SHARDS, "parallelism": SHARDS}
        self.files["overlays/sharded/arena-shards.yaml"] = [
            ko.job("arena-shards", self.orchestrator_pod("arena-shards", args), spec)
        ]
        delete_job = {"$patch": "delete", "apiVersion": "batch/v1", "kind": "Job", "metadata": ko.metadata("arena")}
        shared_runs = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": ko.metadata(ko.RUNS_CLAIM),
            "spec": {"accessModes": ["ReadWriteMany"]},  # the shards' pods may land on different nodes
        }
        self.files["overlays/sharded/kustomization.yaml"] = [
            _kustomization(
                ["../../base", "arena-shards.yaml"],
                [],
                patches=[{"patch": _dump([delete_job])}, {"patch": _dump([shared_runs])}],
            )
        ]
        shards = [f"runs/arena-shards/{k}" for k in range(SHARDS)]
        merge = ko.job(
            "arena-merge",
            self.orchestrator_pod("arena-merge", ["merge", *shards, "--out", "runs/arena"]),
            _run_job_spec(),  # merge's exit codes are run's: 3 (the scorer failed) is retried
        )
        self.files["overlays/sharded/merge/arena-merge.yaml"] = [merge]
        # A pod that only holds the runs claim, to copy a run out (kubectl cp) or run `orchestrator report`.
        reader = self.orchestrator_pod("runs-reader", [], ["sleep", "infinity"])
        reader["metadata"]["labels"][ko.ROLE_LABEL] = "tool"  # not the orchestrator: no network at all
        reader_pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": ko.metadata("runs-reader", reader["metadata"]["labels"]),
        }
        self.files["overlays/runs-reader/runs-reader.yaml"] = [{**reader_pod, "spec": reader["spec"]}]
        self.files["overlays/runs-reader/kustomization.yaml"] = [
            _kustomization(["runs-reader.yaml"], [], namespace=ko.NAMESPACE)
        ]
        self.files["overlays/sharded/merge/kustomization.yaml"] = [
            _kustomization(["arena-merge.yaml"], [], namespace=ko.NAMESPACE)
        ]


# ----------------------------------------------------------------------------------------------- YAML out
class _Dumper(yaml.SafeDumper):
    """Block style for multi-line strings (the embedded config and script stay readable), no anchors."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if "\n" in value else None)


_Dumper.add_representer(str, _str)


def _dump(docs: list[Doc]) -> str:
    return "---\n".join(yaml.dump(d, Dumper=_Dumper, sort_keys=False, width=120) for d in docs)


def render(services: tuple[Service, ...], compose: dict[str, Any], source: Path) -> dict[str, str]:
    """Path under deploy/k8s -> the text the generator writes there."""
    tree = Tree(services, compose, source).build()
    return {path: HEADER + _dump(docs) for path, docs in sorted(tree.items())}

"""The Kubernetes objects of the VoxArena stack, as plain dicts: a model's Deployment and headless Service,
the orchestrator's pod (Job, CronJob, Indexed Job), the NetworkPolicies and the volumes.

Every pod runs as docker-compose.yml's containers do: non-root (uid/gid 10001, the images' user), read-only
root with an in-memory /tmp, no capabilities, no privilege gain, the runtime's seccomp profile, the same CPU
and memory limits. What Kubernetes adds: the native ``grpc:`` probes on grpc.health.v1 (the check the
compose healthcheck and the orchestrator make), no service-account token, and the NetworkPolicies that
replace compose's internal network. ``voxarena.deploy.k8s`` lays these out as a kustomize tree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from voxarena.catalogue import PORT, Service

Doc = dict[str, Any]

NAMESPACE = "voxarena"
PART_OF = "voxarena"
NAME_LABEL = "app.kubernetes.io/name"
# generator, detector, transform, scorer or orchestrator: what the policies select
ROLE_LABEL = "app.kubernetes.io/component"
INSTANCE_LABEL = "app.kubernetes.io/instance"
# the servers: no egress, ingress from the orchestrator only
MODEL_ROLES = ("generator", "detector", "transform", "scorer")

RUNS_CLAIM = "voxarena-runs"
SPEECH_CLAIM = "voxarena-speech"
ARENA_CONFIGMAP = "voxarena-arena-config"
ARENA_CONFIG_KEY = "arena.yaml"
WORKDIR = "/work"  # the orchestrator image's WORKDIR: configs/ and runs/ are mounted under it, as in compose
SPEECH_MOUNT = "/data/speech"

# Probes. Readiness as the compose healthcheck (every 5 s, 5 s timeout, 3 misses). The startup probe
# allows 300 s, the orchestrator's default execution.startup_timeout_seconds: some models load for
# about two minutes. Liveness is lenient: the health service shares the server's thread pool with the
# model calls, so a pod busy with long calls must not be killed for answering health late.
READINESS = {"periodSeconds": 5, "timeoutSeconds": 5, "failureThreshold": 3}
STARTUP = {"periodSeconds": 5, "timeoutSeconds": 5, "failureThreshold": 60}
LIVENESS = {"periodSeconds": 20, "timeoutSeconds": 10, "failureThreshold": 6}

# Requests are what the scheduler reserves; compose reserves nothing, so they are a share of its limits,
# small enough that the default stack schedules on one 8-core, 16 GiB node (a laptop's kind cluster).
CPU_REQUEST_SHARE = 0.1
MEMORY_REQUEST_SHARE = 0.25


@dataclass(frozen=True)
class Runtime:
    """How docker-compose.yml runs a container: limits, user, /tmp, volumes, environment."""

    cpus: float
    memory_bytes: int
    uid: int
    gid: int
    tmp_bytes: int | None  # the size of the /tmp tmpfs; None: unbounded (the memory limit bounds it)
    # Container paths of read-only host mounts: a model's checkpoint becomes a claim of its own; the
    # orchestrator's (configs, speech) are mounted by name in orchestrator_pod.
    read_only_mounts: tuple[str, ...] = ()
    environment: tuple[tuple[str, str], ...] = ()


def _quantity(n_bytes: int) -> str:
    mib = n_bytes // 2**20
    return f"{mib // 1024}Gi" if mib % 1024 == 0 else f"{mib}Mi"


def _cpu(cores: float) -> str:
    milli = round(cores * 1000)
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def resources(rt: Runtime) -> Doc:
    return {
        "requests": {
            "cpu": _cpu(rt.cpus * CPU_REQUEST_SHARE),
            "memory": _quantity(int(rt.memory_bytes * MEMORY_REQUEST_SHARE)),
        },
        "limits": {"cpu": _cpu(rt.cpus), "memory": _quantity(rt.memory_bytes)},
    }


def labels(name: str, role: str, instance: str | None = None) -> dict[str, str]:
    out = {NAME_LABEL: name, ROLE_LABEL: role, "app.kubernetes.io/part-of": PART_OF}
    if instance:
        out[INSTANCE_LABEL] = instance
    return out


def metadata(name: str, lbls: dict[str, str] | None = None) -> Doc:
    return {"name": name, "namespace": NAMESPACE, **({"labels": lbls} if lbls else {})}


def container_security(rt: Runtime) -> Doc:
    return {
        "runAsNonRoot": True,
        "runAsUser": rt.uid,
        "runAsGroup": rt.gid,
        "readOnlyRootFilesystem": True,
        "allowPrivilegeEscalation": False,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def pod_spec(rt: Runtime, container: Doc, volumes: list[Doc], restart: str) -> Doc:
    """A hardened pod of one container, with /tmp in memory; ``fsGroup`` lets the uid write the volumes."""
    tmp: Doc = {"medium": "Memory", **({"sizeLimit": _quantity(rt.tmp_bytes)} if rt.tmp_bytes else {})}
    mounts = [{"name": "tmp", "mountPath": "/tmp"}, *container.pop("volumeMounts", [])]
    return {
        "automountServiceAccountToken": False,  # no pod talks to the Kubernetes API
        "enableServiceLinks": False,  # services are found by DNS, not by twenty environment variables each
        "restartPolicy": restart,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": rt.uid,
            "runAsGroup": rt.gid,
            "fsGroup": rt.gid,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [
            {
                **container,
                "imagePullPolicy": "IfNotPresent",  # images are built locally (make images): no registry
                "resources": resources(rt),
                "securityContext": container_security(rt),
                "volumeMounts": mounts,
            }
        ],
        "volumes": [{"name": "tmp", "emptyDir": tmp}, *volumes],
    }


def _claim_volume(name: str, claim: str, read_only: bool) -> Doc:
    return {"name": name, "persistentVolumeClaim": {"claimName": claim, **({"readOnly": True} if read_only else {})}}


def mount_claim_name(service: str, path: str) -> str:
    """The PersistentVolumeClaim that stands in for a read-only host mount of compose (e.g. hf-audio-classifier's
    checkpoint at /model): ``SERVICE-model``."""
    return f"{service}-{path.strip('/').replace('/', '-')}"


def model_objects(svc: Service, rt: Runtime) -> list[Doc]:
    """A model service's Deployment and its headless Service (DNS answers every ready pod, so the
    orchestrator's ``dns:///NAME:50051`` round-robins over replicas, as with ``--scale`` in compose)."""
    lbls = labels(svc.name, svc.role)
    selector = {NAME_LABEL: svc.name, ROLE_LABEL: svc.role}
    probe = {"grpc": {"port": PORT}}
    volumes = [
        _claim_volume(f"mount{i}", mount_claim_name(svc.name, p), True) for i, p in enumerate(rt.read_only_mounts)
    ]
    container: Doc = {
        "name": svc.name,
        "image": svc.image,  # its CMD serves on PORT (voxarena.catalogue.Service.command)
        "ports": [{"name": "grpc", "containerPort": PORT, "protocol": "TCP"}],
        "startupProbe": {**probe, **STARTUP},
        "readinessProbe": {**probe, **READINESS},
        "livenessProbe": {**probe, **LIVENESS},
        "volumeMounts": [
            {"name": f"mount{i}", "mountPath": p, "readOnly": True} for i, p in enumerate(rt.read_only_mounts)
        ],
    }
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(svc.name, lbls),
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": selector},
            "template": {"metadata": {"labels": lbls}, "spec": pod_spec(rt, container, volumes, "Always")},
        },
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(svc.name, lbls),
        "spec": {
            "clusterIP": "None",
            "selector": selector,
            "ports": [{"name": "grpc", "port": PORT, "targetPort": "grpc", "protocol": "TCP", "appProtocol": "grpc"}],
        },
    }
    return [deployment, service]


def claim(name: str, access: str, size: str, what: str) -> Doc:
    """A claim; a read-only one binds only to a PersistentVolume made beforehand (storageClassName ""): it
    stands for data that exists (speech, a checkpoint), which a provisioner's new empty volume is not."""
    spec: Doc = {"accessModes": [access], "resources": {"requests": {"storage": size}}}
    if access == "ReadOnlyMany":
        spec["storageClassName"] = ""
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {**metadata(name, {"app.kubernetes.io/part-of": PART_OF}), "annotations": {"voxarena/holds": what}},
        "spec": spec,
    }


def orchestrator_pod(rt: Runtime, image: str, instance: str, args: list[str], command: list[str] | None = None) -> Doc:
    """The orchestrator's pod template: the run config from its ConfigMap at configs/, the runs claim at
    runs/, the speech claim read-only at /data/speech; the environment of the compose orchestrator."""
    container: Doc = {
        "name": "orchestrator",
        "image": image,
        **({"command": command} if command else {}),
        **({"args": args} if args else {}),
        "workingDir": WORKDIR,
        "env": [{"name": k, "value": v} for k, v in rt.environment],
        "volumeMounts": [
            {"name": "config", "mountPath": f"{WORKDIR}/configs", "readOnly": True},
            {"name": "runs", "mountPath": f"{WORKDIR}/runs"},
            {"name": "speech", "mountPath": SPEECH_MOUNT, "readOnly": True},
        ],
    }
    volumes = [
        {"name": "config", "configMap": {"name": ARENA_CONFIGMAP}},
        _claim_volume("runs", RUNS_CLAIM, False),
        _claim_volume("speech", SPEECH_CLAIM, True),
    ]
    return {
        "metadata": {"labels": labels("orchestrator", "orchestrator", instance)},
        "spec": pod_spec(rt, container, volumes, "Never"),
    }


def job(name: str, pod: Doc, spec: Doc | None = None) -> Doc:
    lbls = pod["metadata"]["labels"]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(name, lbls),
        "spec": {**(spec or {}), "template": pod},
    }


def add_mount(pod: Doc, volume: Doc, mount: Doc) -> Doc:
    """``pod`` with one more volume mounted in its container."""
    pod["spec"]["volumes"].append(volume)
    pod["spec"]["containers"][0]["volumeMounts"].append(mount)
    return pod


# --------------------------------------------------------------------------------------- NetworkPolicies
def _role_selector(*roles: str) -> Doc:
    return {"matchExpressions": [{"key": ROLE_LABEL, "operator": "In", "values": list(roles)}]}


def _policy(name: str, pods: Doc, ingress: list[Doc], egress: list[Doc]) -> Doc:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": metadata(name, {"app.kubernetes.io/part-of": PART_OF}),
        "spec": {"podSelector": pods, "policyTypes": ["Ingress", "Egress"], "ingress": ingress, "egress": egress},
    }


def network_policies() -> list[Doc]:
    """Compose's internal network, as policies: nothing in the namespace talks unless allowed; the models
    take gRPC from the orchestrator and send nothing out; the orchestrator reaches the models and DNS."""
    grpc_port = [{"protocol": "TCP", "port": PORT}]
    dns = {
        "to": [
            {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
                "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
            }
        ],
        "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
    }
    return [
        _policy("default-deny", {}, [], []),
        _policy(
            "models-from-orchestrator-only",
            _role_selector(*MODEL_ROLES),
            [{"from": [{"podSelector": _role_selector("orchestrator")}], "ports": grpc_port}],
            [],  # no egress at all: a model cannot phone home, fetch weights or reach another model
        ),
        _policy(
            "orchestrator-to-models-and-dns",
            _role_selector("orchestrator"),
            [],
            [{"to": [{"podSelector": _role_selector(*MODEL_ROLES)}], "ports": grpc_port}, dns],
        ),
    ]

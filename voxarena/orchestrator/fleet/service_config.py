"""The service entries of a run config: how a generator, detector or the scorer is reached (``address``),
started as a local process (``module``, the default) or launched from a Docker image (``image``, with
its ``container`` settings; ``containers`` runs it); and fused detectors, which are no service.

Which settings are transport (how a service is reached and driven) and which are the protocol (what a
run measures) is decided here too: a resume may change the first, never the second (``protocol_view``).
``config`` re-exports these names; ``ConfigError`` and ``Strict`` (an unknown key is an error) are the
base of every config model.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, field_validator, model_validator

from voxarena.metric_catalogue import DEFAULT_METRICS


class ConfigError(ValueError):
    pass


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TlsConfig(Strict):
    """TLS to a running service (``voxarena.transport``): trust ``ca``; present ``cert``/``key`` for mTLS."""

    ca: str | None = Field(None, description="PEM CA that signed the service's certificate (absent: system roots)")
    cert: str | None = Field(None, description="PEM client certificate, for services that demand one (mTLS)")
    key: str | None = Field(None, description="PEM key of cert")
    server_name: str | None = Field(None, description="name in the service's certificate, if not the address's host")

    @model_validator(mode="after")
    def _cert_with_key(self):
        if bool(self.cert) != bool(self.key):
            raise ValueError("tls: a client certificate needs both cert and key")
        return self


MODEL_DIR_MOUNT = "/model"  # where an image entry's model_dir appears in its container (read-only)
# Docker's reference grammar, loosely: [registry[:port]/]path[:tag][@sha256:digest], or an image id.
_IMAGE_REF = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/:-]*(@sha256:[0-9a-f]{64})?$")


class ContainerConfig(Strict):
    """How an ``image`` entry's container runs. The hardening (non-root, read-only root file system, no
    capabilities, no-new-privileges, no egress) is not configurable: ``containers`` applies it to every
    image. The limits default to the compose services' (docker-compose.yml, ``x-model``)."""

    env: dict[str, str] = Field({}, description="environment variables of the container")
    model_dir: str | None = Field(None, description=f"host directory mounted read-only at {MODEL_DIR_MOUNT}")
    cpus: float = Field(1.0, gt=0, le=256, description="CPU limit, in cores")
    memory: str = Field("3g", pattern=r"^[0-9]+[bkmgBKMG]?$", description="memory limit (no swap): 512m, 3g, ...")
    pids: int = Field(256, ge=16, le=65536, description="process and thread limit")
    port: int = Field(50051, ge=1, le=65535, description="the port the image serves gRPC on (its CMD's --port)")
    user: str = Field("10001:10001", description="uid[:gid] the container runs as; never root")
    pull: bool = Field(False, description="pull the image when it is not present locally (never, unless true)")

    @field_validator("env", mode="before")
    @classmethod
    def _stringify(cls, v):
        return {str(k): str(val) for k, val in (v or {}).items()}

    @field_validator("env")
    @classmethod
    def _names(cls, v: dict[str, str]) -> dict[str, str]:
        for k in v:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
                raise ValueError(f"env: {k!r} is not an environment variable name")
        return v

    @field_validator("user")
    @classmethod
    def _not_root(cls, v: str) -> str:
        uid = v.split(":", 1)[0]
        if not re.fullmatch(r"[0-9]+(:[0-9]+)?", v):
            raise ValueError(f"user: {v!r}: give numeric uid[:gid] (a name may map to root inside the image)")
        if int(uid) == 0:
            raise ValueError("user: a launched container never runs as root (uid 0)")
        return v


class ServiceConfig(Strict):
    """A service: ``address`` host:port of a running one; ``image`` a local Docker image to launch; or
    neither, to start it as a local process (``module``, default: the catalogue's)."""

    address: str | None = None
    module: str | None = Field(None, description="python module to start in local mode (default: known services)")
    image: str | None = Field(None, description="a Docker image present locally, launched hardened for the run")
    container: ContainerConfig | None = Field(None, description="with image: env, model_dir, limits")
    parameters: dict[str, str] = {}
    voice: str = ""
    concurrency: int = Field(2, ge=1, le=64)
    args: list[str] = []
    # Transport (not part of what a run measures): TLS to the service, and the NAME of the environment
    # variable holding its bearer token (the token itself is never in a config, a log or run.json).
    tls: TlsConfig | None = None
    token_env: str | None = Field(None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")

    @model_validator(mode="after")
    def _token_needs_tls(self):
        if self.token_env and self.tls is None:
            raise ValueError("token_env: a bearer token is sent over TLS only; add tls: {ca: ...}")
        return self

    @model_validator(mode="after")
    def _one_way_to_run(self):
        if self.image is None:
            if self.container is not None:
                raise ValueError("container: applies to an entry launched from an image; add image: NAME:TAG")
            return self
        for key, what in (("address", "reached at an address"), ("module", "started as a local module")):
            if getattr(self, key) is not None:
                raise ValueError(f"image and {key}: an entry is launched from its image or {what}, not both")
        if self.args:
            raise ValueError("args: are for a local process; an image runs its own CMD")
        if not _IMAGE_REF.fullmatch(self.image):
            raise ValueError(f"image: {self.image!r} is not an image reference (e.g. acme/clone:1.0)")
        return self

    @field_validator("parameters", mode="before")
    @classmethod
    def _stringify(cls, v):
        return {str(k): str(val) for k, val in (v or {}).items()}

    def container_settings(self) -> ContainerConfig:
        """The container settings of an image entry (the defaults when it names none)."""
        return self.container or ContainerConfig()


class FusionConfig(Strict):
    """Score fusion: the members' scores combined into one LLR by logistic regression (``orchestrator.fusion``)."""

    members: list[str] = Field(description="two or more detectors of the run, by name")


class FusedDetectorConfig(Strict):
    """A detector that is no service: the fusion of other detectors' stored scores."""

    fusion: FusionConfig


def _detector_kind(entry: object) -> str:
    if isinstance(entry, dict):
        return "fusion" if "fusion" in entry else "service"
    return "fusion" if isinstance(entry, FusedDetectorConfig) else "service"


# A detector entry is a service, or (with a ``fusion`` key) a fusion of other detectors.
DetectorEntry = Annotated[
    Annotated[ServiceConfig, Tag("service")] | Annotated[FusedDetectorConfig, Tag("fusion")],
    Discriminator(_detector_kind),
]


class ScorerConfig(ServiceConfig):
    metrics: list[str] = list(DEFAULT_METRICS)
    batch_size: int = Field(8, ge=1)
    bootstrap_resamples: int = Field(1000, ge=0, description="speaker-cluster bootstrap resamples for CIs; 0 = none")
    confidence: float = Field(0.95, gt=0, lt=1)


# Keys that say how services are reached and driven, not what the run measures: changing them resumes
# a run (a service moved, got TLS, more replicas or a longer deadline). An image is reached by its
# name too: what it is, its id (digest), is checked on resume like a model's version. Everything else
# is the protocol, and of a container's settings only what its model sees (env, model_dir).
TRANSPORT_SERVICE_KEYS = ("address", "tls", "token_env", "concurrency", "batch_size", "image")
CONTAINER_PROTOCOL_KEYS = ("env", "model_dir")


class GeneratorConfig(ServiceConfig):
    """A generator entry: a service, and the watermark its vendor ships on every clip it makes, if any."""

    watermark: str | None = Field(
        None,
        description="a transform of kind WATERMARK (an entry under transforms:) applied to every clip this "
        "generator makes, as a recorded step of its rows (the unmarked clip is kept)",
    )


def service_protocol_view(service: dict) -> dict:
    """A service entry's dump without its transport settings (a container's: only env and model_dir,
    left out when unset, so an entry without ``container`` and one with only limits are the same)."""
    out = {k: v for k, v in service.items() if k not in TRANSPORT_SERVICE_KEYS}
    if out.get("watermark", "") is None:  # runs from before generator watermarks resume
        del out["watermark"]
    if "container" in out:
        kept = {k: v for k, v in (out.pop("container") or {}).items() if k in CONTAINER_PROTOCOL_KEYS and v}
        if kept:
            out["container"] = kept
    return out


TRANSPORT_SECTIONS = ("execution",)


def protocol_view(config: dict) -> dict:
    """A resolved config (``RunConfig.model_dump(mode="json")``) without its transport settings
    (``TRANSPORT_SERVICE_KEYS``, the ``execution`` section)."""
    out = {k: v for k, v in config.items() if k not in TRANSPORT_SECTIONS}
    for role in ("generators", "detectors", "transforms"):
        out[role] = {n: service_protocol_view(svc) for n, svc in (config.get(role) or {}).items()}
    # Keys that a version without transform steps did not write, at their "none" value: a run started
    # before them resumes.
    if not out["transforms"]:
        del out["transforms"]
    if "conditions" in config:
        out["conditions"] = {
            name: [
                {k: v for k, v in step.items() if not (k == "transform" and v is None or k == "parameters" and not v)}
                for step in steps
            ]
            for name, steps in config["conditions"].items()
        }
    if "scorer" in config:
        out["scorer"] = service_protocol_view(config["scorer"])
    return out


def config_differences(old: object, new: object, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two config dumps (added and removed keys included)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out = []
        for key in sorted(set(old) | set(new), key=str):
            out += config_differences(old.get(key), new.get(key), f"{prefix}{key}.")
        return out
    return [] if old == new else [prefix.rstrip(".")]

"""Run configuration: YAML validated by pydantic; a bad key is an error naming the key and the file.

Precedence: command-line overrides > YAML file > defaults. Paths may use ``${VAR}`` or
``${VAR:-default}`` and are resolved relative to the config file's directory.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal, TypeVar, overload

import yaml
from pydantic import BaseModel, Field, ValidationError, model_validator

from voxarena.orchestrator.fleet.service_config import (
    TRANSPORT_SECTIONS,
    ConfigError,
    ContainerConfig,
    DetectorEntry,
    FusedDetectorConfig,
    FusionConfig,
    GeneratorConfig,
    ScorerConfig,
    ServiceConfig,
    Strict,
    TlsConfig,
    config_differences,
    protocol_view,
)
from voxarena.orchestrator.run.channel_config import ChannelStep
from voxarena.orchestrator.run.partial import PartialConfig
from voxarena.orchestrator.run.streaming_config import StreamingConfig
from voxarena.tasks import TASKS, task_inputs

_M = TypeVar("_M", bound=BaseModel)

# The service entries' models live in service_config; importers read them from here as well.
__all__ = [
    "I2D_TASKS",
    "TRANSPORT_SECTIONS",
    "CalibrationSplitConfig",
    "ChannelStep",
    "ConfigError",
    "ContainerConfig",
    "DatasetConfig",
    "ExecutionConfig",
    "FusedDetectorConfig",
    "FusionConfig",
    "GeneratorConfig",
    "I2DConfig",
    "ProtocolConfig",
    "RunConfig",
    "ScorerConfig",
    "ServiceConfig",
    "TlsConfig",
    "config_differences",
    "expand",
    "load_config",
    "protocol_view",
]


class DatasetConfig(Strict):
    # librispeech (and LibriTTS-style trees): <root>/<subset>/<speaker>/<chapter>/<id>.flac + trans.txt
    # vctk: <root>/wav48_silence_trimmed/<spk>/<spk>_<n>_<mic>.flac (0.92) or wav48/<spk>/<spk>_<n>.wav,
    #       text in <root>/txt/<spk>/<spk>_<n>.txt, labels from speaker-info.txt
    # table: root is a CSV or JSONL file with columns id, audio, speaker, [text], any other column a label
    # asvspoof: root is the audio directory (<root>/[flac/]<utt>.flac), protocol the CM protocol or
    #       key file (2019 LA/PA, 2021 LA/DF trial_metadata, ASVspoof 5 tsv): attack ids become labels
    # In any layout, an item whose label "key" is "spoof" is a corpus spoof: scored by the detectors
    # as a spoof of the attack named by its "attack" label, never used as a generator's input.
    kind: Literal["librispeech", "vctk", "table", "asvspoof"] = "librispeech"
    root: str = Field(description="the corpus directory (librispeech, vctk, asvspoof) or the manifest file (table)")
    protocol: str | None = Field(None, description="asvspoof: the protocol / key file")
    subsets: list[str] = []
    mic: str = Field("mic1", description="vctk 0.92: which microphone's files")
    # Text for TTS where an utterance has no transcript: lines "<id> <TEXT>" of this file, in order.
    prompts: str | None = None
    prompt_offset: int = Field(0, ge=0, description="first prompt line used")
    max_items: int | None = Field(None, ge=1)
    max_per_speaker: int | None = Field(None, ge=1)
    speakers_file: str | None = Field(None, description="SPEAKERS.TXT for sex labels; default <root>/SPEAKERS.TXT")
    allow_outside_root: bool = Field(
        False,
        description="read audio that resolves (symlinks followed) outside the dataset root: the corpus directory, "
        "or the table file's directory. Off: such an item is refused, naming it and the path",
    )

    @model_validator(mode="after")
    def _subsets_for_librispeech(self):
        if self.kind == "librispeech" and not self.subsets:
            raise ValueError("dataset.subsets: a librispeech dataset needs at least one subset (e.g. [test-clean])")
        if self.kind == "asvspoof" and not self.protocol:
            raise ValueError(
                "dataset.protocol: an asvspoof dataset needs its protocol file (e.g. ASVspoof2019.LA.cm.eval.trl.txt)"
            )
        return self


# I2D iterates on the reference voice: the tasks that take one (CLONE, CONVERT).
I2D_TASKS = tuple(t for t in TASKS if task_inputs(t).reference)


class I2DConfig(Strict):
    """I2D ("Iterate to Differentiate"): for CLONE and CONVERT, iteration k takes iteration k-1's output
    (and, for CLONE, the target text) as its reference; iteration 1 is the ordinary one-shot clip."""

    iterations: int = Field(5, ge=2, le=20, description="maximum depth N (the paper: 5 match 10 in correlation)")
    ewa_decay: float = Field(0.5, gt=0, le=1, description="EWA weight of iteration k: decay^(k-1)")


class CalibrationSplitConfig(Strict):
    """Manifest items set aside to fit score fusion and never evaluated: every detection matrix of the
    run leaves them out (a spoof follows the item it was made from). Exactly one rule: the items whose
    manifest ``label`` has one of ``values``, or a seeded ``speaker_fraction`` of the speakers (so
    calibration and evaluation speakers are disjoint)."""

    label: str | None = Field(None, description="a manifest label (subset, sex, corpus, ...)")
    values: list[str] = Field([], description="with label: the values whose items calibrate")
    speaker_fraction: float | None = Field(
        None,
        gt=0,
        lt=1,
        description="share of the speakers that calibrate (rounded, at least one on each side), chosen by the run seed",
    )

    @model_validator(mode="after")
    def _one_rule(self):
        if (self.label is None) == (self.speaker_fraction is None):
            raise ValueError("set exactly one of label (with values) and speaker_fraction")
        if self.label is not None and not self.values:
            raise ValueError(f"label {self.label!r} needs values: the label values whose items calibrate")
        if self.label is None and self.values:
            raise ValueError("values apply to a label; set label too")
        return self


class ProtocolConfig(Strict):
    seed: int = 0
    tasks: list[Literal["TTS", "CLONE", "RECONSTRUCT", "CONVERT", "PARTIAL_VOCODED", "PARTIAL_WORDS"]] = ["TTS"]
    min_duration: float = Field(0.2, gt=0, description="shortest valid generated clip, seconds")
    max_duration: float = Field(120.0, gt=0, description="longest valid generated clip, seconds")
    i2d: I2DConfig | None = Field(None, description="iterative re-referencing of CLONE/CONVERT (off when absent)")
    calibration_split: CalibrationSplitConfig | None = Field(
        None, description="items that fit score fusion, left out of every detection matrix (none when absent)"
    )
    partial: PartialConfig | None = Field(None, description="how PARTIAL_* tasks splice (the defaults when absent)")
    streaming: StreamingConfig | None = Field(None, description="stream clips to the detectors too (off when absent)")

    @property
    def partial_config(self) -> PartialConfig:
        return self.partial or PartialConfig()

    def depth(self, task: str) -> int:
        """Generations per item for ``task``: the I2D iterations for CLONE/CONVERT, else one."""
        return self.i2d.iterations if self.i2d is not None and task in I2D_TASKS else 1


class ExecutionConfig(Strict):
    deadline_seconds: float = Field(300.0, gt=0, description="deadline of every call")
    retries: int = Field(3, ge=0, description="retries of UNAVAILABLE or RESOURCE_EXHAUSTED (busy) calls, with backoff")
    backoff_seconds: float = Field(0.5, gt=0)
    detector_batch_size: int = Field(16, ge=1)
    startup_timeout_seconds: float = Field(300.0, gt=0)
    outage_seconds: float = Field(
        300.0, ge=0, description="a service still UNAVAILABLE after its retries: wait this long for it to be back"
    )


class RunConfig(Strict):
    name: str = "arena"
    dataset: DatasetConfig
    protocol: ProtocolConfig = ProtocolConfig()
    generators: dict[str, GeneratorConfig] = {}
    detectors: dict[str, DetectorEntry] = {}
    scorer: ScorerConfig = ScorerConfig()
    execution: ExecutionConfig = ExecutionConfig()
    # Transform services (TransformService) that condition steps name.
    transforms: dict[str, ServiceConfig] = {}
    # Channel conditions, name -> steps applied in order before detection; "clean" is always there.
    conditions: dict[str, list[ChannelStep]] = {}

    def detector_services(self) -> dict[str, ServiceConfig]:
        """The detectors that are services (started or reached, sent clips), in config order."""
        return {n: d for n, d in self.detectors.items() if isinstance(d, ServiceConfig)}

    def fused_detectors(self) -> dict[str, list[str]]:
        """Fused detector -> its members, in config order."""
        return {n: list(d.fusion.members) for n, d in self.detectors.items() if isinstance(d, FusedDetectorConfig)}


_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand(value: str) -> str:
    def sub(m: re.Match) -> str:
        name, default = m.group(1), m.group(2)
        if name in os.environ:
            return os.environ[name]
        if default is None:
            raise ConfigError(f"environment variable {name} is not set and has no default")
        return default

    return _VAR.sub(sub, value)


@overload
def _resolve(path: str, base: Path) -> str: ...
@overload
def _resolve(path: str | None, base: Path) -> str | None: ...
def _resolve(path: str | None, base: Path) -> str | None:
    """``path`` (``~`` and ``${VAR}`` expanded) relative to ``base``, the config file's folder; None stays None."""
    if path is None:
        return None
    p = Path(expand(path)).expanduser()
    return str((base / p).resolve() if not p.is_absolute() else p)


def _set_dotted(data: dict, dotted: str, value: object) -> None:
    keys = dotted.split(".")
    node = data
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    node[keys[-1]] = value


def read_yaml_mapping(path: Path, what: str, error: type[Exception]) -> dict:
    """The mapping at the top of the YAML file ``path`` (a ``what``); ``error`` naming the file and the reason."""
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError:
        raise error(f"{path}: no such {what}") from None
    except yaml.YAMLError as e:
        raise error(f"{path}: not valid YAML: {e}") from None
    if not isinstance(data, dict):
        raise error(f"{path}: expected a mapping at the top level")
    return data


def validated(model: type[_M], data: dict, path: Path, error: type[Exception]) -> _M:
    """``model`` from ``data``; ``error`` with a line per problem: the file, the dotted key, the reason."""
    try:
        return model.model_validate(data)
    except ValidationError as e:
        problems = []
        for err in e.errors():
            loc = ".".join(str(x) for x in _location(err["loc"]))
            msg = "unknown key" if err["type"] == "extra_forbidden" else err["msg"].removeprefix("Value error, ")
            problems.append(f"{path}: {loc}: {msg}")
        raise error("\n".join(problems)) from None


def load_config(path: str | Path, overrides: dict[str, object] | None = None) -> RunConfig:
    """Read, override (dotted keys, e.g. ``protocol.seed``), validate and resolve paths."""
    path = Path(path)
    data = read_yaml_mapping(path, "config file", ConfigError)
    for key, value in (overrides or {}).items():
        if value is not None:
            _set_dotted(data, key, value)
    cfg = validated(RunConfig, data, path, ConfigError)
    base = path.resolve().parent
    ds = cfg.dataset
    try:
        ds.root = _resolve(ds.root, base)
        ds.prompts = _resolve(ds.prompts, base)
        ds.speakers_file = _resolve(ds.speakers_file, base)
        ds.protocol = _resolve(ds.protocol, base)
    except ConfigError as e:
        raise ConfigError(f"{path}: dataset: {e}") from None
    entries: list[tuple[str, ServiceConfig]] = [(f"generators.{n}", s) for n, s in cfg.generators.items()]
    entries += [(f"detectors.{n}", s) for n, s in cfg.detector_services().items()]
    entries += [(f"transforms.{n}", s) for n, s in cfg.transforms.items()]
    for where, svc in [*entries, ("scorer", cfg.scorer)]:
        _resolve_service_paths(where, svc, base, path)
    names = list(cfg.generators) + list(cfg.detectors) + list(cfg.transforms)
    for name in names:
        if not re.fullmatch(r"[a-z0-9][a-z0-9_.-]*", name):
            raise ConfigError(f"{path}: service name {name!r} must be lower-case letters, digits, '-', '_' or '.'")
        if names.count(name) > 1 or name == "scorer":
            raise ConfigError(
                f"{path}: service name {name!r} is used twice (generators, detectors, transforms, scorer)"
            )
    for name, steps in cfg.conditions.items():
        if name == "clean" or not re.fullmatch(r"[a-z0-9][a-z0-9_.+-]*", name):
            raise ConfigError(
                f"{path}: conditions.{name}: a condition name is lower-case letters, digits, "
                "'-', '_', '.' or '+', and not 'clean' (the undegraded audio, always present)"
            )
        if not steps:
            raise ConfigError(f"{path}: conditions.{name}: no steps (the undegraded audio is 'clean')")
        for k, step in enumerate(steps):
            if step.transform is not None and step.transform not in cfg.transforms:
                raise ConfigError(
                    f"{path}: conditions.{name}[{k}]: transform {step.transform!r} is not under transforms: "
                    f"({', '.join(cfg.transforms) or 'none declared'})"
                )
            if step.resynthesize is not None and step.resynthesize not in cfg.generators:
                raise ConfigError(
                    f"{path}: conditions.{name}[{k}]: resynthesize {step.resynthesize!r} is not under generators: "
                    f"({', '.join(cfg.generators)})"
                )
            if step.attack is not None and step.attack.target not in cfg.detector_services():
                raise ConfigError(
                    f"{path}: conditions.{name}[{k}].attack.target: {step.attack.target!r} is not a detector "
                    f"service of this run ({', '.join(cfg.detector_services()) or 'none'})"
                )
    for name, gen in cfg.generators.items():
        if gen.watermark is not None and gen.watermark not in cfg.transforms:
            raise ConfigError(
                f"{path}: generators.{name}.watermark: {gen.watermark!r} is not under transforms: "
                f"({', '.join(cfg.transforms) or 'none declared'}); add it, e.g. transforms: {{{gen.watermark}: {{}}}}"
            )
    if not cfg.generators:
        raise ConfigError(f"{path}: generators: at least one generator is needed")
    _check_fusion(cfg, path)
    return cfg


def _resolve_service_paths(where: str, svc: ServiceConfig, base: Path, path: Path) -> None:
    """A service's TLS files and an image entry's model_dir, relative to the config file; the model
    directory must exist (Docker would otherwise create an empty one, owned by root)."""
    key = "tls"
    try:
        if svc.tls is not None:
            for k in ("ca", "cert", "key"):
                setattr(svc.tls, k, _resolve(getattr(svc.tls, k), base))
        key = "container.model_dir"
        if svc.container is not None and svc.container.model_dir is not None:
            svc.container.model_dir = _resolve(svc.container.model_dir, base)
            if not Path(svc.container.model_dir).is_dir():
                raise ConfigError(f"{svc.container.model_dir} is not a directory")
    except ConfigError as e:
        raise ConfigError(f"{path}: {where}.{key}: {e}") from None


def _location(loc: tuple) -> tuple:
    """An error's key path without the detector entry's kind (the union's tag: service or fusion)."""
    return loc[:2] + loc[3:] if len(loc) > 2 and loc[0] == "detectors" else loc


def _check_fusion(cfg: RunConfig, path: Path) -> None:
    """Fused detectors name two or more distinct service detectors of the run and need a calibration split."""
    services = cfg.detector_services()
    for name, members in cfg.fused_detectors().items():
        key = f"{path}: detectors.{name}.fusion.members"
        for m in members:
            if m not in services:
                what = (
                    "a fused detector itself (fuse detectors that are services)"
                    if m in cfg.detectors
                    else f"not a detector of this run (its detectors: {', '.join(services) or 'none'})"
                )
                raise ConfigError(f"{key}: {m!r} is {what}")
        if len(set(members)) != len(members):
            raise ConfigError(f"{key}: a member is named twice")
        if len(members) < 2:
            raise ConfigError(f"{key}: a fusion combines two or more detectors, got {len(members)}")
        if cfg.protocol.calibration_split is None:
            raise ConfigError(
                f"{path}: detectors.{name}: a fused detector is fitted on the run's calibration split; "
                "declare protocol.calibration_split (label and values, or speaker_fraction)"
            )

"""The metric registry: every generator metric registers its metadata and a lazy import path.

A metric measures one clip into raw values (counts, not only ratios) and aggregates a list of those
into one corpus-level figure. Heavy models load on first use, once per scorer process.
"""
from __future__ import annotations

import abc
import difflib
import importlib
import threading
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, ClassVar

import numpy as np

from voxarena.codec import AudioClip


class UnknownMetric(KeyError):
    def __str__(self) -> str:
        return str(self.args[0])


class MetricInputError(ValueError):
    """A clip lacks an input the metric needs, or the input cannot be measured."""


@dataclass
class ClipInputs:
    """Everything a metric may look at for one generated clip, with shared lazily computed by-products."""

    request_id: str
    audio: AudioClip
    text: str = ""
    speaker_reference: AudioClip | None = None
    source_reference: AudioClip | None = None
    generation_wall_seconds: float | None = None
    cache: dict = field(default_factory=dict)

    def cached(self, key: str, compute: Callable[[], object]):
        if key not in self.cache:
            self.cache[key] = compute()
        return self.cache[key]


class Metric(abc.ABC):
    name: ClassVar[str]
    higher_is_better: ClassVar[bool]
    aggregation: ClassVar[str]
    description: ClassVar[str]
    needs: ClassVar[tuple[str, ...]] = ()

    def __init__(self) -> None:
        self.lock = threading.Lock()

    @abc.abstractmethod
    def measure(self, clip: ClipInputs) -> tuple[dict[str, float], dict[str, str]]:
        """(values keyed "<name>.<quantity>", notes); raise MetricInputError for an unmeasurable clip."""

    @abc.abstractmethod
    def aggregate(self, rows: list[dict[str, float]]) -> float:
        """Corpus-level figure from the values of the clips that were measured."""

    def fingerprint(self) -> dict[str, str]:
        return {}


def ratio_of_sums(rows: list[dict[str, float]], num: str, den: str) -> float:
    total = sum(r[den] for r in rows)
    return float(sum(r[num] for r in rows) / total) if total > 0 else float("nan")


def mean_of(rows: list[dict[str, float]], key: str) -> float:
    return float(np.mean([r[key] for r in rows])) if rows else float("nan")


# name -> "module:Class"; modules import their heavy dependencies lazily.
REGISTRY: dict[str, str] = {
    "wer": "scorers.asr:WhisperWER",
    "cer": "scorers.asr:WhisperCER",
    "sim": "scorers.speaker:ResemblyzerSIM",
    "rtf": "scorers.timing:RealTimeFactor",
}

_instances: dict[str, Metric] = {}
_instances_lock = threading.Lock()


def metric_class(name: str) -> type[Metric]:
    if name not in REGISTRY:
        close = difflib.get_close_matches(name, REGISTRY, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UnknownMetric(f"unknown metric {name!r}{hint} Known metrics: {', '.join(sorted(REGISTRY))}")
    module, cls = REGISTRY[name].split(":")
    return getattr(importlib.import_module(module), cls)


def get_metric(name: str) -> Metric:
    with _instances_lock:
        if name not in _instances:
            _instances[name] = metric_class(name)()
        return _instances[name]

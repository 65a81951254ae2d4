"""The metric registry: the scorer's view of the metric catalogue (``voxarena.metric_catalogue``).

A metric measures one clip into raw values (counts, not only ratios) and aggregates a list of those
into one corpus-level figure. Its identity (direction, needed inputs, columns, aggregation, the class
that computes it) is its catalogue row; its class adds only the computation and a detailed
``description``. Heavy models load on first use, once per scorer process.
"""

from __future__ import annotations

import abc
import hashlib
import importlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

import numpy as np

from voxarena.codec import AudioClip
from voxarena.metric_catalogue import METRICS, metric_entry

_T = TypeVar("_T")
# What a metric makes of one clip: (values keyed "<name>.<quantity>", notes).
Measurement = tuple[dict[str, float], dict[str, str]]


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
    reference_aligned: bool = False
    generation_wall_seconds: float | None = None
    cache: dict[str, Any] = field(default_factory=dict)

    def cached(self, key: str, compute: Callable[[], _T]) -> _T:
        if key not in self.cache:
            self.cache[key] = compute()
        return self.cache[key]


class ReferenceCache:
    """Features of reference clips, computed once per scorer process: in an arena every generator's
    clip of an item is compared with the same reference. Keyed by what and the samples' hash; LRU,
    bounded by entries and by the bytes of its arrays (a 600 s reference's mel cepstra are 24 MB: 4096
    of them would be 98 GB)."""

    def __init__(self, size: int = 4096, max_bytes: int = 256 << 20) -> None:
        self._lock = threading.Lock()
        self._data: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._pending: dict[tuple[str, str], Future] = {}
        self.size, self.max_bytes = size, max_bytes
        self._bytes = 0

    def get(self, what: str, clip: AudioClip, compute: Callable[[AudioClip], _T]) -> _T:
        """The cached value, or ``compute(clip)`` stored. Calls for one key at once compute it once, the
        others wait for its value (or its error): the clip workers often hold clips of the same reference
        at once (a batch's generators of one item)."""
        key = (what, hashlib.sha256(clip.samples.tobytes() + str(clip.sample_rate).encode()).hexdigest())
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
            pending = self._pending.get(key)
            if pending is not None:
                waiting = True
            else:
                waiting, pending = False, self._pending.setdefault(key, Future())
        if waiting:
            return pending.result()
        try:
            value = compute(clip)
        except BaseException as e:
            with self._lock:
                del self._pending[key]
            pending.set_exception(e)
            raise
        with self._lock:
            del self._pending[key]
            self._data[key] = value
            self._bytes += _nbytes(value)
            while self._data and (len(self._data) > self.size or self._bytes > self.max_bytes):
                self._bytes -= _nbytes(self._data.popitem(last=False)[1])
        pending.set_result(value)
        return value

    @property
    def nbytes(self) -> int:
        """The bytes of the arrays held."""
        return self._bytes


def _nbytes(value: Any) -> int:
    """The bytes of a cached value's arrays (an array, or a tuple or list of them)."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, (tuple, list)):
        return sum(_nbytes(v) for v in value)
    return 0


reference_cache = ReferenceCache()


# What a Metric class takes from its catalogue row, never writes itself (nor its bases): written once.
CATALOGUED = ("higher_is_better", "aggregation", "needs", "columns")


class Metric(abc.ABC):
    name: ClassVar[str]
    # Set from the class's row of voxarena.metric_catalogue when a class with a ``name`` is defined.
    higher_is_better: ClassVar[bool]
    aggregation: ClassVar[str]
    needs: ClassVar[tuple[str, ...]] = ()
    columns: ClassVar[tuple[str, ...]] = ()  # result columns; the first is the headline
    # The implementation's own account (windows, limits, packages), reported in GetInfo.
    description: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "name" not in vars(cls):
            return
        where = f"{cls.__module__}:{cls.__qualname__}"
        row = METRICS.get(cls.name)
        if row is None:
            raise TypeError(f"metric {cls.name!r} ({where}) has no row in voxarena.metric_catalogue")
        if row.implementation != where:
            raise TypeError(f"metric {cls.name!r}: its catalogue row names {row.implementation}, not {where}")
        for klass in cls.__mro__[: cls.__mro__.index(Metric)]:
            written = [a for a in CATALOGUED if a in vars(klass)]
            if written:
                raise TypeError(
                    f"metric {cls.name!r} ({where}): {klass.__qualname__} sets {', '.join(written)}, "
                    "which its voxarena.metric_catalogue row holds"
                )
        cls.higher_is_better, cls.aggregation = row.higher_is_better, row.aggregation
        cls.needs, cls.columns = row.needs, row.columns

    def __init__(self) -> None:
        self.lock = threading.Lock()

    @classmethod
    def output_columns(cls) -> tuple[str, ...]:
        return cls.columns or (cls.name,)  # a test double without a row: one column, its name

    def warm(self) -> None:
        """Load the models and compiled code the metric needs (the scorer does it for every metric of its
        first request, side by side on its clip workers). May raise: the clips then say why."""
        return None  # most metrics load nothing

    @abc.abstractmethod
    def measure(self, clip: ClipInputs) -> Measurement:
        """(values keyed "<name>.<quantity>", notes); raise MetricInputError for an unmeasurable clip."""

    @abc.abstractmethod
    def aggregate(self, rows: list[dict[str, float]]) -> float | dict[str, float]:
        """Corpus-level figure (or one per column) from the values of the clips that were measured."""

    def aggregate_columns(self, rows: list[dict[str, float]]) -> dict[str, float]:
        out = self.aggregate(rows)
        return out if isinstance(out, dict) else {self.name: out}

    def fingerprint(self) -> dict[str, str]:
        return {}


def ratio_of_sums(rows: list[dict[str, float]], num: str, den: str) -> float:
    total = sum(r[den] for r in rows)
    return float(sum(r[num] for r in rows) / total) if total > 0 else float("nan")


def mean_of(rows: list[dict[str, float]], key: str) -> float:
    return float(np.mean([r[key] for r in rows])) if rows else float("nan")


# name -> "module:Class", the catalogue's view; modules import their heavy dependencies lazily.
REGISTRY: dict[str, str] = {name: row.implementation for name, row in METRICS.items()}

_instances: dict[str, Metric] = {}
_instances_lock = threading.Lock()


def metric_class(name: str) -> type[Metric]:
    """The class computing ``name``, imported now; UnknownMetric (with "did you mean") for an unknown name."""
    module, cls = metric_entry(name).implementation.split(":")
    return getattr(importlib.import_module(module), cls)


def get_metric(name: str) -> Metric:
    with _instances_lock:
        if name not in _instances:
            _instances[name] = metric_class(name)()
        return _instances[name]

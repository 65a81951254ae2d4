"""Base classes a model author subclasses: ``GeneratorModel``, ``DetectorModel`` and ``TransformModel``.

An author writes ``load()`` and ``synthesize()`` / ``score_batch()`` / ``transform()`` and fills the class
attributes that GetInfo reports. Model code sees dataclasses and numpy arrays, never protobuf.
"""

from __future__ import annotations

import abc
import inspect
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

from voxarena.codec import AudioClip

from .errors import InternalError, InvalidArgument

if TYPE_CHECKING:
    from .stream_servicer import DetectorStream


@dataclass(frozen=True)
class Option:
    """An engine option accepted in a request's ``parameters``."""

    name: str
    description: str
    default: str


@dataclass(frozen=True)
class Voice:
    name: str
    language: str = "en-US"
    description: str = ""
    # Output rate when it differs from the model's native rate; 0 = native.
    sample_rate: int = 0


@dataclass
class SynthesisRequest:
    request_id: str
    seed: int
    task: str
    text: str = ""
    language: str = ""
    voice: str = ""
    reference_audio: AudioClip | None = None
    reference_text: str = ""
    source_audio: AudioClip | None = None
    parameters: dict[str, str] = field(default_factory=dict)

    def reference_clip(self) -> AudioClip:
        """``reference_audio``, which the server guarantees to the tasks that take it (``voxarena.tasks``)."""
        return self._given(self.reference_audio, "reference_audio")

    def source_clip(self) -> AudioClip:
        """``source_audio``, which the server guarantees to the tasks that take it (``voxarena.tasks``)."""
        return self._given(self.source_audio, "source_audio")

    def _given(self, clip: AudioClip | None, field_name: str) -> AudioClip:
        if clip is None:  # the model read an input its task does not take: a server fault (INTERNAL)
            raise InternalError(f"{self.task} request carries no {field_name}")
        return clip


@dataclass
class SynthesisResult:
    audio: AudioClip
    voice: str = ""
    # The seed actually used, when the engine used another than the request's.
    seed: int | None = None


class _ModelBase(abc.ABC):
    """Identity, readiness and option parsing shared by both roles.

    The GetInfo facts are class attributes; the few an instance may settle itself (a rate read from
    the loaded checkpoint, tasks narrowed by a constructor flag) are instance attributes with a class
    default.
    """

    name: ClassVar[str] = ""
    version: ClassVar[str] = "0.0.0"
    licence: ClassVar[str] = ""
    native_sample_rate: int = 16000
    deterministic: ClassVar[bool] = True
    timing_scope: ClassVar[str] = ""
    options: ClassVar[tuple[Option, ...]] = ()

    def __init__(self) -> None:
        self._ready = threading.Event()

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    def mark_ready(self) -> None:
        self._ready.set()

    @abc.abstractmethod
    def load(self) -> None:
        """Load weights and warm up; the server reports SERVING once this returns."""

    def parameter_count(self) -> int | None:
        """Trainable parameters, or None for engines without any."""
        return None

    def weights_sha256(self) -> str:
        return ""

    def metadata(self) -> dict[str, str]:
        return {}

    def resolve_options(self, parameters: dict[str, str]) -> dict[str, str]:
        """Request parameters over option defaults; an unknown name is INVALID_ARGUMENT naming it."""
        known = {o.name: o for o in self.options}
        unknown = sorted(set(parameters) - set(known))
        if unknown:
            raise InvalidArgument(
                f"unknown option(s) {', '.join(unknown)}; {self.name} accepts: {', '.join(sorted(known)) or 'none'}"
            )
        return {name: parameters.get(name, o.default) for name, o in known.items()}

    @staticmethod
    def float_option(options: dict[str, str], name: str, lo: float, hi: float) -> float:
        try:
            value = float(options[name])
        except ValueError:
            raise InvalidArgument(f"option {name}={options[name]!r} is not a number") from None
        if not lo <= value <= hi:
            raise InvalidArgument(f"option {name}={value} is outside [{lo}, {hi}]")
        return value


class GeneratorModel(_ModelBase):
    """A voice generator. Subclasses set ``family``, ``tasks``, ``voices`` and implement ``synthesize``."""

    family: ClassVar[str] = ""
    tasks: tuple[str, ...] = ("TTS",)
    voices: ClassVar[tuple[Voice, ...]] = ()
    # Longest text (characters) and source audio (seconds) the service accepts.
    max_text_chars: ClassVar[int] = 5000
    max_source_seconds: ClassVar[float] = 600.0
    # Shortest reference or source audio accepted (GeneratorInfo.min_source_seconds): what a speaker
    # encoder or an analysis needs; shorter is INVALID_ARGUMENT before the model is called. 0: any.
    min_source_seconds: ClassVar[float] = 0.0

    @abc.abstractmethod
    def synthesize(self, request: SynthesisRequest) -> SynthesisResult:
        """Produce speech; raise InvalidArgument / Unimplemented for the client's mistakes."""


class DetectorModel(_ModelBase):
    """A fake-voice detector. Higher score = more bona fide."""

    family: ClassVar[str] = ""
    # True when score_batch already returns calibrated LLRs.
    calibrated: ClassVar[bool] = False
    max_batch_size: ClassVar[int] = 32
    # (a, b) fitted on dev data: the SDK serves a * score + b as an LLR (see voxarena.services.detectors.calibration).
    calibration: tuple[float, float] | None = None

    @property
    def serves_llr(self) -> bool:
        return self.calibrated or self.calibration is not None

    def served(self, score: float) -> float:
        """What the service answers for one model score: the score, mapped to an LLR when a calibration is loaded."""
        if self.calibration is None:
            return float(score)
        a, b = self.calibration
        return a * float(score) + b

    def model_scores(self, clips: list[AudioClip], options: list[dict[str, str]] | None = None) -> list[float]:
        """The model's own scores (before calibration). ``options``: each clip's options (every declared
        one, the request's values over the defaults), passed to ``score_batch`` when it takes an ``options``
        argument; a model without options keeps the one-argument ``score_batch(clips)``."""
        takes_options = "options" in inspect.signature(self.score_batch).parameters
        if takes_options:
            per_clip = options if options is not None else [self.resolve_options({}) for _ in clips]
            scores = self.score_batch(clips, options=per_clip)  # type: ignore[call-arg]
        else:
            scores = self.score_batch(clips)
        return [float(x) for x in scores]

    def llr_scores(self, clips: list[AudioClip], options: list[dict[str, str]] | None = None) -> list[float]:
        """What the service answers: the model's scores, mapped to LLRs when a calibration is loaded."""
        return [self.served(x) for x in self.model_scores(clips, options)]

    # The clips the service accepts (DetectorInfo.min_seconds, max_seconds, sample_rates): the SDK
    # refuses any other with INVALID_ARGUMENT naming the clip, its duration or rate and the bound,
    # before the model is called. A longer clip is refused from its byte count, before decoding.
    min_seconds: ClassVar[float] = 0.005  # 5 ms: refuses a 1-sample clip; a model that needs a frame or more raises it
    max_seconds: ClassVar[float] = 600.0
    # Sample rates (Hz) accepted; empty: any rate the codec accepts (the model resamples).
    sample_rates: ClassVar[tuple[int, ...]] = ()
    # Segment scores (DetectorInfo.segment_hop_seconds): a model that localises sets its hop in seconds
    # and defines ``segment_batch``; 0: none (the orchestrator can still derive them by sliding windows).
    segment_hop_seconds: ClassVar[float] = 0.0

    # Source tracing (DetectorInfo.attribution): (level, labels) pairs, levels among voxarena.attribution.LEVELS;
    # a model that declares them defines ``attribute_batch``.
    attribution: ClassVar[tuple[tuple[str, tuple[str, ...]], ...]] = ()

    # Streaming (DetectorInfo.streaming, the ScoreStream call): every detector streams. By default a causal
    # sliding window (voxarena.sdk.stream_servicer.WindowedStream): a running score of the last
    # stream_window_seconds each time the audio seen passes a further multiple of stream_hop_seconds. A model
    # with incremental scoring sets stream_mode "NATIVE" and returns its own DetectorStream from open_stream;
    # "" turns streaming off (ScoreStream UNIMPLEMENTED).
    stream_mode: ClassVar[str] = "WINDOWED"
    stream_window_seconds: ClassVar[float] = 4.0
    stream_hop_seconds: ClassVar[float] = 0.5
    stream_max_chunk_seconds: ClassVar[float] = 10.0
    # The chunk-to-score delay aimed at on one core (StreamingInfo.target_latency_seconds); 0: not stated.
    stream_target_latency_seconds: ClassVar[float] = 0.0

    def stream_bounds(self) -> tuple[float, float, float]:
        """(window, hop, max chunk) in seconds as served: the class's values, none longer than max_seconds
        (a model that scores at most 2 s streams 2 s windows)."""
        top = self.max_seconds if self.max_seconds > 0 else float("inf")
        return (
            min(self.stream_window_seconds, top),
            min(self.stream_hop_seconds, top),
            min(self.stream_max_chunk_seconds, top),
        )

    def open_stream(self, sample_rate: int, options: dict[str, str]) -> DetectorStream:
        """A new stream's state: the causal sliding window unless the model streams natively."""
        from .stream_servicer import WindowedStream

        return WindowedStream(self, sample_rate, options)

    def attribute_batch(
        self, clips: list[AudioClip], options: list[dict[str, str]]
    ) -> Sequence[Mapping[str, Mapping[str, float]]]:
        """Per clip, level -> label -> probability for every declared level (each level's probabilities sum
        to 1). Called only for the clips whose request set want_attribution; the SDK checks every answer."""
        raise NotImplementedError(f"{self.name} declares attribution but defines no attribute_batch")

    def segment_batch(self, clips: list[AudioClip], options: list[dict[str, str]]) -> Sequence[Sequence[float]]:
        """Segment scores of each clip (higher = more bona fide): ``voxarena.segments.segment_count(...)``
        of them at ``segment_hop_seconds``, the i-th for the clip's time [i x hop, (i + 1) x hop). Called
        only for the clips whose request set want_segments; the SDK checks the count."""
        raise NotImplementedError(f"{self.name} declares segment_hop_seconds but defines no segment_batch")

    @abc.abstractmethod
    def score_batch(self, clips: list[AudioClip]) -> list[float]:
        """Scores for already validated mono clips (any rate: resample to ``native_sample_rate``).

        A model that declares ``options`` reads each clip's by defining
        ``score_batch(self, clips, options: list[dict[str, str]])``: ``options[i]`` holds every declared
        option for ``clips[i]``, the request's values over the defaults (the SDK has refused unknown names)."""


@dataclass(frozen=True)
class OptionRange:
    """What a transform option accepts: numbers in [low, high], or one of ``choices``."""

    low: float = 0.0
    high: float = 0.0
    choices: tuple[str, ...] = ()


@dataclass
class TransformRequest:
    request_id: str
    seed: int
    audio: AudioClip
    # Every declared option, the request's values over the defaults, already checked against its range.
    options: dict[str, str] = field(default_factory=dict)


@dataclass
class TransformResult:
    audio: AudioClip
    # What was done, step by step, for the record (TransformResponse.steps).
    steps: list[str] = field(default_factory=list)


class TransformModel(_ModelBase):
    """An audio transform (a channel, a laundering chain, an attack). Subclasses set ``kind``, declare a
    range for every option in ``ranges`` and implement ``transform``; the SDK refuses an unknown option,
    a value outside its range and audio over ``max_seconds`` with INVALID_ARGUMENT before the model runs.
    ``native_sample_rate``: 0 when the transform works at any rate (the usual case)."""

    kind: ClassVar[str] = ""  # "CHANNEL", "LAUNDERING", "ATTACK" or "WATERMARK"
    ranges: ClassVar[dict[str, OptionRange]] = {}
    max_seconds: ClassVar[float] = 600.0
    native_sample_rate: int = 0

    def checked_options(self, parameters: dict[str, str]) -> dict[str, str]:
        """The request's options over the defaults, each inside its declared range (INVALID_ARGUMENT naming
        the option, the value and the range otherwise)."""
        options = self.resolve_options(parameters)
        for name, value in options.items():
            bound = self.ranges.get(name)
            if bound is None:
                raise InternalError(f"{self.name} declares no range for its option {name!r}")
            if bound.choices:
                if value not in bound.choices:
                    raise InvalidArgument(f"option {name}={value!r} is not one of {', '.join(bound.choices)}")
            else:
                self.float_option(options, name, bound.low, bound.high)
        return options

    @abc.abstractmethod
    def transform(self, request: TransformRequest) -> TransformResult:
        """The changed clip; raise InvalidArgument for a clip the transform cannot take (naming why)."""

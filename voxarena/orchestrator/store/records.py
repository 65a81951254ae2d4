"""The rows of a run's JSONL tables as typed records (lhotse style): one dataclass per table, built once
by the stage that does the work, serialised by the run store, read back as attributes.

| table                | record              | one row per                                              |
|----------------------|---------------------|----------------------------------------------------------|
| ``generations.jsonl``  | ``GenerationRecord``  | generator x task x item (x I2D iteration)                |
| ``detections.jsonl``   | ``DetectionRecord``   | detector x channel condition x clip                      |
| ``degradations.jsonl`` | ``DegradationRecord`` | channel condition x clip                                 |
| ``measurements.jsonl`` | ``MeasurementRecord`` | generated clip (the scorer's raw measurements)           |

Every row has an ``id`` (the table's key: a rerun appends a row with the same id, the latest wins) and a
``status``, ``ok`` or ``failed``; a failed row carries ``failure``, ``code`` and ``reason``
(``failures.failed_row``) and only the fields known before the failure.

The bytes written are the rows' as they have always been: ``to_dict`` gives a field only when it is set
(``None`` = not in the row), and a row read from an older or newer run keeps what this version does not
know (a key it has no field for, or an explicit ``null``) in ``extra``, written back as it was read.
``from_dict`` converts nothing, so a value is written back exactly as it was read (ints stay ints).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, ClassVar, TypeVar

OK = "ok"
FAILED = "failed"
CLEAN = "clean"  # the channel condition that changes nothing

R = TypeVar("R", bound="Row")


class RecordError(ValueError):
    """A stored row that is not a row of its table (a field every such row has is missing)."""


@dataclass(kw_only=True)
class Row:
    """What every row of every table has. Also the record of a table of no known kind."""

    TABLE: ClassVar[str] = "rows"

    id: str  # the table's key; a rerun appends a row with the same id and the latest wins
    status: str  # "ok" or "failed"
    failure: str | None = None  # failed rows: the kind, a ``failures.Failure`` value (absent in rows before kinds)
    code: str | None = None  # failed rows: a gRPC status name, ITEM_<n>, BAD_INPUT, INVALID_RESPONSE, UPSTREAM_FAILED
    reason: str | None = None  # failed rows: one line naming the row and the cause
    # Keys this version has no field for and explicit nulls, as read: written back unchanged.
    extra: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def ok(self) -> bool:
        return self.status == OK

    @classmethod
    def from_dict(cls: type[R], data: Mapping[str, Any]) -> R:
        """The record of a row as stored; raises RecordError naming the row when a field every row of the
        table has is missing."""
        names, required = _fields(cls)
        known = {k: v for k, v in data.items() if k in names and v is not None}
        missing = [k for k in required if k not in known]
        if missing:
            raise RecordError(
                f"{data.get('id', '(no id)')}: not a row of {cls.TABLE} (no {', '.join(missing)}): {dict(data)}"
            )
        extra = {k: v for k, v in data.items() if k not in known}
        return cls(**known, extra=extra)

    def to_dict(self) -> dict[str, Any]:
        """The row as stored: every field that is set, then what ``extra`` kept."""
        out = {}
        for name in _fields(type(self))[0]:
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        for k, v in self.extra.items():
            out.setdefault(k, v)
        return out


_FIELDS: dict[type, tuple[tuple[str, ...], tuple[str, ...]]] = {}


def _fields(cls: type[Row]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A record's stored fields (``extra`` is not one), and those without a default (every row has them);
    computed once per record type."""
    if cls not in _FIELDS:
        stored = [f for f in fields(cls) if f.name != "extra"]
        required = [f.name for f in stored if f.default is MISSING and f.default_factory is MISSING]
        _FIELDS[cls] = tuple(f.name for f in stored), tuple(required)
    return _FIELDS[cls]


@dataclass(kw_only=True)
class GenerationRecord(Row):
    """``generations.jsonl``: one generator's synthesis of one item for one task, at one I2D iteration.

    The id is ``generator|task|item``, with ``|i2d<k>`` for I2D iteration k > 1 (``generation_id``).
    Failed: the identity fields, what was known before the failure (``text``, ``attempts``) and the
    failure's ``failure``/``code``/``reason``.
    """

    TABLE: ClassVar[str] = "generations.jsonl"

    generator: str  # the generator service's name in the config
    task: str  # TTS, CLONE, VC, RECON, ... (a ``generator_pb2.Task`` name)
    item: str  # the manifest item's id
    seed: int  # the item's seed (run seed + its index), sent with the request and echoed back
    iteration: int | None = None  # I2D iteration, 1 = the one-shot clip (absent in rows before I2D: 1)
    speaker_reference: str | None = None  # the item whose voice SIM compares with (the target speaker)
    reference_clip: str | None = None  # I2D iteration k > 1: the id of iteration k-1's row, its reference audio
    text: str | None = None  # the words the clip should say, for WER ("" when unknown; absent: no text input)
    attempts: int | None = None  # calls made (retries included); absent when no call was made
    audio: str | None = None  # ok: the clip, relative to the run directory (``audio/ab/<sha256>.wav``)
    audio_sha256: str | None = None  # ok: sha256 of the WAV file's bytes
    sample_rate: int | None = None  # ok: Hz, the generator's declared native rate
    duration: float | None = None  # ok: seconds, rounded to 6 decimals
    voice: str | None = None  # ok: the voice the generator says it used
    timing: dict[str, Any] | None = None  # ok: the response's ``Timing`` message as JSON (wall_seconds, scope, ...)
    # ok, PARTIAL_* tasks: how the clip was spliced and its fake spans (``run.partial``): method, via (the
    # generator task called), aligner, crossfade_ms, spans [{start, end, start_seconds, end_seconds, replaced,
    # said}], fake_fraction
    partial: dict[str, Any] | None = None
    # ok, from a generator with ``watermark``: the mark's record (``run.watermark``): transform, steps,
    # unmarked_audio, unmarked_sha256, timing; ``audio`` is the marked clip
    watermark: dict[str, Any] | None = None

    @property
    def i2d_iteration(self) -> int:
        """The I2D iteration, 1 (the one-shot clip) for rows from before I2D."""
        return self.iteration or 1


@dataclass(kw_only=True)
class DetectionRecord(Row):
    """``detections.jsonl``: one detector's score of one clip (bona fide, corpus spoof or generated) as
    one channel condition delivers it; a fused detector's rows too (made after detection, ``fusion``).

    The id is ``detector|clip`` on the clean channel, ``detector@condition|clip`` otherwise (``detection_id``).
    """

    TABLE: ClassVar[str] = "detections.jsonl"

    detector: str  # the detector service's (or fused detector's) name in the config
    clip: str  # a manifest item's id (corpus clip) or a generations row's id
    kind: str  # "bonafide" or "spoof"
    generator: str  # the generator of a generated clip; "bonafide", or a corpus spoof's attack id
    task: str  # the generated clip's task; "" for a corpus clip
    item: str  # the manifest item the clip is (or was made from)
    speaker: str  # the item's speaker: the bootstrap's cluster
    condition: str | None = None  # the channel condition; absent in rows before conditions: "clean"
    iteration: int | None = None  # the clip's I2D iteration, 1 = one-shot (absent in rows before I2D: 1)
    score: float | None = None  # ok: higher = more bona fide (ASVspoof convention)
    is_llr: bool | None = None  # ok: the detector says its score is a calibrated log-likelihood ratio
    wall_seconds: float | None = None  # ok: the detector's timing of this clip
    # ok, in a run with partial fakes, for partial fakes and bona fide clips: segment scores (``run.segments``):
    # hop_seconds, scores (higher = more bona fide), source ("native" or "windows"), window_seconds
    segments: dict[str, Any] | None = None
    # ok, from a detector that traces sources (DetectorInfo.attribution): level -> label -> probability
    attribution: dict[str, dict[str, float]] | None = None

    @property
    def channel(self) -> str:
        """The channel condition, clean for rows from before conditions."""
        return self.condition or CLEAN

    @property
    def i2d_iteration(self) -> int:
        """The clip's I2D iteration, 1 (one-shot) for rows from before I2D."""
        return self.iteration or 1

    @property
    def scored(self) -> float:
        """The score of an ok row; a row without one is no ok row (RecordError naming it)."""
        if self.score is None:
            raise RecordError(f"{self.id}: a {self.status} row has no score")
        return float(self.score)


@dataclass(kw_only=True)
class StreamRecord(Row):
    """``streams.jsonl``: one detector's streamed scoring of one clip (``protocol.streaming``,
    ``run.streaming``): its running scores as the audio came, and the final one. Id ``detector|clip``."""

    TABLE: ClassVar[str] = "streams.jsonl"

    detector: str
    clip: str
    kind: str  # "bonafide" or "spoof"
    generator: str
    task: str
    item: str
    speaker: str
    iteration: int | None = None  # always 1: only one-shot clips are streamed
    chunk_seconds: float | None = None
    pacing: str | None = None  # "realtime" or "fast"
    # ok: each running score: audio_seconds (the audio it covers), score, latency_seconds (from its chunk's
    # sending to its arrival, at the client) and wall_seconds (the service's own timing)
    scores: list[dict[str, float]] | None = None
    final_score: float | None = None  # ok: the score after half-close
    is_llr: bool | None = None
    audio_seconds: float | None = None  # ok: the stream's length
    wall_seconds: float | None = None  # ok: the service's timings summed over the stream


@dataclass(kw_only=True)
class DegradationRecord(Row):
    """``degradations.jsonl``: a clip as one channel condition delivers it, computed once and reused by
    every detector. The id is ``condition|clip``."""

    TABLE: ClassVar[str] = "degradations.jsonl"

    condition: str  # the channel condition's name in the config
    clip: str  # the clip's id (a manifest item or a generations row)
    source_sha256: str  # sha256 of the clip degraded: a changed source is degraded anew
    audio: str | None = None  # ok: the degraded clip, relative to the run directory
    audio_sha256: str | None = None  # ok: sha256 of its WAV bytes
    sample_rate: int | None = None  # ok: Hz
    duration: float | None = None  # ok: seconds, rounded to 6 decimals
    # ok: the steps applied, in order, each one key: resample (Hz), codec (with compression, rate and the
    # measured kbps), noise_snr_db (with noise), gain_db, transform (with parameters, steps), attack (record)
    steps: list[dict[str, Any]] | None = None
    clipped_samples: int | None = None  # ok: samples clipped on the way back to PCM-16


@dataclass(kw_only=True)
class MeasurementRecord(Row):
    """``measurements.jsonl``: the scorer's raw measurements of one generated clip (id = its generation's)."""

    TABLE: ClassVar[str] = "measurements.jsonl"

    generator: str  # the clip's generator
    task: str  # the clip's task
    item: str  # the manifest item it was made from
    speaker: str  # the item's speaker: the bootstrap's cluster
    iteration: int | None = None  # the clip's I2D iteration (absent in rows before I2D: 1)
    values: dict[str, float] | None = None  # ok: raw values by key (``wer.errors``, ``wer.ref``, ``sim.cosine``, ...)
    notes: dict[str, str] | None = None  # ok: text the scorer returns (transcripts, ...)
    errors: dict[str, str] | None = None  # ok: metric -> why the scorer could not measure it on this clip

    @property
    def i2d_iteration(self) -> int:
        """The clip's I2D iteration, 1 (one-shot) for rows from before I2D."""
        return self.iteration or 1

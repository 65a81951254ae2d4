from voxarena.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DetectorFamily(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DETECTOR_FAMILY_UNSPECIFIED: _ClassVar[DetectorFamily]
    HANDCRAFTED_FRONT_END: _ClassVar[DetectorFamily]
    END_TO_END_RAW_WAVEFORM: _ClassVar[DetectorFamily]
    PRETRAINED_FRONT_END: _ClassVar[DetectorFamily]
DETECTOR_FAMILY_UNSPECIFIED: DetectorFamily
HANDCRAFTED_FRONT_END: DetectorFamily
END_TO_END_RAW_WAVEFORM: DetectorFamily
PRETRAINED_FRONT_END: DetectorFamily

class DetectorInfo(_message.Message):
    __slots__ = ("model", "family", "calibrated", "max_batch_size", "options", "min_seconds", "max_seconds", "sample_rates", "segment_hop_seconds", "attribution")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    CALIBRATED_FIELD_NUMBER: _ClassVar[int]
    MAX_BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    MIN_SECONDS_FIELD_NUMBER: _ClassVar[int]
    MAX_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_RATES_FIELD_NUMBER: _ClassVar[int]
    SEGMENT_HOP_SECONDS_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTION_FIELD_NUMBER: _ClassVar[int]
    model: _common_pb2.ModelInfo
    family: DetectorFamily
    calibrated: bool
    max_batch_size: int
    options: _containers.RepeatedCompositeFieldContainer[_common_pb2.OptionSpec]
    min_seconds: float
    max_seconds: float
    sample_rates: _containers.RepeatedScalarFieldContainer[int]
    segment_hop_seconds: float
    attribution: _containers.RepeatedCompositeFieldContainer[AttributionSpec]
    def __init__(self, model: _Optional[_Union[_common_pb2.ModelInfo, _Mapping]] = ..., family: _Optional[_Union[DetectorFamily, str]] = ..., calibrated: _Optional[bool] = ..., max_batch_size: _Optional[int] = ..., options: _Optional[_Iterable[_Union[_common_pb2.OptionSpec, _Mapping]]] = ..., min_seconds: _Optional[float] = ..., max_seconds: _Optional[float] = ..., sample_rates: _Optional[_Iterable[int]] = ..., segment_hop_seconds: _Optional[float] = ..., attribution: _Optional[_Iterable[_Union[AttributionSpec, _Mapping]]] = ...) -> None: ...

class AttributionSpec(_message.Message):
    __slots__ = ("level", "labels")
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    level: str
    labels: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, level: _Optional[str] = ..., labels: _Optional[_Iterable[str]] = ...) -> None: ...

class ScoreRequest(_message.Message):
    __slots__ = ("request_id", "audio", "parameters", "want_segments", "want_attribution")
    class ParametersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    WANT_SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    WANT_ATTRIBUTION_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    audio: _common_pb2.Audio
    parameters: _containers.ScalarMap[str, str]
    want_segments: bool
    want_attribution: bool
    def __init__(self, request_id: _Optional[str] = ..., audio: _Optional[_Union[_common_pb2.Audio, _Mapping]] = ..., parameters: _Optional[_Mapping[str, str]] = ..., want_segments: _Optional[bool] = ..., want_attribution: _Optional[bool] = ...) -> None: ...

class Attribution(_message.Message):
    __slots__ = ("level", "probabilities")
    class ProbabilitiesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    PROBABILITIES_FIELD_NUMBER: _ClassVar[int]
    level: str
    probabilities: _containers.ScalarMap[str, float]
    def __init__(self, level: _Optional[str] = ..., probabilities: _Optional[_Mapping[str, float]] = ...) -> None: ...

class SegmentScores(_message.Message):
    __slots__ = ("hop_seconds", "scores")
    HOP_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SCORES_FIELD_NUMBER: _ClassVar[int]
    hop_seconds: float
    scores: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, hop_seconds: _Optional[float] = ..., scores: _Optional[_Iterable[float]] = ...) -> None: ...

class ScoreResponse(_message.Message):
    __slots__ = ("request_id", "score", "is_llr", "timing", "segments", "attribution")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    IS_LLR_FIELD_NUMBER: _ClassVar[int]
    TIMING_FIELD_NUMBER: _ClassVar[int]
    SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    ATTRIBUTION_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    score: float
    is_llr: bool
    timing: _common_pb2.Timing
    segments: SegmentScores
    attribution: _containers.RepeatedCompositeFieldContainer[Attribution]
    def __init__(self, request_id: _Optional[str] = ..., score: _Optional[float] = ..., is_llr: _Optional[bool] = ..., timing: _Optional[_Union[_common_pb2.Timing, _Mapping]] = ..., segments: _Optional[_Union[SegmentScores, _Mapping]] = ..., attribution: _Optional[_Iterable[_Union[Attribution, _Mapping]]] = ...) -> None: ...

class ScoreBatchRequest(_message.Message):
    __slots__ = ("items",)
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[ScoreRequest]
    def __init__(self, items: _Optional[_Iterable[_Union[ScoreRequest, _Mapping]]] = ...) -> None: ...

class ScoreBatchItem(_message.Message):
    __slots__ = ("request_id", "result", "error")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    result: ScoreResponse
    error: ItemError
    def __init__(self, request_id: _Optional[str] = ..., result: _Optional[_Union[ScoreResponse, _Mapping]] = ..., error: _Optional[_Union[ItemError, _Mapping]] = ...) -> None: ...

class ItemError(_message.Message):
    __slots__ = ("code", "message")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class ScoreBatchResponse(_message.Message):
    __slots__ = ("items", "timing")
    ITEMS_FIELD_NUMBER: _ClassVar[int]
    TIMING_FIELD_NUMBER: _ClassVar[int]
    items: _containers.RepeatedCompositeFieldContainer[ScoreBatchItem]
    timing: _common_pb2.Timing
    def __init__(self, items: _Optional[_Iterable[_Union[ScoreBatchItem, _Mapping]]] = ..., timing: _Optional[_Union[_common_pb2.Timing, _Mapping]] = ...) -> None: ...

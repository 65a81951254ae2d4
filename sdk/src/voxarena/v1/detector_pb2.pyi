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
    WATERMARK_DECODER: _ClassVar[DetectorFamily]

class StreamingMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STREAMING_MODE_UNSPECIFIED: _ClassVar[StreamingMode]
    STREAMING_WINDOWED: _ClassVar[StreamingMode]
    STREAMING_NATIVE: _ClassVar[StreamingMode]

class StreamFinal(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STREAM_FINAL_WHOLE_CLIP: _ClassVar[StreamFinal]
    STREAM_FINAL_LAST_WINDOW: _ClassVar[StreamFinal]
DETECTOR_FAMILY_UNSPECIFIED: DetectorFamily
HANDCRAFTED_FRONT_END: DetectorFamily
END_TO_END_RAW_WAVEFORM: DetectorFamily
PRETRAINED_FRONT_END: DetectorFamily
WATERMARK_DECODER: DetectorFamily
STREAMING_MODE_UNSPECIFIED: StreamingMode
STREAMING_WINDOWED: StreamingMode
STREAMING_NATIVE: StreamingMode
STREAM_FINAL_WHOLE_CLIP: StreamFinal
STREAM_FINAL_LAST_WINDOW: StreamFinal

class DetectorInfo(_message.Message):
    __slots__ = ("model", "family", "calibrated", "max_batch_size", "options", "min_seconds", "max_seconds", "sample_rates", "segment_hop_seconds", "attribution", "streaming")
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
    STREAMING_FIELD_NUMBER: _ClassVar[int]
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
    streaming: StreamingInfo
    def __init__(self, model: _Optional[_Union[_common_pb2.ModelInfo, _Mapping]] = ..., family: _Optional[_Union[DetectorFamily, str]] = ..., calibrated: _Optional[bool] = ..., max_batch_size: _Optional[int] = ..., options: _Optional[_Iterable[_Union[_common_pb2.OptionSpec, _Mapping]]] = ..., min_seconds: _Optional[float] = ..., max_seconds: _Optional[float] = ..., sample_rates: _Optional[_Iterable[int]] = ..., segment_hop_seconds: _Optional[float] = ..., attribution: _Optional[_Iterable[_Union[AttributionSpec, _Mapping]]] = ..., streaming: _Optional[_Union[StreamingInfo, _Mapping]] = ...) -> None: ...

class StreamingInfo(_message.Message):
    __slots__ = ("mode", "window_seconds", "hop_seconds", "max_chunk_seconds", "target_latency_seconds", "final_scope")
    MODE_FIELD_NUMBER: _ClassVar[int]
    WINDOW_SECONDS_FIELD_NUMBER: _ClassVar[int]
    HOP_SECONDS_FIELD_NUMBER: _ClassVar[int]
    MAX_CHUNK_SECONDS_FIELD_NUMBER: _ClassVar[int]
    TARGET_LATENCY_SECONDS_FIELD_NUMBER: _ClassVar[int]
    FINAL_SCOPE_FIELD_NUMBER: _ClassVar[int]
    mode: StreamingMode
    window_seconds: float
    hop_seconds: float
    max_chunk_seconds: float
    target_latency_seconds: float
    final_scope: StreamFinal
    def __init__(self, mode: _Optional[_Union[StreamingMode, str]] = ..., window_seconds: _Optional[float] = ..., hop_seconds: _Optional[float] = ..., max_chunk_seconds: _Optional[float] = ..., target_latency_seconds: _Optional[float] = ..., final_scope: _Optional[_Union[StreamFinal, str]] = ...) -> None: ...

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

class StreamOpen(_message.Message):
    __slots__ = ("request_id", "sample_rate", "encoding", "parameters")
    class ParametersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_RATE_FIELD_NUMBER: _ClassVar[int]
    ENCODING_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    sample_rate: int
    encoding: _common_pb2.AudioEncoding
    parameters: _containers.ScalarMap[str, str]
    def __init__(self, request_id: _Optional[str] = ..., sample_rate: _Optional[int] = ..., encoding: _Optional[_Union[_common_pb2.AudioEncoding, str]] = ..., parameters: _Optional[_Mapping[str, str]] = ...) -> None: ...

class StreamChunk(_message.Message):
    __slots__ = ("sequence", "audio")
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    audio: _common_pb2.Audio
    def __init__(self, sequence: _Optional[int] = ..., audio: _Optional[_Union[_common_pb2.Audio, _Mapping]] = ...) -> None: ...

class ScoreStreamRequest(_message.Message):
    __slots__ = ("open", "chunk")
    OPEN_FIELD_NUMBER: _ClassVar[int]
    CHUNK_FIELD_NUMBER: _ClassVar[int]
    open: StreamOpen
    chunk: StreamChunk
    def __init__(self, open: _Optional[_Union[StreamOpen, _Mapping]] = ..., chunk: _Optional[_Union[StreamChunk, _Mapping]] = ...) -> None: ...

class StreamScore(_message.Message):
    __slots__ = ("request_id", "sequence", "audio_seconds", "score", "is_llr", "is_final", "timing")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    AUDIO_SECONDS_FIELD_NUMBER: _ClassVar[int]
    SCORE_FIELD_NUMBER: _ClassVar[int]
    IS_LLR_FIELD_NUMBER: _ClassVar[int]
    IS_FINAL_FIELD_NUMBER: _ClassVar[int]
    TIMING_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    sequence: int
    audio_seconds: float
    score: float
    is_llr: bool
    is_final: bool
    timing: _common_pb2.Timing
    def __init__(self, request_id: _Optional[str] = ..., sequence: _Optional[int] = ..., audio_seconds: _Optional[float] = ..., score: _Optional[float] = ..., is_llr: _Optional[bool] = ..., is_final: _Optional[bool] = ..., timing: _Optional[_Union[_common_pb2.Timing, _Mapping]] = ...) -> None: ...

from voxarena.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TransformKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TRANSFORM_KIND_UNSPECIFIED: _ClassVar[TransformKind]
    CHANNEL: _ClassVar[TransformKind]
    LAUNDERING: _ClassVar[TransformKind]
    ATTACK: _ClassVar[TransformKind]
    WATERMARK: _ClassVar[TransformKind]
TRANSFORM_KIND_UNSPECIFIED: TransformKind
CHANNEL: TransformKind
LAUNDERING: TransformKind
ATTACK: TransformKind
WATERMARK: TransformKind

class OptionRange(_message.Message):
    __slots__ = ("name", "min_value", "max_value", "choices")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MIN_VALUE_FIELD_NUMBER: _ClassVar[int]
    MAX_VALUE_FIELD_NUMBER: _ClassVar[int]
    CHOICES_FIELD_NUMBER: _ClassVar[int]
    name: str
    min_value: float
    max_value: float
    choices: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., min_value: _Optional[float] = ..., max_value: _Optional[float] = ..., choices: _Optional[_Iterable[str]] = ...) -> None: ...

class TransformInfo(_message.Message):
    __slots__ = ("model", "kind", "options", "ranges", "max_seconds")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    RANGES_FIELD_NUMBER: _ClassVar[int]
    MAX_SECONDS_FIELD_NUMBER: _ClassVar[int]
    model: _common_pb2.ModelInfo
    kind: TransformKind
    options: _containers.RepeatedCompositeFieldContainer[_common_pb2.OptionSpec]
    ranges: _containers.RepeatedCompositeFieldContainer[OptionRange]
    max_seconds: float
    def __init__(self, model: _Optional[_Union[_common_pb2.ModelInfo, _Mapping]] = ..., kind: _Optional[_Union[TransformKind, str]] = ..., options: _Optional[_Iterable[_Union[_common_pb2.OptionSpec, _Mapping]]] = ..., ranges: _Optional[_Iterable[_Union[OptionRange, _Mapping]]] = ..., max_seconds: _Optional[float] = ...) -> None: ...

class TransformRequest(_message.Message):
    __slots__ = ("request_id", "seed", "audio", "parameters")
    class ParametersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    seed: int
    audio: _common_pb2.Audio
    parameters: _containers.ScalarMap[str, str]
    def __init__(self, request_id: _Optional[str] = ..., seed: _Optional[int] = ..., audio: _Optional[_Union[_common_pb2.Audio, _Mapping]] = ..., parameters: _Optional[_Mapping[str, str]] = ...) -> None: ...

class TransformResponse(_message.Message):
    __slots__ = ("request_id", "seed", "audio", "timing", "steps")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    TIMING_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    seed: int
    audio: _common_pb2.Audio
    timing: _common_pb2.Timing
    steps: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, request_id: _Optional[str] = ..., seed: _Optional[int] = ..., audio: _Optional[_Union[_common_pb2.Audio, _Mapping]] = ..., timing: _Optional[_Union[_common_pb2.Timing, _Mapping]] = ..., steps: _Optional[_Iterable[str]] = ...) -> None: ...

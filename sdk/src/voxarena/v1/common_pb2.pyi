import datetime

from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AudioEncoding(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    AUDIO_ENCODING_UNSPECIFIED: _ClassVar[AudioEncoding]
    PCM_S16LE: _ClassVar[AudioEncoding]
    PCM_F32LE: _ClassVar[AudioEncoding]
AUDIO_ENCODING_UNSPECIFIED: AudioEncoding
PCM_S16LE: AudioEncoding
PCM_F32LE: AudioEncoding

class Audio(_message.Message):
    __slots__ = ("data", "sample_rate", "channels", "encoding")
    DATA_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_RATE_FIELD_NUMBER: _ClassVar[int]
    CHANNELS_FIELD_NUMBER: _ClassVar[int]
    ENCODING_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    sample_rate: int
    channels: int
    encoding: AudioEncoding
    def __init__(self, data: _Optional[bytes] = ..., sample_rate: _Optional[int] = ..., channels: _Optional[int] = ..., encoding: _Optional[_Union[AudioEncoding, str]] = ...) -> None: ...

class Timing(_message.Message):
    __slots__ = ("wall_seconds", "start", "end", "scope", "cpu_seconds")
    WALL_SECONDS_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    CPU_SECONDS_FIELD_NUMBER: _ClassVar[int]
    wall_seconds: float
    start: _timestamp_pb2.Timestamp
    end: _timestamp_pb2.Timestamp
    scope: str
    cpu_seconds: float
    def __init__(self, wall_seconds: _Optional[float] = ..., start: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., end: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., scope: _Optional[str] = ..., cpu_seconds: _Optional[float] = ...) -> None: ...

class OptionSpec(_message.Message):
    __slots__ = ("name", "description", "default_value")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    DEFAULT_VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    default_value: str
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., default_value: _Optional[str] = ...) -> None: ...

class ModelInfo(_message.Message):
    __slots__ = ("name", "version", "licence", "weights_sha256", "parameter_count", "native_sample_rate", "deterministic", "timing_scope", "metadata")
    class MetadataEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    NAME_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    LICENCE_FIELD_NUMBER: _ClassVar[int]
    WEIGHTS_SHA256_FIELD_NUMBER: _ClassVar[int]
    PARAMETER_COUNT_FIELD_NUMBER: _ClassVar[int]
    NATIVE_SAMPLE_RATE_FIELD_NUMBER: _ClassVar[int]
    DETERMINISTIC_FIELD_NUMBER: _ClassVar[int]
    TIMING_SCOPE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    name: str
    version: str
    licence: str
    weights_sha256: str
    parameter_count: int
    native_sample_rate: int
    deterministic: bool
    timing_scope: str
    metadata: _containers.ScalarMap[str, str]
    def __init__(self, name: _Optional[str] = ..., version: _Optional[str] = ..., licence: _Optional[str] = ..., weights_sha256: _Optional[str] = ..., parameter_count: _Optional[int] = ..., native_sample_rate: _Optional[int] = ..., deterministic: _Optional[bool] = ..., timing_scope: _Optional[str] = ..., metadata: _Optional[_Mapping[str, str]] = ...) -> None: ...

class GetInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

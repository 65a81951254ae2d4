from voxarena.v1 import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Task(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TASK_UNSPECIFIED: _ClassVar[Task]
    TTS: _ClassVar[Task]
    CLONE: _ClassVar[Task]
    RECONSTRUCT: _ClassVar[Task]
    CONVERT: _ClassVar[Task]

class GeneratorFamily(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    GENERATOR_FAMILY_UNSPECIFIED: _ClassVar[GeneratorFamily]
    ACOUSTIC_MODEL_VOCODER: _ClassVar[GeneratorFamily]
    FULLY_END_TO_END: _ClassVar[GeneratorFamily]
    NEURAL_CODEC_LANGUAGE_MODEL: _ClassVar[GeneratorFamily]
    VOCODER_GAN: _ClassVar[GeneratorFamily]
    VOCODER_DIFFUSION: _ClassVar[GeneratorFamily]
    VOCODER_DSP: _ClassVar[GeneratorFamily]
    RULE_BASED_FORMANT: _ClassVar[GeneratorFamily]
    CONCATENATIVE: _ClassVar[GeneratorFamily]
    VOICE_CONVERSION: _ClassVar[GeneratorFamily]
TASK_UNSPECIFIED: Task
TTS: Task
CLONE: Task
RECONSTRUCT: Task
CONVERT: Task
GENERATOR_FAMILY_UNSPECIFIED: GeneratorFamily
ACOUSTIC_MODEL_VOCODER: GeneratorFamily
FULLY_END_TO_END: GeneratorFamily
NEURAL_CODEC_LANGUAGE_MODEL: GeneratorFamily
VOCODER_GAN: GeneratorFamily
VOCODER_DIFFUSION: GeneratorFamily
VOCODER_DSP: GeneratorFamily
RULE_BASED_FORMANT: GeneratorFamily
CONCATENATIVE: GeneratorFamily
VOICE_CONVERSION: GeneratorFamily

class VoiceSpec(_message.Message):
    __slots__ = ("name", "language", "description", "sample_rate")
    NAME_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    SAMPLE_RATE_FIELD_NUMBER: _ClassVar[int]
    name: str
    language: str
    description: str
    sample_rate: int
    def __init__(self, name: _Optional[str] = ..., language: _Optional[str] = ..., description: _Optional[str] = ..., sample_rate: _Optional[int] = ...) -> None: ...

class GeneratorInfo(_message.Message):
    __slots__ = ("model", "family", "tasks", "voices", "options", "max_text_chars", "max_source_seconds", "min_source_seconds")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    FAMILY_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    VOICES_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    MAX_TEXT_CHARS_FIELD_NUMBER: _ClassVar[int]
    MAX_SOURCE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    MIN_SOURCE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    model: _common_pb2.ModelInfo
    family: GeneratorFamily
    tasks: _containers.RepeatedScalarFieldContainer[Task]
    voices: _containers.RepeatedCompositeFieldContainer[VoiceSpec]
    options: _containers.RepeatedCompositeFieldContainer[_common_pb2.OptionSpec]
    max_text_chars: int
    max_source_seconds: float
    min_source_seconds: float
    def __init__(self, model: _Optional[_Union[_common_pb2.ModelInfo, _Mapping]] = ..., family: _Optional[_Union[GeneratorFamily, str]] = ..., tasks: _Optional[_Iterable[_Union[Task, str]]] = ..., voices: _Optional[_Iterable[_Union[VoiceSpec, _Mapping]]] = ..., options: _Optional[_Iterable[_Union[_common_pb2.OptionSpec, _Mapping]]] = ..., max_text_chars: _Optional[int] = ..., max_source_seconds: _Optional[float] = ..., min_source_seconds: _Optional[float] = ...) -> None: ...

class SynthesizeRequest(_message.Message):
    __slots__ = ("request_id", "seed", "task", "text", "language", "voice", "reference_audio", "reference_text", "source_audio", "parameters")
    class ParametersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    LANGUAGE_FIELD_NUMBER: _ClassVar[int]
    VOICE_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_AUDIO_FIELD_NUMBER: _ClassVar[int]
    REFERENCE_TEXT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_AUDIO_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    seed: int
    task: Task
    text: str
    language: str
    voice: str
    reference_audio: _common_pb2.Audio
    reference_text: str
    source_audio: _common_pb2.Audio
    parameters: _containers.ScalarMap[str, str]
    def __init__(self, request_id: _Optional[str] = ..., seed: _Optional[int] = ..., task: _Optional[_Union[Task, str]] = ..., text: _Optional[str] = ..., language: _Optional[str] = ..., voice: _Optional[str] = ..., reference_audio: _Optional[_Union[_common_pb2.Audio, _Mapping]] = ..., reference_text: _Optional[str] = ..., source_audio: _Optional[_Union[_common_pb2.Audio, _Mapping]] = ..., parameters: _Optional[_Mapping[str, str]] = ...) -> None: ...

class SynthesizeResponse(_message.Message):
    __slots__ = ("request_id", "seed", "audio", "timing", "voice")
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    TIMING_FIELD_NUMBER: _ClassVar[int]
    VOICE_FIELD_NUMBER: _ClassVar[int]
    request_id: str
    seed: int
    audio: _common_pb2.Audio
    timing: _common_pb2.Timing
    voice: str
    def __init__(self, request_id: _Optional[str] = ..., seed: _Optional[int] = ..., audio: _Optional[_Union[_common_pb2.Audio, _Mapping]] = ..., timing: _Optional[_Union[_common_pb2.Timing, _Mapping]] = ..., voice: _Optional[str] = ...) -> None: ...

"""The service SDK: a model author writes ``load()`` and ``synthesize()`` / ``score_batch()`` / ``transform()``."""

from voxarena.codec import AudioClip

from .errors import InternalError, InvalidArgument, NotReady, ServiceError, TimeLimitExceeded, Unimplemented
from .model import (
    DetectorModel,
    GeneratorModel,
    Option,
    OptionRange,
    SynthesisRequest,
    SynthesisResult,
    TransformModel,
    TransformRequest,
    TransformResult,
    Voice,
)
from .server import create_model_server, create_server, serve

__all__ = [
    "AudioClip",
    "DetectorModel",
    "GeneratorModel",
    "InternalError",
    "InvalidArgument",
    "NotReady",
    "Option",
    "OptionRange",
    "ServiceError",
    "SynthesisRequest",
    "SynthesisResult",
    "TimeLimitExceeded",
    "TransformModel",
    "TransformRequest",
    "TransformResult",
    "Unimplemented",
    "Voice",
    "create_model_server",
    "create_server",
    "serve",
]

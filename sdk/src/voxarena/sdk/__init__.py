"""The service SDK: a model author writes ``load()`` and ``synthesize()`` / ``score_batch()`` / ``transform()``.

The names below load on first use (PEP 562), so ``python -m voxarena.sdk.healthcheck``, which every
container runs every 30 s, imports grpc and the health stubs only, not numpy and the server.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

_HOME = {
    "voxarena.codec": ["AudioClip"],
    "voxarena.sdk.errors": [
        "InternalError", "InvalidArgument", "NotReady", "ServiceError", "TimeLimitExceeded", "Unimplemented",
    ],
    "voxarena.sdk.model": [
        "DetectorModel", "GeneratorModel", "Option", "OptionRange", "SynthesisRequest", "SynthesisResult",
        "TransformModel", "TransformRequest", "TransformResult", "Voice",
    ],
    "voxarena.sdk.server": ["create_model_server", "create_server", "serve"],
}  # fmt: skip
_MODULE_OF = {name: module for module, names in _HOME.items() for name in names}
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


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value
    return value

"""The TransformService side of the SDK: validate and convert, call ``TransformModel.transform``, convert back."""

from __future__ import annotations

import grpc

from voxarena.codec import encode_audio
from voxarena.v1 import common_pb2, transform_pb2, transform_pb2_grpc

from .errors import InternalError, InvalidArgument
from .model import TransformModel, TransformRequest
from .servicers import RESPONSE_HEADROOM_BYTES, Stopwatch, _decode, _ModelServicer, _options, model_info


class TransformServicer(_ModelServicer, transform_pb2_grpc.TransformServiceServicer):
    """Every option is checked against its declared range and the audio against ``max_seconds`` before
    the model runs; the changed clip must fit a response (a resampling up or a reverb tail makes it
    larger than the input)."""

    model: TransformModel

    def __init__(self, model: TransformModel, max_message_mb: float) -> None:
        super().__init__(model)
        self.max_audio_bytes = int(max_message_mb * 1024 * 1024) - RESPONSE_HEADROOM_BYTES
        undeclared = sorted({o.name for o in model.options} - set(model.ranges))
        if undeclared or model.kind not in transform_pb2.TransformKind.keys()[1:]:
            raise TypeError(f"{model.name}: kind {model.kind!r}, options without a range: {undeclared}")

    def GetInfo(self, request: common_pb2.GetInfoRequest, context: grpc.ServicerContext) -> transform_pb2.TransformInfo:
        self._require_ready()
        m = self.model
        return transform_pb2.TransformInfo(
            model=model_info(m),
            kind=transform_pb2.TransformKind.Value(m.kind),
            options=_options(m),
            ranges=[
                transform_pb2.OptionRange(
                    name=o.name,
                    min_value=m.ranges[o.name].low,
                    max_value=m.ranges[o.name].high,
                    choices=m.ranges[o.name].choices,
                )
                for o in m.options
            ],
            max_seconds=m.max_seconds,
        )

    def Transform(
        self, request: transform_pb2.TransformRequest, context: grpc.ServicerContext
    ) -> transform_pb2.TransformResponse:
        self._require_ready()
        m = self.model
        if not request.request_id:
            raise InvalidArgument("request_id is empty")
        if not request.HasField("audio"):
            raise InvalidArgument("no audio to transform")
        options = m.checked_options(dict(request.parameters))
        clip = _decode(request.audio, "audio", m.max_seconds)
        with Stopwatch(m.timing_scope) as sw:
            result = m.transform(TransformRequest(request.request_id, request.seed, clip, options))
        if result.audio.samples.ndim != 1 or result.audio.samples.size == 0:
            raise InternalError(f"{m.name} returned {result.audio.samples.shape} samples: not a mono clip")
        audio = encode_audio(result.audio)
        if audio.ByteSize() > self.max_audio_bytes:
            raise InvalidArgument(
                f"the transformed audio is {result.audio.duration:.0f} s ({audio.ByteSize() / 2**20:.1f} MiB), more "
                f"than a response carries ({self.max_audio_bytes / 2**20:.1f} MiB): send a shorter clip"
            )
        return transform_pb2.TransformResponse(
            request_id=request.request_id, seed=request.seed, audio=audio, timing=sw.to_proto(), steps=result.steps
        )

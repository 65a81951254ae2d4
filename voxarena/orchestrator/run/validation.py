"""Validation of every service response; each error names the item and the reason."""

from __future__ import annotations

import math

from voxarena.codec import AudioClip, AudioFormatError, decode_audio
from voxarena.v1 import detector_pb2, generator_pb2, transform_pb2


class ResponseInvalid(ValueError):
    pass


def validate_generation(
    item_id: str,
    request: generator_pb2.SynthesizeRequest,
    response: generator_pb2.SynthesizeResponse,
    declared_rate: int,
    declared_scope: str,
    min_duration: float,
    max_duration: float,
) -> AudioClip:
    clip = _echoed_audio(item_id, request, response)
    if clip.sample_rate != declared_rate:
        raise ResponseInvalid(f"{item_id}: sample_rate {clip.sample_rate} != declared {declared_rate}")
    if not min_duration <= clip.duration <= max_duration:
        raise ResponseInvalid(f"{item_id}: duration {clip.duration:.3f} s outside [{min_duration}, {max_duration}] s")
    t = response.timing
    if not response.HasField("timing") or not math.isfinite(t.wall_seconds) or t.wall_seconds < 0:
        raise ResponseInvalid(f"{item_id}: missing or invalid timing")
    if t.scope != declared_scope:
        raise ResponseInvalid(f"{item_id}: timing scope {t.scope!r} != declared {declared_scope!r}")
    return clip


def validate_score(clip_id: str, request_id: str, response: detector_pb2.ScoreResponse) -> float:
    if response.request_id != request_id:
        raise ResponseInvalid(f"{clip_id}: request_id echo {response.request_id!r} != sent {request_id!r}")
    if not math.isfinite(response.score):
        raise ResponseInvalid(f"{clip_id}: score {response.score} is not finite")
    return response.score


def validate_transform(
    request_id: str, request: transform_pb2.TransformRequest, response: transform_pb2.TransformResponse
) -> AudioClip:
    """A transform's answer: its echoes, and audio that decodes (mono, finite, within full scale)."""
    return _echoed_audio(request_id, request, response)


def validate_resynthesis(
    request_id: str, request: generator_pb2.SynthesizeRequest, response: generator_pb2.SynthesizeResponse
) -> AudioClip:
    """A generator's re-synthesis of a clip for a condition step: its echoes, and audio that decodes."""
    return _echoed_audio(request_id, request, response)


def _echoed_audio(
    item_id: str,
    request: generator_pb2.SynthesizeRequest | transform_pb2.TransformRequest,
    response: generator_pb2.SynthesizeResponse | transform_pb2.TransformResponse,
) -> AudioClip:
    """An answer that echoes the request's id and seed and carries audio that decodes (non-empty, mono,
    positive rate, finite, whole samples) within full scale."""
    if response.request_id != request.request_id:
        raise ResponseInvalid(f"{item_id}: request_id echo {response.request_id!r} != sent {request.request_id!r}")
    if response.seed != request.seed:
        raise ResponseInvalid(f"{item_id}: seed echo {response.seed} != sent {request.seed}")
    if not response.HasField("audio"):
        raise ResponseInvalid(f"{item_id}: response has no audio")
    try:
        clip = decode_audio(response.audio, item_id)
    except AudioFormatError as e:
        raise ResponseInvalid(str(e)) from None
    if clip.samples.dtype.kind == "f" and float(abs(clip.samples).max()) > 1.0 + 1e-6:
        raise ResponseInvalid(
            f"{item_id}: float samples exceed full scale (max |x| = {float(abs(clip.samples).max()):.3f})"
        )
    return clip

"""How a check words what it sent and what came back: status codes, audio, long texts, byte differences,
a summary of many answers, and the tolerance a score is compared within."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import grpc

from voxarena.codec import AudioFormatError, decode_audio
from voxarena.v1 import common_pb2


def code_of(e: grpc.RpcError) -> grpc.StatusCode:
    return e.code() if hasattr(e, "code") else grpc.StatusCode.UNKNOWN


def describe_error(e: grpc.RpcError) -> str:
    details = e.details() if hasattr(e, "details") else ""
    return f"{code_of(e).name}: {details!r}"


def describe_audio(msg: common_pb2.Audio) -> str:
    try:
        clip = decode_audio(msg, "audio")
        return f"{clip.duration:.2f} s at {clip.sample_rate} Hz"
    except AudioFormatError:
        known = msg.encoding in common_pb2.AudioEncoding.values()
        encoding = common_pb2.AudioEncoding.Name(msg.encoding) if known else msg.encoding
        return f"{len(msg.data)} bytes, {msg.sample_rate} Hz, {msg.channels} channel(s), {encoding}"


def short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def first_difference(a: bytes, b: bytes) -> str:
    """Where two byte strings part: their lengths, and the first differing byte offset."""
    n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"{len(a)} vs {len(b)} bytes, first difference at byte {n}"


def summarise(problems: list[str], total: int, shown: int = 3) -> str:
    """The first few problems of ``total`` answers (all fine: say so)."""
    if not problems:
        return f"{total} correct answers"
    more = f"; and {len(problems) - shown} more" if len(problems) > shown else ""
    return f"{len(problems)} of {total} wrong: " + "; ".join(problems[:shown]) + more


def close(a: float, b: float, rel: float = 1e-6) -> bool:
    """Equal within ``rel`` relative to the larger magnitude, absolute ``rel`` below magnitude 1."""
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def answered_at_once(
    requests: Sequence[Any], call: Callable[..., grpc.Future], timeout: float, problems: list[str]
) -> Iterator[tuple[int, Any, Any]]:
    """Every request sent at once (``call.future``); then (index, request, response) of each that
    succeeded, in request order, after a line in ``problems`` for each that failed."""
    futures = [call.future(r, timeout=timeout) for r in requests]  # type: ignore[attr-defined]
    for i, (r, f) in enumerate(zip(requests, futures)):
        try:
            response = f.result()
        except grpc.RpcError as e:
            problems.append(f"{r.request_id!r}: {describe_error(e)}")
            continue
        yield i, r, response

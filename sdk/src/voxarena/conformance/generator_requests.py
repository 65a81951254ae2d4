"""The requests the generator checks send and how they are described: the texts, seeds and audio inputs
of each task (voxarena.tasks, the contract's one copy of which task needs what), a request and a
response in one line, and the duration a plausible answer has."""

from __future__ import annotations

from voxarena.codec import decode_audio
from voxarena.tasks import task_inputs
from voxarena.v1 import generator_pb2

from .evidence import describe_audio, short

TEXTS = ("The quick brown fox jumps over the lazy dog.", "Pack my box with five dozen liquor jugs.")
# Shorter inputs for the checks that repeat a request many times (voices, options, concurrency): cheaper for
# slow engines.
LIGHT_TEXTS = ("Good morning to you.", "Thank you very much.")
LIGHT_SECONDS = 1.0
SEED = 424242
SECONDS_PER_CHAR = (0.02, 1.0)  # plausible speech per character of text, pauses and silences included
SOURCE_FACTOR = 2.0  # RECONSTRUCT / CONVERT keep the source's duration within this factor
ALL_TASKS = (generator_pb2.TTS, generator_pb2.CLONE, generator_pb2.RECONSTRUCT, generator_pb2.CONVERT)
AUDIO_INPUTS = ("reference_audio", "source_audio")


def task_name(task: int) -> str:
    return generator_pb2.Task.Name(task) if task in generator_pb2.Task.values() else str(task)


def required_inputs(task: int) -> tuple[str, ...]:
    """The request fields ``task`` needs (voxarena.tasks, the contract's one copy of the rule);
    ``reference_text`` is optional ("may be empty"), so never required."""
    needs = task_inputs(task_name(task))
    return tuple(
        f
        for f, need in (("text", needs.text), ("reference_audio", needs.reference), ("source_audio", needs.source))
        if need
    )


def describe(req: generator_pb2.SynthesizeRequest) -> str:
    parts = [task_name(req.task)]
    if req.voice:
        parts.append(f"voice={req.voice!r}")
    if req.text:
        parts.append(f"text={short(req.text)!r} ({len(req.text)} chars)")
    for name in AUDIO_INPUTS:
        if req.HasField(name):
            parts.append(f"{name}={describe_audio(getattr(req, name))}")
    parts.append(f"seed={req.seed}")
    parts.append(f"request_id={req.request_id!r}")
    if req.parameters:
        parts.append(f"parameters={dict(sorted(req.parameters.items()))}")
    return " ".join(parts)


def describe_response(resp: generator_pb2.SynthesizeResponse) -> str:
    return f"request_id={resp.request_id!r} seed={resp.seed} audio {describe_audio(resp.audio)}"


def plausible_duration(req: generator_pb2.SynthesizeRequest) -> tuple[float, float, str]:
    """Bounds (seconds) of a plausible answer to ``req`` and what they are based on."""
    if req.task in (generator_pb2.TTS, generator_pb2.CLONE):
        n = len(req.text)
        return (
            SECONDS_PER_CHAR[0] * n,
            SECONDS_PER_CHAR[1] * n,
            f"{SECONDS_PER_CHAR[0]:g}..{SECONDS_PER_CHAR[1]:g} s per character of {n}",
        )
    source = decode_audio(req.source_audio, "source_audio").duration
    return source / SOURCE_FACTOR, source * SOURCE_FACTOR, f"within x{SOURCE_FACTOR:g} of the {source:.2f} s source"

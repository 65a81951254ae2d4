"""Which inputs each generation task takes: the one copy of the rule ``generator.proto`` states in comments.

The SDK server refuses a request that lacks a required input, the orchestrator builds requests
from it, and the test doubles read it to know what they were given; none of them spells the task
lists out again.
"""

from __future__ import annotations

from dataclasses import dataclass

# The tasks of ``voxarena.v1.Task``, in the enum's order (TASK_UNSPECIFIED is no task).
TASKS = ("TTS", "CLONE", "RECONSTRUCT", "CONVERT")


@dataclass(frozen=True)
class TaskInputs:
    """The ``SynthesizeRequest`` fields a task reads."""

    text: bool  # ``text``: the words to speak
    reference: bool  # ``reference_audio``: the target voice
    reference_text: bool  # ``reference_text``: the reference's transcript (optional; some engines need it)
    source: bool  # ``source_audio``: the speech to resynthesise or convert


_INPUTS = {
    "TTS": TaskInputs(text=True, reference=False, reference_text=False, source=False),
    "CLONE": TaskInputs(text=True, reference=True, reference_text=True, source=False),
    "RECONSTRUCT": TaskInputs(text=False, reference=False, reference_text=False, source=True),
    "CONVERT": TaskInputs(text=False, reference=True, reference_text=False, source=True),
}


def task_inputs(task: str) -> TaskInputs:
    """The inputs of ``task`` (a name of ``voxarena.v1.Task``); an unknown name is a ValueError naming it."""
    try:
        return _INPUTS[task]
    except KeyError:
        raise ValueError(f"unknown task {task!r}; tasks: {', '.join(TASKS)}") from None

"""Source tracing in the contract (detector.proto: ``DetectorInfo.attribution``, ``want_attribution``,
``ScoreResponse.attribution``): what a declaration and an answer must be, checked once for the SDK (which
refuses to serve a bad declaration or answer) and conformance (which reports them).

A declaration is levels (``LEVELS``), each once, each with at least two distinct non-empty labels; an
answer is, per declared level in declared order, a probability for exactly that level's labels, each in
[0, 1], summing to 1 within ``SUM_TOLERANCE``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

LEVELS = ("generator", "family", "vocoder")
UNKNOWN = "unknown"  # the label of an open-set tracer that does not know the system
SUM_TOLERANCE = 1e-6


def spec_problems(levels: Sequence[tuple[str, Sequence[str]]]) -> list[str]:
    """What is wrong with a declaration of (level, labels) pairs; empty when nothing is."""
    problems, seen = [], set()
    for level, labels in levels:
        if level not in LEVELS:
            problems.append(f"level {level!r} is not one of {', '.join(LEVELS)}")
        if level in seen:
            problems.append(f"level {level!r} is declared twice")
        seen.add(level)
        if len(labels) < 2 or len(set(labels)) != len(labels) or not all(labels):
            problems.append(f"level {level!r}: labels {list(labels)} are not two or more distinct non-empty ones")
    return problems


def answer_problems(
    levels: Sequence[tuple[str, Sequence[str]]], answer: Sequence[tuple[str, Mapping[str, float]]]
) -> list[str]:
    """What is wrong with one clip's answer, (level, label -> probability) pairs, against the declaration."""
    if [level for level, _ in answer] != [level for level, _ in levels]:
        return [f"levels {[lv for lv, _ in answer]}, declared {[lv for lv, _ in levels]}"]
    problems = []
    for (level, labels), (_, probabilities) in zip(levels, answer):
        if set(probabilities) != set(labels):
            problems.append(f"{level}: labels {sorted(probabilities)}, declared {sorted(labels)}")
            continue
        values = list(probabilities.values())
        if not all(math.isfinite(v) and 0.0 <= v <= 1.0 for v in values):
            problems.append(f"{level}: a probability outside [0, 1]")
        elif abs(sum(values) - 1.0) > SUM_TOLERANCE:
            problems.append(f"{level}: probabilities sum to {sum(values):.9g}, not 1")
    return problems

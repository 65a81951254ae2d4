"""The contract-side rules: each task's inputs and the default metric list, checked against the
proto, the SDK server, the scorer's registry and the orchestrator's config."""

from __future__ import annotations

import pytest

from voxarena.metric_catalogue import DEFAULT_METRICS
from voxarena.tasks import TASKS, task_inputs
from voxarena.v1 import generator_pb2


def test_tasks_are_the_proto_enum():
    assert TASKS == tuple(n for n in generator_pb2.Task.keys() if n != "TASK_UNSPECIFIED")


@pytest.mark.parametrize(
    "task,text,reference,source",
    [
        # generator.proto: TTS needs text; CLONE text and reference_audio; RECONSTRUCT source_audio;
        # CONVERT source_audio and reference_audio.
        ("TTS", True, False, False),
        ("CLONE", True, True, False),
        ("RECONSTRUCT", False, False, True),
        ("CONVERT", False, True, True),
    ],
)
def test_inputs_as_the_proto_states_them(task, text, reference, source):
    needs = task_inputs(task)
    assert (needs.text, needs.reference, needs.source) == (text, reference, source)
    assert needs.reference_text == (task == "CLONE")


def test_unknown_task_is_named():
    with pytest.raises(ValueError, match="unknown task 'SING'"):
        task_inputs("SING")


def test_i2d_iterates_the_reference_tasks():
    from voxarena.orchestrator.run.config import I2D_TASKS

    assert set(I2D_TASKS) == {"CLONE", "CONVERT"}


def test_default_metrics_are_registered_and_the_config_default():
    from voxarena.orchestrator.run.config import ScorerConfig
    from voxarena.scorers.registry import REGISTRY

    assert set(DEFAULT_METRICS) <= set(REGISTRY)
    assert ScorerConfig().metrics == list(DEFAULT_METRICS)
    assert ScorerConfig().metrics is not ScorerConfig().metrics  # no shared mutable default

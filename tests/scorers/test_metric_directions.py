"""A metric's direction is written once, in ``voxarena.default_metrics.HIGHER_IS_BETTER``: every
registered metric class takes it from there, and GetInfo reports it."""

from __future__ import annotations

import inspect

import pytest

from voxarena.default_metrics import HIGHER_IS_BETTER
from voxarena.scorers.registry import REGISTRY, Metric, metric_class
from voxarena.scorers.service import ScorerServicer
from voxarena.v1 import common_pb2

# By definition: error rates, the real-time factor and distances to the reference are lower-is-better;
# similarities, MOS predictions and fidelity scores higher-is-better.
LOWER_IS_BETTER = {"wer", "cer", "wer_pocketsphinx", "rtf", "ls_mse", "mcd"}


def test_the_table_holds_exactly_the_registered_metrics():
    assert set(HIGHER_IS_BETTER) == set(REGISTRY)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_each_metric_class_reads_its_direction_from_the_table(name):
    cls = metric_class(name)
    assert cls.name == name
    assert cls.higher_is_better is HIGHER_IS_BETTER[name]
    assert cls.higher_is_better is (name not in LOWER_IS_BETTER)
    for klass in cls.__mro__[: cls.__mro__.index(Metric)]:  # not written again on the class or its bases
        assert "higher_is_better" not in inspect.getsource(klass), klass


def test_getinfo_reports_the_tables_direction():
    servicer = ScorerServicer(fingerprint_metrics=("rtf",))
    servicer.load()
    specs = servicer.GetInfo(common_pb2.GetInfoRequest(), None).metrics
    assert {m.name: m.higher_is_better for m in specs} == {n: n not in LOWER_IS_BETTER for n in REGISTRY}


def test_a_metric_missing_from_the_table_is_refused_when_defined():
    with pytest.raises(TypeError, match="metric 'loudness' .* has no direction in voxarena.default_metrics"):

        class Loudness(Metric):  # defining it is the test
            name = "loudness"

            def measure(self, clip):
                return {}, {}

            def aggregate(self, rows):
                return 0.0

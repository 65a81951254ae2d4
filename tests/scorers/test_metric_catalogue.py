"""The scorer's registry is a view of the metric catalogue (``voxarena.metric_catalogue``): every
metric class is the one its row names, takes its direction, needs, columns and aggregation from that
row (never writes them itself), produces exactly the row's columns, and GetInfo reports the rows."""

from __future__ import annotations

import inspect
from pathlib import Path

import numpy as np
import pytest

from voxarena.codec import AudioClip
from voxarena.metric_catalogue import METRICS
from voxarena.scorers.registry import CATALOGUED, REGISTRY, ClipInputs, Metric, get_metric, metric_class
from voxarena.scorers.service import ScorerServicer
from voxarena.v1 import common_pb2

# The registry as it was written before the catalogue (so no name or class moved).
OLD_REGISTRY = {
    "wer": "voxarena.scorers.asr:WhisperWER",
    "cer": "voxarena.scorers.asr:WhisperCER",
    "wer_pocketsphinx": "voxarena.scorers.asr_pocketsphinx:PocketsphinxWER",
    "sim": "voxarena.scorers.speaker:ResemblyzerSIM",
    "rtf": "voxarena.scorers.timing:RealTimeFactor",
    "dnsmos": "voxarena.scorers.quality:Dnsmos",
    "mos_distill": "voxarena.scorers.mos_distill:MosDistill",
    "pesq": "voxarena.scorers.reference:Pesq",
    "stoi": "voxarena.scorers.reference:Stoi",
    "psnr": "voxarena.scorers.reference:Psnr",
    "ssim": "voxarena.scorers.reference:Ssim",
    "ls_mse": "voxarena.scorers.reference:LogMelMse",
    "mcd": "voxarena.scorers.reference:MelCepstralDistortion",
    "cloneval": "voxarena.scorers.cloneval:ClonEvalFeatures",
}
# By definition: error rates, the real-time factor and distances to the reference are lower-is-better;
# similarities, MOS predictions and fidelity scores higher-is-better.
LOWER_IS_BETTER = {"wer", "cer", "wer_pocketsphinx", "rtf", "ls_mse", "mcd"}


def test_the_registry_is_the_catalogues_view_and_what_it_was():
    assert REGISTRY == OLD_REGISTRY
    assert list(REGISTRY) == list(METRICS)


@pytest.mark.parametrize("name", sorted(METRICS))
def test_each_metric_class_agrees_with_its_row(name):
    row, cls = METRICS[name], metric_class(name)
    assert cls.name == name
    assert f"{cls.__module__}:{cls.__qualname__}" == row.implementation
    assert cls.higher_is_better is row.higher_is_better is (name not in LOWER_IS_BETTER)
    assert (cls.needs, cls.output_columns(), cls.aggregation) == (row.needs, row.columns, row.aggregation)
    # What aggregating produces is the row's columns, in its order (no clips: every column NaN).
    assert tuple(cls().aggregate_columns([])) == row.columns
    for klass in cls.__mro__[: cls.__mro__.index(Metric)]:  # not written again on the class or its bases
        source = inspect.getsource(klass)
        assert not [a for a in CATALOGUED if f"{a} =" in source or f"{a}: " in source], klass
    assert cls.description and "\n" not in cls.description


def test_clonevals_columns_are_its_features():
    from voxarena.scorers.cloneval import FEATURES, ClonEvalFeatures

    assert ClonEvalFeatures.columns == tuple(f"cloneval_{f}" for f in FEATURES)


def test_measured_values_aggregate_to_the_rows_columns():
    """A real clip through cheap metrics: each value is keyed "<name>.<quantity>" (the scorer's
    Aggregate finds a metric's clips by that prefix) and the figures are the row's columns."""
    t = np.arange(16000) / 16000
    ref = AudioClip((0.3 * np.sin(2 * np.pi * 220 * t) * (1 + np.sin(2 * np.pi * 3 * t))).astype(np.float32), 16000)
    gen = AudioClip((ref.samples + 0.01 * np.random.default_rng(0).standard_normal(16000)).astype(np.float32), 16000)
    clip = ClipInputs("c", gen, source_reference=ref, reference_aligned=True, generation_wall_seconds=0.5)
    for name in ("rtf", "psnr", "ssim", "stoi", "ls_mse"):
        values, _ = get_metric(name).measure(clip)
        assert values and all(k.startswith(f"{name}.") for k in values), (name, values)
        figures = get_metric(name).aggregate_columns([values])
        assert tuple(figures) == METRICS[name].columns
        assert all(np.isfinite(v) for v in figures.values()), (name, figures)


def test_getinfo_reports_the_catalogue():
    servicer = ScorerServicer(fingerprint_metrics=("rtf",))
    servicer.load()
    specs = servicer.GetInfo(common_pb2.GetInfoRequest(), None).metrics
    assert [m.name for m in specs] == sorted(METRICS)
    for m in specs:
        row = METRICS[m.name]
        assert (m.higher_is_better, m.aggregation, tuple(m.needs), tuple(m.columns)) == (
            row.higher_is_better,
            row.aggregation,
            row.needs,
            row.columns,
        )
        assert m.description == metric_class(m.name).description
    assert {m.name: m.higher_is_better for m in specs} == {n: n not in LOWER_IS_BETTER for n in OLD_REGISTRY}


def _define(name: str, module: str = __name__, **attrs):
    """Defines a Metric class named ``name`` (in ``module``) with ``attrs``: defining it is the test."""

    def measure(self, clip):
        return {}, {}

    def aggregate(self, rows):
        return 0.0

    body = {"name": name, "__module__": module, "measure": measure, "aggregate": aggregate, **attrs}
    return type("Loudness", (Metric,), body)


def test_a_metric_without_a_row_is_refused_when_defined():
    with pytest.raises(TypeError, match="metric 'loudness' .* has no row in voxarena.metric_catalogue"):
        _define("loudness")


def test_a_class_other_than_the_rows_is_refused():
    with pytest.raises(TypeError, match="metric 'rtf': its catalogue row names voxarena.scorers.timing:RealTimeFactor"):
        _define("rtf")


@pytest.mark.parametrize("attribute", CATALOGUED)
def test_a_class_writing_a_catalogued_fact_is_refused(attribute):
    with pytest.raises(TypeError, match=f"RealTimeFactor sets {attribute}, which its voxarena.metric_catalogue row"):
        _define("rtf", "voxarena.scorers.timing", __qualname__="RealTimeFactor", **{attribute: ()})


def test_a_row_without_a_class_attribute_is_taken_whole():
    cls = _define("rtf", "voxarena.scorers.timing", __qualname__="RealTimeFactor")
    assert (cls.higher_is_better, cls.needs, cls.columns) == (False, ("timing",), ("rtf",))


def test_the_readme_table_defines_every_catalogued_metric():
    """voxarena/scorers/README.md's "Generator metrics" table gives each metric's full definition: one
    row per catalogue row, each of its columns named where it has more than one."""
    readme = (Path(__file__).resolve().parents[2] / "voxarena" / "scorers" / "README.md").read_text()
    section = readme.split("## Generator metrics", 1)[1]
    cells = {}
    for line in section.strip().split("\n\n", 1)[0].splitlines():
        if line.startswith("| `"):
            first = line.split("|")[1].strip()
            cells[first.split("`")[1]] = first
    assert sorted(cells) == sorted(METRICS)
    for name, cell in cells.items():
        for c in METRICS[name].columns if len(METRICS[name].columns) > 1 else ():
            assert f"`{c}`" in cell or f"`_{c.split('_', 1)[-1]}`" in cell, (name, c)

"""The metric catalogue (``voxarena.metric_catalogue``): its views say what the tables they replaced
said (so no run's metrics or composite scores move), its rows are checked when written, and reading
it loads nothing but the standard library."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from voxarena.metric_catalogue import (
    DEFAULT_METRICS,
    HIGHER_IS_BETTER,
    INPUTS,
    METRICS,
    MetricEntry,
    UnknownMetric,
    _index,
    metric_entry,
)

# voxarena/default_metrics.py, as it stood before the catalogue.
OLD_DEFAULT_METRICS = ("wer", "cer", "sim", "rtf", "dnsmos", "pesq", "stoi", "psnr", "ssim", "ls_mse", "mcd")
OLD_HIGHER_IS_BETTER = {
    "wer": False,
    "cer": False,
    "wer_pocketsphinx": False,
    "rtf": False,
    "ls_mse": False,
    "mcd": False,
    "sim": True,
    "cloneval": True,
    "dnsmos": True,
    "mos_distill": True,
    "pesq": True,
    "stoi": True,
    "psnr": True,
    "ssim": True,
}


def test_the_views_say_what_the_old_tables_said():
    assert DEFAULT_METRICS == OLD_DEFAULT_METRICS  # in order: the config default and its tables follow it
    assert HIGHER_IS_BETTER == OLD_HIGHER_IS_BETTER


def test_the_statistics_core_reads_the_catalogues_directions():
    from voxarena.stats import composite

    assert composite.HIGHER_IS_BETTER is HIGHER_IS_BETTER


def test_every_row_is_complete():
    for name, row in METRICS.items():
        assert row.name == name
        assert set(row.needs) <= set(INPUTS)
        assert row.unit and row.aggregation and row.reference and row.summary.endswith(".")
        assert row.to_dict()["columns"] == row.columns


def test_reading_the_catalogue_loads_only_the_standard_library():
    code = (
        "import json, sys; before = set(sys.modules); import voxarena.metric_catalogue; "
        "new = {m.split('.')[0] for m in set(sys.modules) - before}; "
        "print(json.dumps(sorted(new - set(sys.stdlib_module_names))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == ["voxarena"]


@pytest.mark.parametrize(
    "name,hint",
    [("werr", "; did you mean 'wer'?"), ("pesqq", "; did you mean 'pesq'?"), ("loudness", ".")],
)
def test_an_unknown_name_says_what_exists(name, hint):
    with pytest.raises(UnknownMetric) as e:
        metric_entry(name)
    assert str(e.value) == f"unknown metric {name!r}{hint} Known metrics: {', '.join(sorted(METRICS))}"


def _row(**change) -> MetricEntry:
    fields = {**METRICS["wer"].to_dict(), **change}
    return MetricEntry(**fields)


@pytest.mark.parametrize(
    "change,message",
    [
        ({"needs": ("lyrics",)}, "metric 'wer': unknown inputs \\['lyrics'\\]"),
        ({"implementation": "voxarena.scorers.asr.WhisperWER"}, "is not 'module:Class'"),
        ({"columns": ()}, "metric 'wer': no result columns"),
        ({"summary": "two\nlines"}, "metric 'wer': the summary is one line"),
    ],
)
def test_a_bad_row_is_refused_naming_the_metric(change, message):
    with pytest.raises(ValueError, match=message):
        _row(**change)


def test_a_name_written_twice_is_refused():
    with pytest.raises(ValueError, match="metric 'wer' has two rows in the catalogue"):
        _index((METRICS["wer"], METRICS["cer"], _row()))

"""``orchestrator metrics list`` and ``orchestrator metrics describe NAME``: the metric catalogue on the
command line, read without loading the scorer or any metric backend."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from voxarena.metric_catalogue import METRICS
from voxarena.orchestrator.cli.app import app

runner = CliRunner()


def test_list_has_one_line_per_metric_with_its_facts():
    result = runner.invoke(app, ["metrics", "list"])
    assert result.exit_code == 0, result.output
    header, *lines = result.stdout.splitlines()
    assert header.split() == ["metric", "default", "better", "needs", "measures"]
    assert [line.split()[0] for line in lines] == list(METRICS)
    rows = {line.split()[0]: line.split() for line in lines}
    assert rows["wer"][1:4] == ["yes", "lower", "text"]
    assert rows["cloneval"][1:4] == ["no", "higher", "speaker_reference"]
    assert rows["dnsmos"][1:4] == ["yes", "higher", "-"]
    assert lines[0].endswith(METRICS["wer"].summary)


def test_list_as_json_is_every_row():
    result = runner.invoke(app, ["metrics", "list", "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["name"] for r in rows] == list(METRICS)
    assert rows[0] == json.loads(json.dumps(METRICS["wer"].to_dict()))


def test_describe_shows_the_whole_row():
    result = runner.invoke(app, ["metrics", "describe", "stoi"])
    assert result.exit_code == 0, result.output
    row = METRICS["stoi"]
    lines = result.stdout.splitlines()
    assert lines[0] == f"stoi: {row.summary}"
    fields = {line.split()[0]: line.split(None, 1)[1] for line in lines[1:]}
    assert fields == {
        "unit": row.unit,
        "direction": "higher is better",
        "default": "yes: a run computes it when its config names no metrics",
        "needs": "source_reference: the clip's source, or the original recording of the same words "
        "(ClipRequest.source_reference); the time-aligned metrics also need reference_aligned",
        "columns": "stoi, estoi",
        "aggregation": "mean",
        "reference": row.reference,
        "implementation": "voxarena.scorers.reference:Stoi",
    }


def test_describe_a_metric_off_by_default_and_without_inputs():
    result = runner.invoke(app, ["metrics", "describe", "mos_distill"])
    assert result.exit_code == 0, result.output
    assert "  default        no: computed when a run's config names it" in result.stdout
    assert "  needs          the generated audio only" in result.stdout
    assert "  direction      higher is better" in result.stdout


def test_describe_as_json_is_the_row():
    result = runner.invoke(app, ["metrics", "describe", "rtf", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == json.loads(json.dumps(METRICS["rtf"].to_dict()))


@pytest.mark.parametrize("name,hint", [("werr", "did you mean 'wer'?"), ("pesqq", "did you mean 'pesq'?")])
def test_describe_an_unknown_name_suggests_the_closest(name, hint):
    result = runner.invoke(app, ["metrics", "describe", name])
    assert result.exit_code == 2
    assert f"unknown metric {name!r}; {hint}" in result.output
    assert "Known metrics: cer, cloneval" in result.output


def test_describe_a_name_like_none_lists_every_metric():
    result = runner.invoke(app, ["metrics", "describe", "loudness"])
    assert result.exit_code == 2
    assert "did you mean" not in result.output
    assert f"Known metrics: {', '.join(sorted(METRICS))}" in " ".join(result.output.split())


def test_list_and_describe_load_no_scorer_module():
    code = (
        "import sys; from typer.testing import CliRunner; from voxarena.orchestrator.cli.app import app; "
        "r = CliRunner(); assert r.invoke(app, ['metrics', 'list']).exit_code == 0; "
        "assert r.invoke(app, ['metrics', 'describe', 'wer']).exit_code == 0; "
        "print(sorted(m for m in sys.modules if m.startswith(('voxarena.scorers', 'torch', 'onnxruntime', 'librosa'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"

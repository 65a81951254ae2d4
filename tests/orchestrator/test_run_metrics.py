"""The orchestrator's Prometheus metrics show the run being worked on, rows done and expected per stage and
failures by kind, and nothing between runs; `orchestrator run --metrics-port` refuses a port it cannot bind."""

from __future__ import annotations

import socket
import urllib.request

from typer.testing import CliRunner

from voxarena.orchestrator.cli.app import app
from voxarena.orchestrator.run import run_metrics


def scrape(port: int) -> str:
    return urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()


def test_the_current_run_is_shown_while_it_works_and_only_then():
    port = run_metrics.serve(0)
    progress = {"generate": (3, 10), "detect": (1, 20)}
    failures = {"input": 2}
    with run_metrics.watching("demo", lambda: progress, lambda: failures):
        text = scrape(port)
        assert 'voxarena_run_info{run="demo"} 1.0' in text
        assert 'voxarena_run_done{stage="generate"} 3.0' in text
        assert 'voxarena_run_expected{stage="detect"} 20.0' in text
        assert 'voxarena_run_failures{kind="input"} 2.0' in text
        progress["generate"] = (4, 10)
        assert 'voxarena_run_done{stage="generate"} 4.0' in scrape(port)  # read at scrape time
    assert "voxarena_run_info{" not in scrape(port)


def test_a_metrics_port_in_use_is_refused_before_any_work(tmp_path):
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = CliRunner().invoke(app, ["run", str(tmp_path / "none.yaml"), "--metrics-port", str(port)])
    assert result.exit_code == 2
    assert f"cannot serve metrics on port {port}" in result.output

"""A run with failed rows: a plain rerun retries the transient ones (the service was away, busy or too
slow) and keeps the permanent ones unless ``--retry-failed``; the run and ``status`` exit with a code per
kind and say "incomplete" with counts by kind; metrics are written and marked incomplete."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from typer.testing import CliRunner

from voxarena.orchestrator.cli.app import app
from voxarena.scorers.service import ScorerServicer
from voxarena.sdk.errors import InvalidArgument, TimeLimitExceeded
from voxarena.sdk.server import RunningServer
from voxarena.sdk.testing import serve_in_process, serve_servicers
from voxarena.services.testing.dummy_cloner import DummyCloner
from voxarena.services.testing.dummy_generator import DummyGenerator
from voxarena.v1 import scorer_pb2, scorer_pb2_grpc


def serve(model, address: str = "127.0.0.1:0") -> RunningServer:
    return serve_in_process(model, address).running


def generations(out: Path) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, (out / "generations.jsonl").read_text().splitlines())}


class Failing(DummyGenerator):
    """While ``broken``, the first call is too slow (DEADLINE_EXCEEDED: transient), the second refused
    (INVALID_ARGUMENT: permanent), the rest served; once mended, every call is served."""

    def __init__(self) -> None:
        super().__init__()
        self.broken = True
        self.calls = 0
        self._lock = threading.Lock()

    def synthesize(self, request):
        with self._lock:
            self.calls += 1
            n = self.calls
        if self.broken and n == 1:
            raise TimeLimitExceeded("too slow today")
        if self.broken and n == 2:
            raise InvalidArgument("not this text")
        return super().synthesize(request)


def last_line(output: str) -> str:
    return output.strip().splitlines()[-1]


def assert_status(cli: CliRunner, out: Path, code: int, line: str) -> None:
    """``orchestrator status`` ends with the same verdict and exit code as the run."""
    shown = cli.invoke(app, ["status", str(out)])
    assert shown.exit_code == code and last_line(shown.output).startswith(line), shown.output
    st = json.loads(cli.invoke(app, ["status", str(out), "--json"]).output)
    assert st["complete"] is (code == 0) and st["outcome"]["exit_code"] == code


def kinds(out: Path) -> list[str]:
    return sorted(g.get("failure", "ok") for g in generations(out).values())


def test_a_plain_rerun_retries_transient_failures_and_keeps_permanent_ones(tmp_path, synthetic_dataset, make_config):
    model = Failing()
    running = serve(model)
    try:
        config = make_config(
            tmp_path,
            synthetic_dataset,
            **{
                "dataset.max_items": 3,
                "protocol.tasks": ["TTS"],
                "generators": {"dummy-generator": {"address": f"127.0.0.1:{running.port}"}},
                "execution.retries": 0,
            },
        )
        out = tmp_path / "run"
        cli = CliRunner()
        argv = ["run", str(config), "--out", str(out), "--no-progress"]
        first = cli.invoke(app, argv)
        assert model.calls == 3 and kinds(out) == ["input", "ok", "transient"]
        # Exit 3: a rerun has something to retry; the last line counts the failures by kind.
        assert first.exit_code == 3, first.output
        assert last_line(first.output).startswith("incomplete: 2 failed (1 input, 1 transient): rerun")
        assert_status(cli, out, 3, "incomplete: 2 failed (1 input, 1 transient)")
        # Metrics are written on what passed, and marked: metrics/coverage.json, a banner in the report.
        assert (out / "metrics" / "generator_metrics.csv").exists()
        marker = json.loads((out / "metrics" / "coverage.json").read_text())
        assert marker["complete"] is False and marker["failed_by_kind"] == {"input": 1, "transient": 1}
        assert cli.invoke(app, ["report", str(out)]).exit_code == 0
        rep = json.loads((out / "report.json").read_text())
        assert rep["complete"] is False and rep["outcome"]["failed_by_kind"] == {"input": 1, "transient": 1}
        banner = (out / "report.html").read_text().split('id="incomplete"')[1].split("</p>")[0]
        assert "2 failed (1 input, 1 transient)" in banner

        model.broken = False
        again = cli.invoke(app, argv)  # plain rerun: the transient failure only
        assert model.calls == 4 and kinds(out) == ["input", "ok", "ok"]
        assert again.exit_code == 4, again.output  # permanent failures only
        assert last_line(again.output).startswith("incomplete: 1 failed (1 input): permanent failures only")
        assert_status(cli, out, 4, "incomplete: 1 failed (1 input)")

        assert cli.invoke(app, argv).exit_code == 4  # the permanent one stays until asked for
        assert model.calls == 4

        retried = cli.invoke(app, [*argv, "--retry-failed"])
        assert model.calls == 5 and kinds(out) == ["ok", "ok", "ok"]
        assert retried.exit_code == 0 and last_line(retried.output) == "complete", retried.output
        assert_status(cli, out, 0, "complete")
        marker = json.loads((out / "metrics" / "coverage.json").read_text())
        assert marker["complete"] is True and marker["failed_by_kind"] == {} and marker["exit_code"] == 0
        assert cli.invoke(app, ["report", str(out)]).exit_code == 0
        assert 'id="incomplete"' not in (out / "report.html").read_text()
    finally:
        running.server.stop(0)


class SlowOnSecondCall(DummyCloner):
    """While ``broken``, every call after the first is too slow (DEADLINE_EXCEEDED: transient)."""

    def __init__(self) -> None:
        super().__init__()
        self.broken = True
        self.calls = 0

    def synthesize(self, request):
        self.calls += 1
        if self.broken and self.calls > 1:
            raise TimeLimitExceeded("too slow today")
        return super().synthesize(request)


def test_a_retried_i2d_iteration_continues_its_chain(tmp_path, synthetic_dataset, make_config):
    model = SlowOnSecondCall()
    running = serve(model)
    try:
        config = make_config(
            tmp_path,
            synthetic_dataset,
            **{
                "dataset.max_items": 1,
                "protocol.tasks": ["CLONE"],
                "protocol.i2d": {"iterations": 3},
                "generators": {"dummy-cloner": {"address": f"127.0.0.1:{running.port}", "concurrency": 1}},
                "execution.retries": 0,
            },
        )
        out = tmp_path / "run"
        argv = ["run", str(config), "--out", str(out), "--no-progress"]
        CliRunner().invoke(app, argv)
        chain = sorted(generations(out).values(), key=lambda r: r["id"])  # i2d1 (no suffix), i2d2, i2d3
        assert [r.get("failure", "ok") for r in chain] == ["ok", "transient", "upstream_failed"]

        model.broken = False
        CliRunner().invoke(app, argv)  # iteration 2 passes now, so iteration 3 has something to iterate on
        assert [r["status"] for r in generations(out).values()] == ["ok"] * 3 and model.calls == 4
    finally:
        running.server.stop(0)


class DyingScorer(ScorerServicer):
    """The real scorer, whose server goes away at its first Aggregate call (the generator metrics, after the
    detection metrics' CSVs are written) while ``dies``."""

    def __init__(self, dies: bool) -> None:
        super().__init__()
        self.dies = dies
        self.running: RunningServer | None = None

    def Aggregate(self, request, context):
        if self.dies and self.running is not None:
            self.running.server.stop(0)  # the process is gone: the call in flight is cut
            time.sleep(1)
        return super().Aggregate(request, context)


def serve_scorer(servicer: DyingScorer, address: str = "127.0.0.1:0") -> RunningServer:
    name = scorer_pb2.DESCRIPTOR.services_by_name["ScorerService"].full_name
    register = (name, lambda s: scorer_pb2_grpc.add_ScorerServiceServicer_to_server(servicer, s))
    running = serve_servicers([register], address, load=servicer.load).running
    servicer.running = running
    return running


def test_a_scorer_that_dies_during_the_metrics_is_one_error_line_and_a_rerun_completes(
    tmp_path, synthetic_dataset, make_config
):
    running = serve_scorer(DyingScorer(dies=True))
    port = running.port
    try:
        config = make_config(
            tmp_path,
            synthetic_dataset,
            **{
                "dataset.max_items": 2,
                "protocol.tasks": ["TTS"],
                "scorer.address": f"127.0.0.1:{port}",
                "scorer.bootstrap_resamples": 0,
                "execution.retries": 0,
                "execution.outage_seconds": 1,  # the scorer is waited for, then given up on
            },
        )
        out = tmp_path / "run"
        argv = ["run", str(config), "--out", str(out), "--no-progress"]
        died = CliRunner().invoke(app, argv)
        assert died.exit_code == 3, died.output
        assert "Traceback" not in died.output and isinstance(died.exception, SystemExit)
        (line,) = [x for x in died.output.splitlines() if x.startswith("error:")]
        assert line.startswith(f"error: scorer at 127.0.0.1:{port} failed while computing the generator metrics")
        assert "rerun `orchestrator run`" in line
        # The rows are all kept; the metrics are not there (a CSV written before the death does not count).
        st = json.loads(CliRunner().invoke(app, ["status", str(out), "--json"]).output)
        assert (out / "metrics" / "detection_metrics.csv").exists()
        assert not st["metrics_written"] and st["failed"] == 0 and st["outcome"]["exit_code"] == 3
        assert not (out / "metrics" / "coverage.json").exists()

        running = serve_scorer(DyingScorer(dies=False), f"127.0.0.1:{port}")  # back, at the same address
        rerun = CliRunner().invoke(app, argv)
        assert rerun.exit_code == 0 and last_line(rerun.output) == "complete", rerun.output
        assert json.loads((out / "metrics" / "coverage.json").read_text())["complete"] is True
        assert (out / "metrics" / "detection_metrics.csv").exists() and not (out / "metrics" / ".writing").exists()
    finally:
        running.server.stop(0)


class GoesAway(DummyGenerator):
    """Its server goes away during the second call; ``comes_back`` after ``away`` seconds at the same port."""

    def __init__(self, comes_back: bool, away: float = 1.5) -> None:
        super().__init__()
        self.comes_back, self.away = comes_back, away
        self.calls = 0
        self.running: RunningServer | None = None
        self._lock = threading.Lock()

    def synthesize(self, request):
        with self._lock:
            self.calls += 1
            n = self.calls
        if n == 2 and self.running is not None:
            running, self.running = self.running, None
            running.server.stop(0)  # the call in flight and every other one is cut: UNAVAILABLE
            if self.comes_back:
                threading.Timer(self.away, self.restart, [running.port]).start()
            time.sleep(0.5)
        return super().synthesize(request)

    def restart(self, port: int) -> None:
        self.running = serve(self, f"127.0.0.1:{port}")


def outage_run(tmp_path, synthetic_dataset, make_config, model: GoesAway, outage_seconds: float):
    model.running = serve(model)
    config = make_config(
        tmp_path,
        synthetic_dataset,
        **{
            "dataset.max_items": 4,
            "protocol.tasks": ["TTS"],
            "generators": {"dummy-generator": {"address": f"127.0.0.1:{model.running.port}", "concurrency": 2}},
            "execution.retries": 1,
            "execution.outage_seconds": outage_seconds,
        },
    )
    out = tmp_path / "run"
    t0 = time.monotonic()
    result = CliRunner().invoke(app, ["run", str(config), "--out", str(out), "--no-progress"])
    return result, out, time.monotonic() - t0


def test_a_service_that_comes_back_within_the_outage_window_loses_nothing(tmp_path, synthetic_dataset, make_config):
    model = GoesAway(comes_back=True)
    try:
        result, out, _ = outage_run(tmp_path, synthetic_dataset, make_config, model, outage_seconds=30)
        assert result.exit_code == 0 and last_line(result.output) == "complete", result.output
        assert kinds(out) == ["ok"] * 4 and model.calls >= 5  # the cut call was sent again
    finally:
        if model.running is not None:
            model.running.server.stop(0)


def test_a_service_that_stays_away_fails_its_rows_as_transient_after_one_window(
    tmp_path, synthetic_dataset, make_config
):
    model = GoesAway(comes_back=False)
    result, out, wall = outage_run(tmp_path, synthetic_dataset, make_config, model, outage_seconds=2)
    # The first call may finish before the server goes (3 rows lost) or be cut with it on a loaded
    # machine (4): either way every row not done is a transient failure, and the run says how many.
    ks = kinds(out)
    failed = ks.count("transient")
    assert len(ks) == 4 and failed in (3, 4) and ks.count("ok") == 4 - failed, ks
    assert result.exit_code == 3, result.output
    assert last_line(result.output).startswith(f"incomplete: {failed} failed ({failed} transient)"), result.output
    assert wall < 20  # one window for the service, not one per row

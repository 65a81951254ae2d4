"""A run with failed rows: a plain rerun retries the transient ones (the service was away, busy or too
slow) and keeps the permanent ones unless ``--retry-failed``; the run and ``status`` exit with a code per
kind and say "incomplete" with counts by kind; metrics are written and marked incomplete."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from typer.testing import CliRunner

from voxarena.orchestrator.cli import app
from voxarena.sdk.errors import InvalidArgument, TimeLimitExceeded
from voxarena.sdk.server import RunningServer, create_model_server
from voxarena.services.testing.dummy_cloner import DummyCloner
from voxarena.services.testing.dummy_generator import DummyGenerator


def serve(model, address: str = "127.0.0.1:0") -> RunningServer:
    running = create_model_server(model, address)
    running.server.start()
    model.load()
    model.mark_ready()
    running.set_serving(True)
    return running


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
        cli.invoke(app, argv)
        assert model.calls == 3 and kinds(out) == ["input", "ok", "transient"]

        model.broken = False
        cli.invoke(app, argv)  # plain rerun: the transient failure only
        assert model.calls == 4 and kinds(out) == ["input", "ok", "ok"]

        cli.invoke(app, argv)  # the permanent one stays until asked for
        assert model.calls == 4

        cli.invoke(app, [*argv, "--retry-failed"])
        assert model.calls == 5 and kinds(out) == ["ok", "ok", "ok"]
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

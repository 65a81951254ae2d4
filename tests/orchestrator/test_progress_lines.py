"""Progress off a terminal: a run whose console is a file prints progress lines (text or JSON) instead of
bars, with done/total per stage, failures by kind, a rate and an ETA, and a last line when it ends."""

from __future__ import annotations

import io
import json

from rich.console import Console

from voxarena.orchestrator.run.progress_lines import ProgressLines


def test_a_line_says_each_stage_the_failures_the_rate_and_the_eta():
    out = io.StringIO()
    stages = {"generate": (10, 20), "detect": (30, 60), "measure": (0, 20)}
    lines = ProgressLines(Console(file=out, width=400), lambda: stages, lambda: {"input": 2, "unavailable": 1})
    lines._t0 -= 40.0  # 40 items in 40 s: 1 item/s, 60 left
    text = lines.line()
    assert text.startswith("progress 00:00:40  generate 10/20  detect 30/60  measure 0/20")
    assert "failed 3 (input 2, unavailable 1)" in text and "1.0 items/s" in text and "eta 1m00s" in text
    lines.fmt = "json"
    data = json.loads(lines.line())
    assert data["event"] == "progress" and data["stages"]["detect"] == {"done": 30, "total": 60}
    assert data["failed"] == {"input": 2, "unavailable": 1} and data["eta_seconds"] == 60.0


def test_a_run_off_a_terminal_prints_lines_not_bars(tmp_path, synthetic_dataset, make_config):
    from voxarena.orchestrator.run.config import load_config
    from voxarena.orchestrator.run.pipeline import Arena

    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=300)
    config = make_config(tmp_path, synthetic_dataset, **{"protocol.tasks": ["TTS"]})
    cfg = load_config(config)
    Arena(cfg, tmp_path / "run", config_file=config, console=console, progress_every=0.2, log_format="json").run()
    events = [json.loads(line) for line in out.getvalue().splitlines() if line.startswith('{"elapsed')]
    assert events, out.getvalue()[-2000:]
    last = events[-1]["stages"]
    assert last["generate"] == {"done": 8, "total": 8} and last["detect"]["done"] == last["detect"]["total"] > 0
    assert "━" not in out.getvalue()  # no bar was drawn

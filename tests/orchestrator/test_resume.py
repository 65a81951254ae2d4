"""What a resume refuses and what it redoes, through the public entry points (``Arena.run`` and the
``orchestrator run`` command): a changed dataset (the frozen manifest's hash), a changed model
(version or weights hash, served by an in-process test double at the run's fixed address), and
``--retry-failed``, which redoes failed rows and only those."""

from __future__ import annotations

import json
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from typer.testing import CliRunner

from voxarena.orchestrator.cli.app import app
from voxarena.orchestrator.run.pipeline import RunError
from voxarena.sdk.errors import InvalidArgument
from voxarena.sdk.server import RunningServer
from voxarena.sdk.testing import serve_in_process
from voxarena.services.testing.dummy_generator import DummyGenerator


def serve(model, address: str = "127.0.0.1:0") -> RunningServer:
    return serve_in_process(model, address).running


def generations(out: Path) -> dict[str, dict]:
    return {r["id"]: r for r in map(json.loads, (out / "generations.jsonl").read_text().splitlines())}


def test_resume_refuses_a_changed_dataset(tmp_path, synthetic_dataset, make_config, run_arena):
    data = tmp_path / "data"
    shutil.copytree(Path(synthetic_dataset["root"]).parent, data)
    dataset = {"kind": "table", "root": str(data / "manifest.csv")}
    config = make_config(tmp_path, dataset, **{"dataset.max_items": 3, "protocol.tasks": ["TTS"]})
    out = tmp_path / "run"
    run_arena(config, out)
    frozen = (out / "manifest.jsonl").read_bytes()
    run_arena(config, out)  # same inputs: resumes
    # Same config, same file names, other audio: the item's sha256 and so the manifest's hash change.
    changed = data / "audio" / "syn0-1.wav"
    x, rate = sf.read(changed)
    sf.write(changed, (0.5 * x).astype(np.float32), rate, subtype="PCM_16")
    with pytest.raises(RunError, match=r"differs from the frozen manifest \(e\.g\. syn0-1\)"):
        run_arena(config, out)
    assert (out / "manifest.jsonl").read_bytes() == frozen  # the frozen manifest is never rewritten


class Versioned(DummyGenerator):
    """The dummy generator with a settable identity (what GetInfo reports)."""

    def __init__(self, version: str = "1.0.0", weights: str = "") -> None:
        super().__init__()
        self.version, self.weights = version, weights  # GetInfo reads the instance's

    def weights_sha256(self) -> str:
        return self.weights


@pytest.fixture
def versioned_service(tmp_path, synthetic_dataset, make_config):
    """(config, restart(model)): a config whose generator is at a fixed address, and a function that
    serves another model at that same address (the config, and so the run's config check, unchanged)."""
    state: dict = {}

    def restart(model: Versioned) -> None:
        if "running" in state:
            state["running"].server.stop(0).wait()
        state["running"] = serve(model, f"127.0.0.1:{state.get('port', 0)}")
        state["port"] = state["running"].port

    restart(Versioned("1.0.0", "a" * 64))
    config = make_config(
        tmp_path,
        synthetic_dataset,
        **{
            "dataset.max_items": 2,
            "protocol.tasks": ["TTS"],
            "generators": {"dummy-generator": {"address": f"127.0.0.1:{state['port']}"}},
        },
    )
    yield config, restart
    state["running"].server.stop(0)


@pytest.mark.parametrize(
    "change, key, old, new",
    [
        (Versioned("2.0.0", "a" * 64), "version", "1.0.0", "2.0.0"),
        (Versioned("1.0.0", "b" * 64), "weights_sha256", "a" * 64, "b" * 64),
    ],
)
def test_resume_refuses_a_changed_model(tmp_path, versioned_service, run_arena, change, key, old, new):
    config, restart = versioned_service
    out = tmp_path / "run"
    run_arena(config, out)
    restart(Versioned("1.0.0", "a" * 64))
    run_arena(config, out)  # the same model again: resumes
    restart(change)
    with pytest.raises(
        RunError, match=f"dummy-generator: {key} changed since this run started \\('{old}' -> '{new}'\\)"
    ):
        run_arena(config, out)
    record = json.loads((out / "run.json").read_text())
    assert record["services"]["dummy-generator"]["info"]["model"][key] == old  # not overwritten


class Refusing(DummyGenerator):
    """Answers INVALID_ARGUMENT while ``broken``; counts the Synthesize calls it receives."""

    def __init__(self) -> None:
        super().__init__()
        self.broken = True
        self.calls = 0
        self._lock = threading.Lock()

    def synthesize(self, request):
        with self._lock:
            self.calls += 1
        if self.broken:
            raise InvalidArgument("not today")
        return super().synthesize(request)


def test_retry_failed_redoes_failed_rows_only(tmp_path, synthetic_dataset, make_config):
    model = Refusing()
    running = serve(model)
    try:
        config = make_config(
            tmp_path,
            synthetic_dataset,
            **{
                "dataset.max_items": 3,
                "protocol.tasks": ["TTS"],
                "generators": {"dummy-generator": {"address": f"127.0.0.1:{running.port}"}},
            },
        )
        out = tmp_path / "run"
        cli = CliRunner()
        argv = ["run", str(config), "--out", str(out), "--no-progress"]

        first = cli.invoke(app, argv)
        assert first.exit_code == 4, first.output  # incomplete: permanent failures only
        gens = generations(out)
        assert len(gens) == 3 and {g["status"] for g in gens.values()} == {"failed"}
        # INVALID_ARGUMENT is the client's mistake: one call per item, never retried (retries: 2).
        assert model.calls == 3 and {g["attempts"] for g in gens.values()} == {1}
        assert {g["code"] for g in gens.values()} == {"INVALID_ARGUMENT"}

        model.broken = False
        again = cli.invoke(app, argv)  # a plain resume keeps permanently failed rows as they are
        assert again.exit_code == 4, again.output
        assert model.calls == 3 and {g["status"] for g in generations(out).values()} == {"failed"}

        retried = cli.invoke(app, [*argv, "--retry-failed"])
        assert retried.exit_code == 0, retried.output
        assert model.calls == 6
        gens = generations(out)
        assert len(gens) == 3 and {g["status"] for g in gens.values()} == {"ok"}

        once_more = cli.invoke(app, [*argv, "--retry-failed"])  # nothing failed: nothing redone
        assert once_more.exit_code == 0, once_more.output
        assert model.calls == 6
    finally:
        running.server.stop(0)

"""A run may call a service by its own name, whatever model name the service's GetInfo gives (a vendor's
black box is often named by the run, not by its maker): a warning, printed and kept in run.json under
the service, never an error. Issue 12, item 5."""

from __future__ import annotations

import io
import json

from rich.console import Console

from voxarena.orchestrator.run.config import load_config
from voxarena.orchestrator.run.pipeline import Arena


def test_a_service_named_otherwise_than_its_model_is_a_warning(tmp_path, synthetic_dataset, make_config):
    config = make_config(
        tmp_path,
        synthetic_dataset,
        **{
            "dataset.max_items": 2,
            "protocol.tasks": ["TTS"],
            "generators": {"acme-tts": {"module": "voxarena.services.testing.dummy_generator"}},
        },
    )
    log = io.StringIO()
    record = Arena(load_config(config), tmp_path / "run", console=Console(file=log, width=300), progress=False).run()
    expected = "acme-tts: the service calls its model 'dummy-generator'; this run calls it 'acme-tts'"
    assert expected in log.getvalue()
    stored = json.loads((tmp_path / "run" / "run.json").read_text())["services"]
    for services in (record["services"], stored):
        (warning,) = services["acme-tts"]["warnings"]
        assert warning.startswith(expected)
        assert "warnings" not in services["dummy-detector"]  # named as its model: nothing to say
        assert "warnings" not in services["scorer"]  # the scorer is no black box of the arena
    rows = [json.loads(line) for line in (tmp_path / "run" / "generations.jsonl").read_text().splitlines()]
    assert rows and all(r["generator"] == "acme-tts" and r["status"] == "ok" for r in rows)

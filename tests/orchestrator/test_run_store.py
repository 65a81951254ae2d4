"""The read-only table readers: latest row per id, a torn last line left out (and left in place)."""

from __future__ import annotations

import json

from voxarena.orchestrator.run_store import read_csv, read_jsonl


def test_read_jsonl_keeps_the_latest_row_and_skips_a_torn_line(tmp_path):
    path = tmp_path / "detections.jsonl"
    rows = [{"id": "a", "status": "failed"}, {"id": "b", "status": "ok"}, {"id": "a", "status": "ok"}]
    torn = '{"id": "c", "sta'
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + torn)
    assert read_jsonl(path) == {"a": {"id": "a", "status": "ok"}, "b": {"id": "b", "status": "ok"}}
    assert path.read_text().endswith(torn)  # a reader never writes
    assert read_jsonl(tmp_path / "missing.jsonl") == {} and read_csv(tmp_path / "missing.csv") == []

"""JsonlTable's group commit: every append returns only after an fsync that covered its row, and rows
appended by threads while an fsync runs share the next one instead of queueing one fsync each."""

from __future__ import annotations

import json
import threading
import time

from voxarena.orchestrator.store import run_store
from voxarena.orchestrator.store.records import Row
from voxarena.orchestrator.store.run_store import JsonlTable


def test_every_row_is_fsynced_before_append_returns_and_fsyncs_are_shared(tmp_path, monkeypatch):
    path = tmp_path / "t.jsonl"
    table = JsonlTable(path, Row)
    synced_lines: list[int] = []  # lines on disk when each fsync finished
    real_fsync = run_store.os.fsync

    def slow_fsync(fd: int) -> None:
        lines = path.read_bytes().count(b"\n")  # what this fsync covers
        if not synced_lines:  # the first one lasts until every thread has written a row (or 10 s)
            deadline = time.monotonic() + 10
            while path.read_bytes().count(b"\n") < 8 and time.monotonic() < deadline:
                time.sleep(0.005)
        time.sleep(0.01)  # a disk that takes its time
        real_fsync(fd)
        synced_lines.append(lines)

    monkeypatch.setattr(run_store.os, "fsync", slow_fsync)
    returned: list[tuple[str, int]] = []  # (row id, fsyncs done when its append returned)

    def worker(w: int) -> None:
        for i in range(25):
            table.append(Row(id=f"w{w}/{i}", status="ok"))
            returned.append((f"w{w}/{i}", len(synced_lines)))

    threads = [threading.Thread(target=worker, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    lines = path.read_text().splitlines()
    assert len(lines) == 200 and len(table.rows) == 200
    position = {json.loads(line)["id"]: n for n, line in enumerate(lines, 1)}
    for row_id, fsyncs_done in returned:
        assert fsyncs_done > 0 and max(synced_lines[:fsyncs_done]) >= position[row_id], row_id
    # Rows written while an fsync runs share the next one: the rows of all 8 threads, written during the
    # first, are covered by the second. (How many fsyncs in all depends on scheduling: 111 of 200 were seen
    # on a loaded machine, so no count is asserted beyond "fewer than one per row".)
    assert synced_lines[1] >= 8, f"the second fsync covered {synced_lines[1]} rows: no group commit"
    assert len(synced_lines) < 200, f"{len(synced_lines)} fsyncs for 200 rows from 8 threads: no group commit"
    assert JsonlTable(path, Row).rows == table.rows  # reopened (resume): the same rows


def test_a_single_writer_still_fsyncs_every_row(tmp_path, monkeypatch):
    path = tmp_path / "t.jsonl"
    table = JsonlTable(path, Row)
    calls: list[int] = []
    monkeypatch.setattr(run_store.os, "fsync", lambda fd: calls.append(path.read_bytes().count(b"\n")))
    for i in range(5):
        table.append(Row(id=str(i), status="ok"))
        assert calls[-1] == i + 1

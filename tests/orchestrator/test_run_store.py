"""The read-only table readers: latest row per id, a torn last line left out (and left in place); one
orchestrator per run directory."""

from __future__ import annotations

import json

import pytest

from voxarena.orchestrator.store.run_store import RunStore, read_csv, read_jsonl


def test_read_jsonl_keeps_the_latest_row_and_skips_a_torn_line(tmp_path):
    path = tmp_path / "detections.jsonl"
    rows = [{"id": "a", "status": "failed"}, {"id": "b", "status": "ok"}, {"id": "a", "status": "ok"}]
    torn = '{"id": "c", "sta'
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + torn)
    assert read_jsonl(path) == {"a": {"id": "a", "status": "ok"}, "b": {"id": "b", "status": "ok"}}
    assert path.read_text().endswith(torn)  # a reader never writes
    assert read_jsonl(tmp_path / "missing.jsonl") == {} and read_csv(tmp_path / "missing.csv") == []


def test_one_orchestrator_per_run_directory(tmp_path):
    """A second process opening a run directory another one works on is refused, naming the holder; the
    lock goes with the holder, even a killed one; one process may open its directory twice."""
    import signal
    import subprocess
    import sys

    from voxarena.orchestrator.store.dir_lock import DirectoryBusy

    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; "
            "from voxarena.orchestrator.store.run_store import RunStore; s = RunStore(Path(sys.argv[1])); "
            "print('open', flush=True); time.sleep(300)",
            str(tmp_path / "run"),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "open"
        (tmp_path / "run" / "generations.jsonl.tmp").write_text("in flight")
        with pytest.raises(DirectoryBusy, match=rf"another orchestrator \(pid {holder.pid}\) is working on this run"):
            RunStore(tmp_path / "run")
        assert (tmp_path / "run" / "generations.jsonl.tmp").exists()  # its temporaries were left alone
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    first = RunStore(tmp_path / "run")  # the killed holder's lock went with it
    second = RunStore(tmp_path / "run")  # the same process: shared
    assert not (tmp_path / "run" / "generations.jsonl.tmp").exists()
    first.close()
    second.close()
    again = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path; "
            "from voxarena.orchestrator.store.run_store import RunStore; RunStore(Path(sys.argv[1]))",
            str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
    )
    assert again.returncode == 0, again.stderr  # closed: free for the next orchestrator

"""Run-directory problems are one error line and exit 2, never a traceback, and lose nothing: ``--out``
naming a file, a read-only directory, a full disk. A full disk is simulated at the OS boundary: the
run store writes through ``os.write`` only, and ``FullDisk`` lets a budget of bytes into the run
directory, takes part of the write that crosses it (as a nearly full file system does) and fails the
rest with ENOSPC. A resume once space is free completes, with the metrics of an uninterrupted run;
temporaries left behind are removed on resume."""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from voxarena.orchestrator.cli.app import app
from voxarena.orchestrator.store.records import Row
from voxarena.orchestrator.store.run_store import JsonlTable, RunDirError, RunStore

REAL_WRITE = os.write


class FullDisk:
    """``os.write`` for a disk with ``budget`` bytes free under ``root`` (for the files named ``only``, if
    given); other files are written as ever."""

    def __init__(self, root: Path, budget: int, only: str | None = None) -> None:
        self.root, self.left, self.only = str(root), budget, only
        self.refused = 0
        self._lock = threading.Lock()

    def __call__(self, fd: int, data) -> int:
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            return REAL_WRITE(fd, data)
        if not target.startswith(self.root + os.sep) or (self.only and os.path.basename(target) != self.only):
            return REAL_WRITE(fd, data)
        with self._lock:
            if self.left <= 0:
                self.refused += 1
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            n = REAL_WRITE(fd, bytes(data[: self.left]))
            self.left -= n
            return n


def error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("error:")]


def assert_one_error_line(result, *parts: str) -> str:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit), result.output
    (line,) = error_lines(result.output)
    for part in parts:
        assert part in line, line
    return line


def valid_rows(path: Path) -> list[dict]:
    """Every line of a table, each a whole JSON row (fails on a torn or glued line)."""
    text = path.read_text() if path.exists() else ""
    assert not text or text.endswith("\n"), f"{path.name} ends with a torn row"
    return [json.loads(line) for line in text.splitlines()]


def metrics_without_timing(run: Path) -> dict[str, list[dict]]:
    """Every metrics CSV, rows as dicts, without the timing columns (rtf: wall times differ run to run)."""
    out = {}
    for path in sorted((run / "metrics").glob("*.csv")):
        with open(path, newline="") as f:
            import csv

            rows = list(csv.DictReader(f))
        out[path.name] = [{k: v for k, v in r.items() if not k.startswith("rtf")} for r in rows]
    return out


# ---------------------------------------------------------------------------------- the table itself
def test_an_append_cut_by_a_full_disk_leaves_no_torn_row_and_the_next_one_is_whole(tmp_path, monkeypatch):
    table = JsonlTable(tmp_path / "rows.jsonl", Row)
    table.append(Row.from_dict({"id": "a", "status": "ok"}))
    disk = FullDisk(tmp_path, budget=10)  # part of the next row goes in, then the disk is full
    monkeypatch.setattr(os, "write", disk)
    with pytest.raises(RunDirError, match=r"rows\.jsonl: cannot append row b: No space left on device \(ENOSPC\)"):
        table.append(Row.from_dict({"id": "b", "status": "ok", "pad": "x" * 50}))
    assert disk.left == 0 and disk.refused == 1  # 10 bytes went in before the refusal
    assert [r["id"] for r in valid_rows(table.path)] == ["a"] and "b" not in table
    monkeypatch.setattr(os, "write", REAL_WRITE)  # space is free again
    table.append(Row.from_dict({"id": "c", "status": "ok"}))
    assert [r["id"] for r in valid_rows(table.path)] == ["a", "c"]
    assert set(JsonlTable(table.path, Row).rows) == {"a", "c"}


def test_a_torn_row_that_cannot_be_cut_stops_every_later_append_and_the_next_open_cuts_it(tmp_path, monkeypatch):
    table = JsonlTable(tmp_path / "rows.jsonl", Row)
    table.append(Row.from_dict({"id": "a", "status": "ok"}))
    monkeypatch.setattr(os, "write", FullDisk(tmp_path, budget=5))

    def no_truncate(fd: int, length: int) -> None:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "ftruncate", no_truncate)
    with pytest.raises(RunDirError, match="cut off on resume"):
        table.append(Row.from_dict({"id": "b", "status": "ok"}))
    monkeypatch.undo()
    # The torn part stays: a row glued to it would be lost, so no row goes after it.
    with pytest.raises(RunDirError, match=r"cannot append row b \(the part written is cut off on resume\)"):
        table.append(Row.from_dict({"id": "c", "status": "ok"}))
    assert not table.path.read_text().endswith("\n")
    reopened = JsonlTable(table.path, Row)
    assert set(reopened.rows) == {"a"} and [r["id"] for r in valid_rows(table.path)] == ["a"]


def test_stale_temporaries_are_removed_when_the_store_opens(tmp_path):
    RunStore(tmp_path / "run")
    run = tmp_path / "run"
    stale = [
        run / "audio" / "ab" / ".abcdef.wav.123.456.tmp",
        run / ".run.json.1.2.tmp",
        run / "manifest.tmp",
        run / "metrics" / "detection_metrics.tmp",
    ]
    keep = [run / "audio" / "ab" / "abcdef.wav", run / "metrics" / "detection_metrics.csv", run / "notes.txt"]
    for path in stale + keep:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x")
    store = RunStore(run)
    assert sorted(store.removed_temporaries) == sorted(stale)
    assert not any(p.exists() for p in stale) and all(p.exists() for p in keep)


# ---------------------------------------------------------------------------------- through the CLI
@pytest.mark.parametrize("where", ["out is a file", "a parent of out is a file"])
def test_out_that_is_not_a_directory_is_one_error_line(tmp_path, synthetic_dataset, make_config, where):
    config = make_config(tmp_path, synthetic_dataset, **{"dataset.max_items": 1, "protocol.tasks": ["TTS"]})
    blocker = tmp_path / "taken"
    blocker.write_text("not a run directory\n")
    out = blocker if where == "out is a file" else blocker / "run"
    result = CliRunner().invoke(app, ["run", str(config), "--out", str(out), "--no-progress"])
    assert_one_error_line(result, f"error: {out if out == blocker else out}", "Not a directory (ENOTDIR)")
    assert blocker.read_text() == "not a run directory\n"


def without_dac_override() -> list[str]:
    """A command prefix under which file permissions bind: none for a user; for root, setpriv dropping the
    capabilities that ignore them (the run directory's owner, root, then needs its write bit like anyone)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: chmod cannot make a directory read-only for this test")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--"]


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory, synthetic_dataset, make_config) -> tuple[Path, Path]:
    """(config, run directory) of a small uninterrupted run with a measured metric (pesq) besides rtf."""
    tmp = tmp_path_factory.mktemp("reference")
    config = make_config(
        tmp,
        synthetic_dataset,
        **{"dataset.max_items": 4, "scorer.metrics": ["rtf", "pesq"], "scorer.bootstrap_resamples": 20},
    )
    done = CliRunner().invoke(app, ["run", str(config), "--out", str(tmp / "run"), "--no-progress"])
    assert done.exit_code == 0, done.output
    return config, tmp / "run"


def set_writable(root: Path, writable: bool) -> None:
    for path in [root, *root.rglob("*")]:
        path.chmod((0o755 if path.is_dir() else 0o644) if writable else (0o555 if path.is_dir() else 0o444))


@pytest.mark.parametrize("contents", ["an empty directory", "a finished run"])
def test_a_read_only_run_directory_is_one_error_line_before_any_service_starts(tmp_path, reference_run, contents):
    config, reference = reference_run
    out = tmp_path / "run"
    if contents == "a finished run":
        shutil.copytree(reference, out)
    else:
        (out / "audio").mkdir(parents=True)
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    set_writable(out, False)
    prefix = without_dac_override()
    try:
        probe = subprocess.run([*prefix, "touch", str(out / "x")], capture_output=True)
        if probe.returncode == 0:
            pytest.skip("chmod 555 does not stop this user from writing (capabilities)")
        argv = [*prefix, sys.executable, "-m", "voxarena.orchestrator", "run", str(config), "--out", str(out)]
        result = subprocess.run([*argv, "--no-progress"], capture_output=True, text=True, timeout=300)
    finally:
        set_writable(out, True)
    output = result.stdout + result.stderr
    assert result.returncode == 2 and "Traceback" not in output, output
    (line,) = error_lines(output)
    assert "Permission denied (EACCES); make it writable or choose another --out" in line and str(out) in line, line
    # Stopped before anything was made or changed: no service started (its log), every file as it was.
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert (out / "logs").exists() == (contents == "a finished run")


@pytest.mark.parametrize("fills", ["any file", "detections.jsonl"])
def test_a_full_disk_is_one_error_line_and_a_resume_completes_with_the_same_metrics(
    tmp_path, reference_run, monkeypatch, caplog, fills
):
    config, reference = reference_run
    cli = CliRunner()
    # A disk that fills up half-way through the work: run.json and some of the clips and rows fit. Filling
    # at the detections stops the run from a detection batch (a worker thread) instead of a generation.
    if fills == "any file":
        written = sum(p.stat().st_size for p in reference.rglob("*") if p.suffix in (".wav", ".jsonl"))
        budget = (reference / "run.json").stat().st_size + written // 2
    else:
        budget = (reference / "detections.jsonl").stat().st_size // 2
    out = tmp_path / "run"
    disk = FullDisk(out, budget, None if fills == "any file" else fills)
    monkeypatch.setattr(os, "write", disk)
    argv = ["run", str(config), "--out", str(out), "--no-progress"]
    full = cli.invoke(app, argv)
    monkeypatch.setattr(os, "write", REAL_WRITE)
    line = assert_one_error_line(full, "No space left on device (ENOSPC); free some space, then rerun")
    assert str(out) in line and disk.refused >= 1
    # Nor a traceback logged from a worker thread (pytest's log capture takes what would go to stderr).
    assert not [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    if fills != "any file":
        assert "detections.jsonl: cannot append row" in line
    kept = {name: valid_rows(out / name) for name in ("generations.jsonl", "detections.jsonl")}
    assert kept["generations.jsonl"], "the disk filled before any generation: the test proves nothing"
    stale = out / "audio" / "00" / ".00.wav.1.2.tmp"  # as a crash between write and rename leaves one
    stale.parent.mkdir(parents=True, exist_ok=True)
    stale.write_bytes(b"RIFF")

    resumed = cli.invoke(app, argv)
    assert resumed.exit_code == 0 and resumed.output.strip().splitlines()[-1] == "complete", resumed.output
    assert not stale.exists() and not list(out.rglob("*.tmp"))
    for name, rows in kept.items():  # nothing done was redone: every kept row is still the row of its id
        latest = {r["id"]: r for r in valid_rows(out / name)}
        assert all(latest[r["id"]] == r for r in rows)
        assert len(latest) == len(valid_rows(out / name))  # and none was written twice
    assert metrics_without_timing(out) == metrics_without_timing(reference)
    assert metrics_without_timing(out)["generator_metrics.csv"][0]["n_pesq"] != "0"  # pesq measured, not all nan


def private_tmpfs_works() -> bool:
    """Root with unshare: a tmpfs mounted in a mount namespace of its own (gone with it, seen by no one)."""
    if os.geteuid() != 0 or shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "true"], capture_output=True)
    return probe.returncode == 0


# The run in a 120 kB tmpfs (the kernel's ENOSPC, for every writer), then the same file system grown to
# 64 MB and the run again; the run directory is copied out before the namespace ends.
REAL_DISK = """
mount -t tmpfs -o size=120k tmpfs "$DISK"
"$PY" -m voxarena.orchestrator run "$CONFIG" --out "$DISK/run" --no-progress > "$OUT/first.out" 2>&1
echo $? > "$OUT/first.code"
mount -o remount,size=64m "$DISK"
"$PY" -m voxarena.orchestrator run "$CONFIG" --out "$DISK/run" --no-progress > "$OUT/second.out" 2>&1
echo $? > "$OUT/second.code"
cp -a "$DISK/run" "$OUT/run"
"""


@pytest.mark.skipif(not private_tmpfs_works(), reason="needs root and unshare for a private tmpfs")
def test_a_real_full_file_system_is_one_error_line_and_a_resume_once_it_grew_completes(tmp_path, reference_run):
    config, reference = reference_run
    (tmp_path / "disk").mkdir()
    env = {**os.environ, "DISK": str(tmp_path / "disk"), "OUT": str(tmp_path), "PY": sys.executable}
    env["CONFIG"] = str(config)
    subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", REAL_DISK], env=env, timeout=600)
    first = (tmp_path / "first.out").read_text()
    assert (tmp_path / "first.code").read_text().strip() == "2" and "Traceback" not in first, first
    (line,) = error_lines(first)
    assert "No space left on device (ENOSPC); free some space, then rerun" in line, line
    second = (tmp_path / "second.out").read_text()
    assert (tmp_path / "second.code").read_text().strip() == "0", second
    assert metrics_without_timing(tmp_path / "run") == metrics_without_timing(reference)
    assert not list((tmp_path / "run").rglob("*.tmp"))


def test_a_full_disk_while_the_metrics_are_written_is_one_error_line_and_a_rerun_writes_them(
    tmp_path, reference_run, monkeypatch
):
    """Files outside the run store (the metrics, coverage.json) fail on a full disk as one line too."""
    config, reference = reference_run
    out = tmp_path / "run"
    real_write_text = Path.write_text

    def full(self: Path, *args, **kwargs):
        if self.name == "fingerprint.json":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self))
        return real_write_text(self, *args, **kwargs)

    monkeypatch.setattr(Path, "write_text", full)
    result = CliRunner().invoke(app, ["run", str(config), "--out", str(out), "--no-progress"])
    line = assert_one_error_line(result, "No space left on device (ENOSPC)")
    assert "fingerprint.json: cannot write it" in line, line
    monkeypatch.setattr(Path, "write_text", real_write_text)
    rerun = CliRunner().invoke(app, ["run", str(config), "--out", str(out), "--no-progress"])
    assert rerun.exit_code == 0, rerun.output
    assert metrics_without_timing(out) == metrics_without_timing(reference)

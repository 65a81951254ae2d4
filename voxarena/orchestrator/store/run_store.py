"""The run directory: append-only JSONL tables keyed by id, and content-addressed audio.

A record is appended only after the audio it points to is completely on disk (written to a temp
file and renamed), so a run killed at any moment leaves a consistent store; a torn last line is cut
off on the next open, and temporaries a killed run left are removed. A rerun skips ids already
recorded (resume): a failure is a row with its reason, never a missing row.

The directory's own problems (``--out`` is a file, no permission to write, a full disk) are a
``RunDirError``: one line naming the path and the reason. A row whose append failed half-way is cut
off at once, so the rows before it stay valid and a rerun, once the cause is fixed, resumes.
"""

from __future__ import annotations

import copy
import csv
import errno
import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Generic, TypeVar

from voxarena.orchestrator.errors import RunError
from voxarena.orchestrator.store import dir_lock
from voxarena.orchestrator.store.records import (
    CLEAN,
    DegradationRecord,
    DetectionRecord,
    GenerationRecord,
    MeasurementRecord,
    Row,
    StreamRecord,
)

R = TypeVar("R", bound=Row)
# What to do about a run directory's error, by errno; the rest are said as they are.
_ADVICE = {
    errno.ENOSPC: "free some space, then rerun the same command: it resumes, keeping every row written",
    errno.EDQUOT: "free some space, then rerun the same command: it resumes, keeping every row written",
    errno.EACCES: "make it writable or choose another --out",
    errno.EPERM: "make it writable or choose another --out",
    errno.EROFS: "make it writable or choose another --out",
    errno.ENOTDIR: "--out must name a directory",
}


class RunDirError(RunError):
    """The run directory cannot be made, read or written: one line with the path, what was being done,
    the reason (errno) and what to do about it."""

    @classmethod
    def of(cls, doing: str, path: Path, e: OSError) -> RunDirError:
        code = e.errno or 0
        reason = e.strerror or str(e)
        if code in errno.errorcode:
            reason += f" ({errno.errorcode[code]})"
        advice = _ADVICE.get(code)
        return cls(f"{path}: cannot {doing}: {reason}" + (f"; {advice}" if advice else ""))


@contextmanager
def run_dir_io(doing: str, path: Path) -> Iterator[None]:
    """An OSError inside becomes a ``RunDirError`` saying ``cannot {doing}`` at ``path``."""
    try:
        yield
    except OSError as e:
        raise RunDirError.of(doing, path, e) from e


def _write_all(fd: int, data: bytes) -> None:
    """Every byte of ``data`` to ``fd``: the one place the run store writes (a nearly full disk may take
    part of a write; the rest fails with ENOSPC)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _write_file(path: Path, data: bytes) -> None:
    """``path`` with exactly ``data``, made whole under a temporary name and renamed into place; a
    temporary a failure leaves (a full disk) is removed, or on the next open if that fails too."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            _write_all(fd, data)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except OSError:
        with suppress(OSError):
            tmp.unlink()
        raise


def generation_id(generator: str, task: str, item_id: str, iteration: int = 1) -> str:
    """Iteration 1 is the one-shot clip; I2D iteration k > 1 gets a suffix."""
    base = f"{generator}|{task}|{item_id}"
    return base if iteration == 1 else f"{base}|i2d{iteration}"


def detector_label(detector: str, condition: str) -> str:
    """``detector`` on the clean channel, ``detector@condition`` under a channel condition."""
    return detector if condition == CLEAN else f"{detector}@{condition}"


def stream_id(detector: str, clip: str) -> str:
    """A ``streams.jsonl`` row's id: the detector and the clip it streamed."""
    return f"{detector}|{clip}"


def detection_id(detector: str, condition: str, clip_id: str) -> str:
    """A detector's score of a clip under a channel condition."""
    return f"{detector_label(detector, condition)}|{clip_id}"


def condition_of(row: Mapping[str, str]) -> str:
    """A metrics row's channel condition; rows from before conditions are clean (a detection record's is
    its ``channel``)."""
    return row.get("condition") or CLEAN


def read_records(path: Path, record: type[R]) -> dict[str, R]:
    """A table read-only as its records (``read_jsonl``)."""
    return {i: record.from_dict(row) for i, row in read_jsonl(path).items()}


def read_jsonl(path: Path) -> dict[str, dict]:
    """A table read-only, as the run sees it: the latest row per id; a torn last line (a run killed
    mid-write) is left out, not cut off (JsonlTable, the writer, does that); no file, no rows."""
    if not path.exists():
        return {}
    text = path.read_text()
    lines = text.splitlines() if text.endswith("\n") else text.splitlines()[:-1]
    out = {}
    for line in lines:
        if line.strip():
            row = json.loads(line)
            out[row["id"]] = row
    return out


def read_csv(path: Path) -> list[dict]:
    """A metrics table as dicts of strings; no file, no rows."""
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


class JsonlTable(Generic[R]):
    """One append-only JSONL table of ``record`` rows (``records``). ``append`` returns once its row is on
    disk (fsynced), with group commit: rows written by several threads while one fsync runs share the next
    one, so the table keeps up with many calls in flight instead of one fsync per row in turn
    (benchmarks/orchestrator_ceiling.py).
    """

    def __init__(self, path: Path, record: type[R]) -> None:
        self.path = path
        self.record = record
        self._lock = threading.Lock()  # the file's end and ``rows``
        self._sync_lock = threading.Lock()  # one fsync at a time
        self._written = 0  # rows written so far (the file's sequence number)
        self._synced = 0  # rows known to be on disk
        # id -> its latest row as the JSON bytes written: about a quarter of the memory of the parsed
        # dicts, so a store of a million rows opens in a few hundred MB (rows are parsed when read).
        self._lines: dict[str, bytes] = {}
        # Set when a torn row could not be cut off: nothing more is appended after it (it would be
        # glued to it); the next open cuts it.
        self._torn: RunDirError | None = None
        if path.exists():
            self._load()

    def _load(self) -> None:
        """Read the table line by line (never the whole file at once); a torn last line (a run killed
        mid-write) is cut off."""
        end = 0
        with run_dir_io("read it", self.path), open(self.path, "rb") as f:
            for line in f:
                if not line.endswith(b"\n"):
                    break
                end += len(line)
                if line.strip():
                    row_id = json.loads(line)["id"]
                    self._lines[row_id] = line.rstrip(b"\n")  # the latest row for an id wins
            torn = end < os.fstat(f.fileno()).st_size
        if torn:
            with run_dir_io("cut off its torn last row", self.path), open(self.path, "r+b") as f:
                f.truncate(end)

    def _parse(self, line: bytes) -> R:
        return self.record.from_dict(json.loads(line))

    @property
    def rows(self) -> Mapping[str, R]:
        """id -> record, parsed when read (each read parses afresh: change a row by appending it)."""
        return _Rows(self._lines, self._parse)

    def filtered(self, keep: Callable[[R], bool]) -> JsonlTable[R]:
        """A read-only copy holding only the rows ``keep`` accepts (a view for reading, never appended to)."""
        view = copy.copy(self)
        view._lines = {i: line for i, line in self._lines.items() if keep(self._parse(line))}
        return view

    def __contains__(self, row_id: str) -> bool:
        return row_id in self._lines

    def get(self, row_id: str) -> R | None:
        line = self._lines.get(row_id)
        return None if line is None else self._parse(line)

    def append(self, row: R) -> None:
        line = (json.dumps(row.to_dict(), sort_keys=True) + "\n").encode()
        with self._lock:
            if self._torn is not None:
                raise self._torn
            with run_dir_io(f"append row {row.id}", self.path):
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    end = os.fstat(fd).st_size  # this lock is the only writer of the file
                    try:
                        _write_all(fd, line)  # in the kernel: a killed orchestrator loses nothing from here
                    except OSError as e:
                        self._cut(fd, end, row.id, e)
                        raise
                finally:
                    os.close(fd)
            self._written += 1
            mine = self._written
            self._lines[row.id] = line.rstrip(b"\n")
        with self._sync_lock:
            if self._synced < mine:  # no fsync since this row was written has covered it
                covered = self._written
                with run_dir_io("sync it to disk", self.path):
                    fd = os.open(self.path, os.O_RDONLY)  # fsync syncs the file, whichever descriptor asks
                    try:
                        os.fsync(fd)
                    finally:
                        os.close(fd)
                self._synced = covered

    def _cut(self, fd: int, end: int, row_id: str, cause: OSError) -> None:
        """A failed append leaves nothing: the part of the row written (a full disk) is cut off, so the
        rows before it stay valid; if even that fails, nothing more is appended after it."""
        try:
            os.ftruncate(fd, end)
        except OSError:
            doing = f"append row {row_id} (the part written is cut off on resume)"
            self._torn = RunDirError.of(doing, self.path, cause)
            raise self._torn from cause

    def sorted_rows(self) -> list[R]:
        return [self._parse(self._lines[k]) for k in sorted(self._lines)]

    def failed_rows(self) -> list[R]:
        """The rows whose latest version failed (safe while another thread appends)."""
        with self._lock:
            lines = list(self._lines.values())
        return [
            row for row in map(self._parse, (line for line in lines if b'"status": "failed"' in line)) if not row.ok
        ]


class _Rows(Mapping[str, R]):
    """A table's rows as a read-only mapping, each parsed from its stored line when read."""

    def __init__(self, lines: dict[str, bytes], parse: Callable[[bytes], R]) -> None:
        self._lines, self._parse = lines, parse

    def __getitem__(self, row_id: str) -> R:
        return self._parse(self._lines[row_id])

    def __iter__(self) -> Iterator[str]:
        return iter(self._lines)

    def __len__(self) -> int:
        return len(self._lines)


class RunStore:
    def __init__(self, run_dir: Path) -> None:
        self.dir = run_dir
        self.audio_dir = run_dir / "audio"
        self.metrics_dir = run_dir / "metrics"
        self.logs_dir = run_dir / "logs"
        if run_dir.exists() and not run_dir.is_dir():
            raise RunDirError.of(
                "use it as the run directory", run_dir, OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))
            )
        self._lock: Path | None = None
        for d in (self.dir, self.audio_dir, self.metrics_dir, self.logs_dir):
            with run_dir_io("create the directory", d):
                d.mkdir(parents=True, exist_ok=True)
        self.lock()  # one orchestrator at a time (before touching the temporaries)
        self.removed_temporaries = self._remove_temporaries()
        probe = run_dir / f".write-check.{os.getpid()}.tmp"
        with run_dir_io("write in it", run_dir):  # a read-only directory stops the run before any service starts
            os.close(os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
            probe.unlink()
        self.generations = JsonlTable(run_dir / "generations.jsonl", GenerationRecord)
        self.detections = JsonlTable(run_dir / "detections.jsonl", DetectionRecord)
        self.measurements = JsonlTable(run_dir / "measurements.jsonl", MeasurementRecord)
        # Channel conditions: one row per (condition, clip) with the degraded audio's path and hash.
        self.degradations = JsonlTable(run_dir / "degradations.jsonl", DegradationRecord)
        # Streamed detection (protocol.streaming): one row per (detector, clip).
        self.streams = JsonlTable(run_dir / "streams.jsonl", StreamRecord)

    def lock(self) -> None:
        """Hold the directory's lock (``dir_lock``) until ``close``; DirectoryBusy when another process does."""
        if self._lock is None:
            with run_dir_io("lock it", self.dir):
                self._lock = dir_lock.acquire(self.dir)

    def close(self) -> None:
        """Let another orchestrator work on the directory (the rows read stay readable)."""
        if self._lock is not None:
            dir_lock.release(self._lock)
            self._lock = None

    def __del__(self) -> None:
        with suppress(Exception):
            self.close()

    @property
    def manifest_path(self) -> Path:
        return self.dir / "manifest.jsonl"

    @property
    def run_json(self) -> Path:
        return self.dir / "run.json"

    def _remove_temporaries(self) -> list[Path]:
        """The ``*.tmp`` files a killed run or a full disk left (audio, run.json, manifest, metrics): never
        renamed into place, so nothing refers to them. One orchestrator works on a run directory at a time
        (``dir_lock``), so none of them is another's in flight."""
        stale = [*self.dir.glob("*.tmp"), *self.metrics_dir.glob("*.tmp"), *self.audio_dir.glob("*/*.tmp")]
        for path in stale:
            with run_dir_io("remove a temporary left by an earlier run", path):
                path.unlink(missing_ok=True)
        return stale

    def put_audio(self, wav: bytes) -> tuple[str, str]:
        """Store WAV bytes under audio/<sha[:2]>/<sha>.wav; returns (path relative to the run, sha256)."""
        sha = hashlib.sha256(wav).hexdigest()
        rel = Path("audio") / sha[:2] / f"{sha}.wav"
        path = self.dir / rel
        if not path.exists():
            with run_dir_io("store a clip", path):
                path.parent.mkdir(parents=True, exist_ok=True)
                _write_file(path, wav)
        return str(rel), sha

    def read_json(self) -> dict | None:
        with run_dir_io("read it", self.run_json):
            return json.loads(self.run_json.read_text()) if self.run_json.exists() else None

    def write_json(self, data: dict) -> None:
        with run_dir_io("write it", self.run_json):
            _write_file(self.run_json, (json.dumps(data, indent=2, sort_keys=True) + "\n").encode())

"""One orchestrator per run (or race) directory: an exclusive ``flock`` on ``DIR/.lock``.

Two orchestrators on one directory would interleave their rows and remove each other's temporaries
(a run store removes the ``*.tmp`` files it finds on opening). The lock is taken when a writer opens the
directory and held until it closes it; the kernel drops it when the process dies, so a killed run never
leaves a stale lock. Within one process the lock is counted: a run store opened twice on one directory
(a merge reads back what it wrote) shares it.
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

from voxarena.orchestrator.errors import RunError

LOCK_FILE = ".lock"
_held: dict[Path, list[int]] = {}  # directory -> [fd, count]
_guard = threading.Lock()


class DirectoryBusy(RunError):
    """Another orchestrator process is working on the directory."""


def acquire(directory: Path, what: str = "run") -> Path:
    """Lock ``directory`` for this process (counted); raises ``DirectoryBusy`` naming the holder's pid."""
    key = directory.resolve()
    with _guard:
        if key in _held:
            _held[key][1] += 1
            return key
        fd = os.open(key / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise DirectoryBusy(
                f"{directory}: another orchestrator (pid {holder}) is working on this {what} directory; "
                "wait for it to end (or stop it), or use another --out"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        _held[key] = [fd, 1]
        return key


def release(key: Path) -> None:
    """Undo one ``acquire`` of ``key`` (the resolved directory it returned)."""
    with _guard:
        entry = _held.get(key)
        if entry is None:
            return
        entry[1] -= 1
        if entry[1] == 0:
            del _held[key]
            os.close(entry[0])  # closing the descriptor drops the flock

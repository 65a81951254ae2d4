"""Progress off a terminal: when the run's console is not a terminal (a log file, a CI job, a Kubernetes Job),
a line every ``every`` seconds instead of the bars, and one at the end:

    progress 00:01:30  generate 12/70  detect 96/420  measure 10/70  failed 2 (input 2)  1.3 items/s  eta 6m40s

``--log-format json`` prints the same as one JSON object per line (``elapsed_seconds``, ``stages``:
``{name: {done, total}}``, ``failed``: ``{kind: n}``, ``rate_per_second``, ``eta_seconds``) for machines.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console

FORMATS = ("text", "json")


def _clock(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def _short(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


class ProgressLines:
    """Prints ``snapshot()`` (stage -> (done, total)) and ``failures()`` (kind -> n) every ``every`` seconds
    on ``console`` from a daemon thread, and once more at ``stop()``."""

    def __init__(
        self,
        console: Console,
        snapshot: Callable[[], dict[str, tuple[int, int]]],
        failures: Callable[[], dict[str, int]],
        every: float = 30.0,
        fmt: str = "text",
    ) -> None:
        if fmt not in FORMATS:
            raise ValueError(f"log format {fmt!r}: choose one of {', '.join(FORMATS)}")
        self.console, self.snapshot, self.failures, self.every, self.fmt = console, snapshot, failures, every, fmt
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="progress-lines", daemon=True)
        self._t0 = time.monotonic()

    def start(self) -> ProgressLines:
        self._t0 = time.monotonic()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        self.print_line()

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self.print_line()

    def state(self) -> dict[str, Any]:
        elapsed = time.monotonic() - self._t0
        stages = {name: {"done": done, "total": total} for name, (done, total) in self.snapshot().items()}
        done = sum(s["done"] for s in stages.values())
        left = sum(max(s["total"] - s["done"], 0) for s in stages.values())
        rate = done / elapsed if elapsed > 0 else 0.0
        return {
            "elapsed_seconds": round(elapsed, 1),
            "stages": stages,
            "failed": dict(sorted(self.failures().items())),
            "rate_per_second": round(rate, 3),
            "eta_seconds": round(left / rate, 1) if rate > 0 and left else (0.0 if not left else None),
        }

    def line(self) -> str:
        s = self.state()
        if self.fmt == "json":
            return json.dumps({"event": "progress", **s}, sort_keys=True)
        parts = [f"progress {_clock(s['elapsed_seconds'])}"]
        parts += [f"{name} {v['done']}/{v['total']}" for name, v in s["stages"].items()]
        failed = s["failed"]
        if failed:
            kinds = ", ".join(f"{k} {n}" for k, n in failed.items())
            parts.append(f"failed {sum(failed.values())} ({kinds})")
        parts.append(f"{s['rate_per_second']:.1f} items/s")
        if s["eta_seconds"] is not None:
            parts.append(f"eta {_short(s['eta_seconds'])}")
        return "  ".join(parts)

    def print_line(self) -> None:
        self.console.print(self.line(), highlight=False, markup=False, soft_wrap=True)

"""A Ctrl-C that is never lost.

Python raises KeyboardInterrupt wherever the main thread is when it next checks for signals. Inside a
finaliser (an HTTP response or a gRPC object being collected, which the start-up waits create every
0.1 s) the exception is printed as "Exception ignored in ..." and dropped: once, in a full test run, an
orchestrator sent SIGINT while it waited for a container was still waiting 180 s later, its services
untouched. So ``orchestrator run`` installs a handler that also remembers the Ctrl-C, and every loop
that waits (for a service to serve, for the next finished call) calls ``check()``, which raises it
again if it was lost.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

_seen = threading.Event()


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    _seen.set()
    raise KeyboardInterrupt


def install() -> None:
    """Handle SIGINT as above (from the main thread only: elsewhere Python cannot set a handler)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _on_sigint)


def check() -> None:
    """Raise KeyboardInterrupt if a Ctrl-C came, whether or not its first raise got through."""
    if _seen.is_set():
        raise KeyboardInterrupt

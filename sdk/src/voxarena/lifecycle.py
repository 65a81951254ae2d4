"""A local-mode service's side of its start and end: it announces its port, and it dies with the
orchestrator that started it (Linux PR_SET_PDEATHSIG).

A service started as a local process binds port 0 and prints ``PORT_ANNOUNCEMENT`` and its port on
stdout; the orchestrator reads it (no free-port race). The orchestrator passes its pid in
``VOXARENA_PARENT_PID``; the service asks the kernel for SIGTERM when its parent dies, first thing at
start-up, and leaves at once if the parent is already gone. This runs in the child's own ``main``
rather than as a ``preexec_fn``: a preexec_fn forces a plain fork() of the orchestrator, whose live
gRPC threads and fork handlers then run in the child before exec, which aborted children (SIGABRT,
"Bad file descriptor") on a loaded machine.
"""

from __future__ import annotations

import ctypes
import os
import signal

PORT_ANNOUNCEMENT = "VOXARENA_PORT="
PARENT_ENV = "VOXARENA_PARENT_PID"
_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    parent = os.environ.get(PARENT_ENV)
    if not parent:
        return
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        return
    if os.getppid() != int(parent):  # the parent died before the request took effect
        os._exit(1)

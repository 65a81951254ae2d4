"""A fork server for mutation runs: third-party imports once, a fresh forked pytest per mutant.

cosmic-ray runs its test command once per mutant; on a shared 2-core machine most of a short
selection's wall time is importing numpy, scipy, scikit-learn and pytest. The server imports those
once, then for each request forks a child that changes to the scratch copy, puts it first on
``sys.path`` and runs ``pytest.main``: the project's own modules (the mutated one among them) are
never imported by the server, so every child reads them fresh from disk. The client is what
cosmic-ray runs; it exits with pytest's exit code.

    python tests/mutation/forkserver.py serve SOCKET
    python tests/mutation/forkserver.py run SOCKET TIMEOUT -- PYTEST_ARGS...
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sys

PRELOAD = (
    "numpy",
    "scipy.optimize",
    "scipy.signal",
    "sklearn.metrics",
    "sklearn.isotonic",
    "soundfile",
    "soxr",
    "yaml",
    "pydantic",
    "google.protobuf",
    "pytest",
    "_pytest.python",
    "typer",
    "rich",
)


def serve(path: str) -> None:
    import importlib

    for name in PRELOAD:  # never a project module: those must come from the mutated tree
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    if os.path.exists(path):
        os.unlink(path)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(1)
    print("ready", flush=True)
    while True:
        conn, _ = server.accept()
        with conn:
            request = json.loads(conn.makefile().readline())
            pid = os.fork()
            if pid == 0:
                server.close()
                signal.alarm(int(request["timeout"]))  # a mutant that hangs dies with SIGALRM
                os.chdir(request["cwd"])
                sys.path.insert(0, request["cwd"])
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, 1)
                os.dup2(devnull, 2)
                import pytest

                os._exit(int(pytest.main(request["args"])))
            _, status = os.waitpid(pid, 0)
            code = os.waitstatus_to_exitcode(status)
            conn.sendall(f"{code}\n".encode())


def run(path: str, timeout: float, args: list[str]) -> int:
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.connect(path)
    client.sendall((json.dumps({"cwd": os.getcwd(), "args": args, "timeout": timeout}) + "\n").encode())
    answer = client.makefile().readline().strip()
    code = int(answer) if answer else 1
    return code if code >= 0 else 1  # killed by a signal (e.g. the alarm): the mutant is caught


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    elif sys.argv[1] == "run":
        sep = sys.argv.index("--")
        sys.exit(run(sys.argv[2], float(sys.argv[3]), sys.argv[sep + 1 :]))
    else:
        sys.exit(f"usage: {__doc__}")

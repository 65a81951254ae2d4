"""Local mode: a service started by the orchestrator dies with it, even with calls in flight."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PARENT = textwrap.dedent("""
    import sys, threading, time
    from pathlib import Path
    from voxarena.orchestrator.fleet.clients import GeneratorClient
    from voxarena.orchestrator.fleet.local_services import LocalService
    from voxarena.v1 import generator_pb2
    svc = LocalService("dummy-generator", None, Path(sys.argv[1]))
    svc.start()
    client = GeneratorClient("g", svc.wait_ready(60), 60, 0, 0.1)
    for _ in range(3):  # calls in flight when the parent dies
        threading.Thread(target=client.call, daemon=True, args=("Synthesize", generator_pb2.SynthesizeRequest(
            request_id="x", seed=1, task=generator_pb2.TTS, text="hello", parameters={"sleep": "30"}))).start()
    print(svc.proc.pid, flush=True)
    time.sleep(120)
""")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def test_service_dies_with_a_killed_orchestrator(tmp_path):
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, str(tmp_path / "svc.log")], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    child = int(parent.stdout.readline())
    time.sleep(0.5)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 15  # the 5 s drain, not the 30 s calls
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(child), (tmp_path / "svc.log").read_text()[-2000:]
    assert "draining" in (tmp_path / "svc.log").read_text()


def _environ_value(pid: int, prefix: bytes, wait: float = 10.0) -> list[str]:
    """The value of one variable in a process's environment. Under load /proc/PID/environ was once read
    without it right after the start (seen in the full suite only): read again for a while before saying so."""
    deadline = time.monotonic() + wait
    while True:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        found = [v.decode().split("=", 1)[1] for v in environ if v.startswith(prefix)]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.05)


def test_each_local_service_gets_a_numba_cache_of_its_own(tmp_path, monkeypatch):
    """Concurrent numba compiles into one cache can pair gufunc files from two processes (numba #10128),
    which segfaults every later process: services started side by side never share a cache directory."""
    from voxarena.orchestrator.fleet.local_services import LocalService, numba_cache_dir

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))
    services = [
        LocalService(name, "voxarena.services.testing.dummy_generator", tmp_path / f"{i}.log")
        for i, name in enumerate(("gen-a", "gen/b"))
    ]
    try:
        for svc in services:
            svc.start()
        seen = []
        for svc in services:
            seen += _environ_value(svc.proc.pid, b"NUMBA_CACHE_DIR=")
    finally:
        for svc in services:
            if svc.proc is not None:
                svc.proc.kill()
                svc.proc.wait()
    assert seen == [str(tmp_path / "numba" / "gen-a"), str(tmp_path / "numba" / "gen_b")]
    assert numba_cache_dir("scorer", {"XDG_CACHE_HOME": "/c"}) == "/c/voxarena/numba/scorer"
    assert numba_cache_dir("scorer", {"HOME": "/h"}) == "/h/.cache/voxarena/numba/scorer"

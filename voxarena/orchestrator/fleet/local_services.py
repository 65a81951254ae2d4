"""Local mode (the embedded default): start a service as a child process on a free loopback port.

The child binds port 0 and announces the port it got on stdout, so there is no port race; the
parent waits for grpc.health.v1 SERVING, and the child dies with the parent (PR_SET_PDEATHSIG, set by
the child itself: voxarena.lifecycle), so a killed orchestrator leaves no orphans.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from voxarena.catalogue import local_modules
from voxarena.lifecycle import PARENT_ENV, PORT_ANNOUNCEMENT
from voxarena.orchestrator import ctrl_c
from voxarena.orchestrator.fleet.clients import ServiceStartError, wait_for_serving

# Every catalogued service and test double by name -> python module. A config may name any other module.
KNOWN_SERVICES = local_modules()


def numba_cache_dir(service: str, environ: dict[str, str] | None = None) -> str:
    """The numba cache directory a local service gets: one of its own, under ``$NUMBA_CACHE_DIR`` if set,
    else ``$XDG_CACHE_HOME/voxarena/numba`` (``~/.cache``).

    numba writes a gufunc's two cache files with separate renames (numba issue #10128): two processes
    compiling the same librosa function at once can leave a pair from different processes, and every
    later process that loads it segfaults (librosa's pyin: the scorer's cloneval; griffin-lim, hifigan,
    kokoro use librosa too). Local mode starts its services side by side, so no two of them share a
    cache; a service keeps its own across runs, so it compiles once."""
    env = os.environ if environ is None else environ
    base = env.get("NUMBA_CACHE_DIR") or os.path.join(
        env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache"),
        "voxarena",
        "numba",
    )
    return os.path.join(base, re.sub(r"[^A-Za-z0-9._-]", "_", service))


def _proc_cpu_seconds(pid: int) -> float | None:
    """utime+stime (+ waited-for children) of a live process, from /proc."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    ticks = os.sysconf("SC_CLK_TCK")
    return sum(int(fields[i]) for i in (11, 12, 13, 14)) / ticks


class LocalService:
    def __init__(self, name: str, module: str | None, log_path: Path, extra_args: list[str] | None = None) -> None:
        self.name = name
        known = module or KNOWN_SERVICES.get(name)
        if not known:
            raise ServiceStartError(
                f"{name}: no address given and no known module to start it locally; set 'module:' or 'address:' "
                f"(known: {', '.join(sorted(KNOWN_SERVICES))})"
            )
        self.module: str = known
        self.log_path = log_path
        self.extra_args = extra_args or []
        self.proc: subprocess.Popen[bytes] | None = None
        self.address: str | None = None
        self.cpu_seconds: float | None = None

    def start(self) -> None:
        cmd = [sys.executable, "-m", self.module, "--host", "127.0.0.1", "--port", "0", *self.extra_args]
        self._log = open(self.log_path, "ab")
        env = dict(os.environ)
        # Idle OpenMP threads sleep instead of spinning: on a shared 2-core machine spinning steals
        # the cores other services need (and would count as compute time that is not).
        env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        env.setdefault("KMP_BLOCKTIME", "0")
        env[PARENT_ENV] = str(os.getpid())  # the child dies with us (voxarena.lifecycle)
        env["NUMBA_CACHE_DIR"] = numba_cache_dir(self.name)
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._log, cwd=os.getcwd(), env=env)
        self.started_at = time.time()

    def wait_ready(self, timeout: float) -> str:
        if self.proc is None or self.proc.stdout is None:
            raise ServiceStartError(f"{self.name}: wait_ready() before start()")
        stdout = self.proc.stdout
        port: list[int] = []

        def read_port() -> None:
            for raw in stdout:  # the rest of stdout is drained so the child never blocks
                line = raw.decode(errors="replace").strip()
                if line.startswith(PORT_ANNOUNCEMENT) and not port:
                    port.append(int(line[len(PORT_ANNOUNCEMENT) :]))

        threading.Thread(target=read_port, daemon=True).start()
        deadline = time.monotonic() + timeout
        while not port:
            ctrl_c.check()
            if self.proc.poll() is not None:
                raise ServiceStartError(
                    f"{self.name}: process exited with code {self.proc.returncode} before "
                    f"announcing its port; last log lines:\n{self.log_tail()}"
                )
            if time.monotonic() > deadline:
                raise ServiceStartError(f"{self.name}: no port announced within {timeout:.0f} s")
            time.sleep(0.02)
        self.address = f"127.0.0.1:{port[0]}"
        wait_for_serving(
            self.address, self.name, max(1.0, deadline - time.monotonic()), process=self.proc, log_tail=self.log_tail
        )
        return self.address

    def log_tail(self, n: int = 15) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""

    def stop(self, grace: float = 10.0) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.cpu_seconds = _proc_cpu_seconds(self.proc.pid)
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._log.close()

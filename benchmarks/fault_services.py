"""The fault campaign's services (``fault_campaign.py``): each a process on a fixed loopback port, under a
supervisor that restarts a killed one after its delay and counts one that exits unkilled as a crash."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from voxarena.lifecycle import PARENT_ENV  # noqa: E402
from voxarena.orchestrator.fleet.clients import ServiceStartError, wait_for_serving  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Supervised:
    """One service process on a fixed loopback port."""

    def __init__(self, name: str, module: str, logs: Path) -> None:
        self.name, self.module = name, module
        self.address = f"127.0.0.1:{free_port()}"
        self.log = logs / f"{name}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        host, port = self.address.rsplit(":", 1)
        cmd = [sys.executable, "-m", self.module, "--host", host, "--port", port]
        env = {**os.environ, PARENT_ENV: str(os.getpid())}  # it dies with the campaign
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=log, env=env)
        wait_for_serving(self.address, self.name, 120, process=self.proc)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def kill(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.alive() and self.proc is not None:
            self.proc.terminate()
            self.proc.wait(15)


class Supervisor(threading.Thread):
    """Watches the services as systemd, compose or Kubernetes would: a killed one is started again after
    the delay it was killed with; one that exits unkilled is a crash, counted and started again.

    It starts the processes it restarts itself and lives as long as the campaign: a service dies with the
    thread that started it (PR_SET_PDEATHSIG follows the parent thread), so a short-lived restart thread
    would take its service down with it."""

    def __init__(self, services: dict[str, Supervised]) -> None:
        super().__init__(daemon=True)
        self.services = services
        self.restart_at: dict[str, float] = {}
        self.crashes: list[str] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()

    def kill(self, name: str, delay: float) -> None:
        with self.lock:
            self.services[name].kill()
            self.restart_at[name] = time.monotonic() + delay

    def down(self) -> set[str]:
        with self.lock:
            return set(self.restart_at)

    def settle(self, timeout: float = 180) -> None:
        """Wait until every killed service is back."""
        end = time.monotonic() + timeout
        while self.down() and time.monotonic() < end:
            time.sleep(0.05)

    def run(self) -> None:
        while not self.stopping.wait(0.05):
            for name, svc in self.services.items():
                with self.lock:
                    if svc.alive():
                        continue
                    due = self.restart_at.get(name)
                if due is None:
                    code = svc.proc.returncode if svc.proc is not None else None
                    self.crashes.append(f"{name} exited with code {code} without being killed")
                elif time.monotonic() < due:
                    continue
                try:
                    svc.start()
                except ServiceStartError as e:
                    self.crashes.append(f"{name} did not come back: {e}")
                with self.lock:
                    self.restart_at.pop(name, None)

"""Removes a fleet's containers and network once the orchestrator that launched them is gone.

``python -m voxarena.orchestrator.fleet.container_reaper OWNER`` is started by ``containers.Launcher`` with a
pipe on its stdin whose other end only the orchestrator holds. The pipe closes however the
orchestrator ends (returns, raises, is killed by SIGTERM, SIGKILL or the OOM killer), so end of file
is the signal: remove every container and network labelled with this owner, then exit. The reaper
ignores SIGINT and SIGTERM and runs in a session of its own, so neither a Ctrl-C nor a kill of the
orchestrator's process group takes it down before it has cleaned up.

Local services need no such help: they ask the kernel to die with their parent (``voxarena.lifecycle``);
a container is the Docker daemon's child, not ours.
"""

from __future__ import annotations

import signal
import sys
from typing import Any

LAUNCHED_BY = "voxarena.launched-by"  # every container and network the orchestrator launched
LAUNCHER = "voxarena-orchestrator"
OWNER = "voxarena.owner"  # one id per fleet: what this reaper and the fleet's stop() remove


def remove_owned(client: Any, owner: str) -> list[str]:
    """Remove (forcibly: they may still run) the containers, then the networks, labelled ``owner``;
    returns the names removed. ``client`` is a ``docker.DockerClient``."""
    import docker.errors

    selector = {"label": [f"{LAUNCHED_BY}={LAUNCHER}", f"{OWNER}={owner}"]}
    removed = []
    for container in client.containers.list(all=True, filters=selector, ignore_removed=True):
        try:
            container.remove(force=True)
            removed.append(container.name)
        except docker.errors.NotFound:
            pass
    for network in client.networks.list(filters=selector):
        try:
            network.remove()
            removed.append(network.name)
        except docker.errors.NotFound:
            pass
    return removed


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m voxarena.orchestrator.fleet.container_reaper OWNER", file=sys.stderr)
        return 2
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.stdin.buffer.read()  # returns at end of file: the orchestrator closed the pipe or is gone
    import docker

    removed = remove_owned(docker.from_env(), argv[0])
    if removed:
        print(f"container_reaper: removed {', '.join(removed)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

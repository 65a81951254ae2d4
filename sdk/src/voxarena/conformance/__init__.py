"""The conformance checker: any running service against the VoxArena contract, over gRPC only.

``voxarena-conformance ADDRESS`` (``cli.py``) and ``orchestrator conformance ADDRESS`` run the same
checks (``run_conformance``); ``session`` holds the session and the common checks, ``generator``,
``detector``, ``transform`` and ``scorer`` the role checks. Imports only the contract side, never the orchestrator.
"""

from .probes import probes_from_file
from .session import STILL_SERVING, Check, run_conformance

__all__ = ["STILL_SERVING", "Check", "probes_from_file", "run_conformance"]

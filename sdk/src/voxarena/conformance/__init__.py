"""The conformance checker: any running service against the VoxArena contract, over gRPC only.

``voxarena-conformance ADDRESS`` (``cli.py``) and ``orchestrator conformance ADDRESS`` run the same
checks (``run_conformance``); ``session`` holds the session and the common and scorer checks,
``generator`` and ``detector`` the role checks. Imports only the contract side, never the orchestrator.
"""

from .session import STILL_SERVING, Check, probes_from_file, run_conformance

__all__ = ["STILL_SERVING", "Check", "probes_from_file", "run_conformance"]

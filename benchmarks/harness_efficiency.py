"""Harness efficiency of a demo-sized run: how busy the orchestrator keeps the services.

    python benchmarks/harness_efficiency.py [CONFIG] [--out DIR]

efficiency = (CPU seconds used by all service processes, from /proc at shutdown)
             / (cores they can use x the run's wall time)

Target: 0.85 or better on the 2-core machine. The run starts from an empty directory (model loads
included, as a user's run would) and the figures come from that one run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from voxarena.orchestrator.run.config import load_config  # noqa: E402
from voxarena.orchestrator.run.pipeline import Arena  # noqa: E402


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("config", nargs="?", default=str(REPO / "configs" / "demo.yaml"))
    p.add_argument("--out", default=None, help="run directory (default: a fresh temporary one)")
    args = p.parse_args()
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="voxarena-bench-"))
    if args.out and out.exists():
        shutil.rmtree(out)
    record = Arena(load_config(args.config), out, progress=False).run()
    session = record["sessions"][-1]
    cores = len(os.sched_getaffinity(0))
    cpu = session["service_cpu_seconds"]
    wall = session["wall_seconds"]
    efficiency = sum(cpu.values()) / (cores * wall)
    print(
        json.dumps(
            {
                "config": args.config,
                "run_dir": str(out),
                "cores": cores,
                "wall_seconds": wall,
                "service_cpu_seconds": cpu,
                "harness_efficiency": round(efficiency, 3),
                "target": 0.85,
            },
            indent=2,
        )
    )
    print(
        f"harness efficiency: {efficiency:.3f} "
        f"(service CPU {sum(cpu.values()):.1f} s / ({cores} cores x {wall:.1f} s wall))"
    )


if __name__ == "__main__":
    main()

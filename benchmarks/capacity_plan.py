"""The capacity plan: a target arena's requests, audio, run-store size, CPU and wall time, extrapolated
from the per-item costs measured in a run directory.

    python benchmarks/capacity_plan.py RUN_DIR [--utterances 10000 --generators 20 --detectors 10
        --conditions 3 --replicas 1,4,16 --shards 1,4 --cores-per-replica 1 --efficiency 0.905]

RUN_DIR is best a merged sharded run with one start-up-only session (docs/scaling.md says how to make
one): a service's start-up CPU is then its cheapest session, and its work is the rest; the merge's
session holds the metrics' cost apart from the per-clip measurements.

What is read from the run and measured here: ``capacity_measure``. The model: ``capacity_model``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.capacity_measure import Measured, RunReadError, bootstrap_costs, measure  # noqa: E402
from benchmarks.capacity_measure import ServiceCost as ServiceCost  # noqa: E402  (tests build them from here)
from benchmarks.capacity_model import (  # noqa: E402
    Costs,
    Target,
    balanced,
    memory_bytes,
    stage_work,
    target_services,
    total_wall,
    volumes,
    wall_seconds,
)
from voxarena.orchestrator.fleet.clients import MAX_MESSAGE_BYTES  # noqa: E402


# ---------------------------------------------------------------------------------------------- output
def human_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1000 or unit == "TB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{n:.0f} B"
        n /= 1000
    raise AssertionError("unreachable")


def hours(s: float) -> str:
    return f"{s / 3600:.2f} h" if s >= 360 else f"{s:.1f} s"


def print_measured(m: Measured) -> None:
    print(f"## Measured per-item costs ({m.utterances} utterances; CPU: service process, start-up taken out)\n")
    print("| service | calls | CPU s/call | CPU s per audio s | wall s/call (rows) | row CPU s/call | start-up CPU s |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for s in [*m.generators, *m.detectors, m.scorer]:
        row_cpu = f"{s.row_cpu_seconds / s.calls:.4f}" if s.row_cpu_seconds is not None else ""
        wall = f"{s.wall_per_call:.4f}" if math.isfinite(s.wall_per_call) else ""
        startup = f"{s.startup_cpu_seconds:.1f}" if s.startup_cpu_seconds is not None else "in the calls"
        print(
            f"| {s.name} | {s.calls} | {s.cpu_per_call:.4f} | {s.cpu_per_audio_second:.4f} | "
            f"{wall} | {row_cpu} | {startup} |"
        )
    print(f"\nmean generated clip: {m.clip_seconds:.2f} s, {human_bytes(m.generated_clip_bytes)} stored")
    for c in m.conditions:
        cpu = m.degrade_cpu_per_clip.get(c)
        print(
            f"condition {c}: {human_bytes(m.degraded_clip_bytes[c])} per degraded clip"
            + (f", {cpu * 1000:.1f} ms CPU per clip (orchestrator)" if cpu is not None else "")
        )
    print("JSONL bytes per row: " + ", ".join(f"{t} {b:.0f}" for t, b in m.row_bytes.items()))
    if m.metrics_cpu_seconds is not None:
        print(f"metrics (merge session, scorer): {m.metrics_cpu_seconds:.1f} CPU s for {m.trial_sets} trial sets, "
              f"{m.trials} trials")  # fmt: skip
    for n in m.notes:
        print(f"note: {n}")


def print_plan(m: Measured, t: Target, k: Costs, replicas: list[int], shards: list[int]) -> None:
    print(f"\n## Target: {t.utterances} utterances x {t.generators} generators x {t.detectors} detectors x "
          f"{t.conditions} conditions (clean included)\n")  # fmt: skip
    for name, value in volumes(m, t).items():
        print(f"- {name}: {human_bytes(value) if 'bytes' in name else f'{value:,.0f}'}")
    work = stage_work(m, t, k)
    print("\n| stage | CPU-hours | slowest service, CPU-hours |\n|---|---:|---:|")
    for stage, (total, slowest) in work.items():
        print(f"| {stage} | {total / 3600:.2f} | {slowest / 3600:.2f} |")
    print(f"\nWall time (replicas per service with {k.cores_per_replica:g} core(s) each, efficiency "
          f"{k.efficiency:g}; M orchestrator shards):\n")  # fmt: skip
    cols = ["generate (wall)", "detect (wall)", "measure (wall)", "orchestrator (wall)", "start-up", "metrics",
            "merge", "total"]  # fmt: skip
    print("| N | M | " + " | ".join(cols) + " | bound by |\n|---:|---:|" + "---:|" * len(cols) + "---|")
    for n in replicas:
        for s in shards:
            w = wall_seconds(m, t, k, n, s)
            bound = max(cols[:4], key=lambda c: w[c]).removesuffix(" (wall)")
            print(f"| {n} | {s} | " + " | ".join(hours(w[c]) for c in cols) + f" | {bound} |")
    services = target_services(m, t)
    print("\nThe same cores, each service's replicas by its work (at least one each):\n")
    print("| service cores | used | M | services (wall) | total | replicas |\n|---:|---:|---:|---:|---:|---|")
    for n in replicas:
        cores = n * sum(s.count for s in services) * k.cores_per_replica
        r, used, wall = balanced(m, t, k, cores)
        shown = ", ".join(f"{name} {r[name]}" for name in sorted(r, key=lambda x: -r[x])[:4])
        for s in shards:
            orchestrator = stage_work(m, t, k)["orchestrator"][1] / s
            w = total_wall(m, t, k, max(wall, orchestrator), s)
            print(f"| {cores:g} | {used:g} | {s} | {hours(wall)} | {hours(w['total'])} | {shown}, ... |")
    print("\nOrchestrator memory (its run store's rows): " + ", ".join(
        f"M={s}: {human_bytes(memory_bytes(m, t, k, s))} per shard" for s in shards))  # fmt: skip
    request = volumes(m, t)["DetectionMetrics request bytes"]
    if request > MAX_MESSAGE_BYTES:
        print(f"warning: the metrics' one DetectionMetrics request would be {human_bytes(request)}, over the "
              f"{human_bytes(MAX_MESSAGE_BYTES)} gRPC message limit (voxarena.orchestrator.fleet.clients)")  # fmt: skip


def ints(text: str) -> list[int]:
    return [int(x) for x in text.split(",")]


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--utterances", type=int, default=10000)
    ap.add_argument("--generators", type=int, default=20)
    ap.add_argument("--detectors", type=int, default=10)
    ap.add_argument("--conditions", type=int, default=3, help="channel conditions, clean included")
    ap.add_argument("--replicas", type=ints, default=[1, 4, 16], help="N replicas per service, e.g. 1,4,16")
    ap.add_argument("--shards", type=ints, default=[1, 4], help="M orchestrator shards, e.g. 1,4")
    ap.add_argument("--cores-per-replica", type=float, default=1.0)
    ap.add_argument("--efficiency", type=float, default=0.905, help="replica scaling efficiency")
    # Measured 2026-12-02 (docs/scaling.md): the orchestrator's own CPU in shards 0 and 1 of
    # configs/capacity.yaml (8.0 and 14.3 ms per row), less its start-up-only session and the degradations.
    ap.add_argument("--orchestrator-ms-per-row", type=float, default=10.1, help="orchestrator CPU per row")
    # Not measurable at the measured run's size (its merge's own CPU was its start-up): the rate at which
    # orchestrator_ceiling.py opens a 100,000-row store (0.072 ms per row), rounded up for the rewrite.
    ap.add_argument("--merge-ms-per-row", type=float, default=0.1, help="merge CPU per merged row")
    ap.add_argument("--rss-per-jsonl-byte", type=float, default=1.2, help="run store memory per table byte")
    ap.add_argument("--degrade-sample", type=int, default=12, help="clips to time each condition on (0: none)")
    args = ap.parse_args(argv)
    try:
        m = measure(args.run_dir, args.degrade_sample)
    except (RunReadError, OSError, KeyError) as e:
        sys.exit(f"{args.run_dir}: cannot read the measured costs: {e}")
    record = json.loads((args.run_dir / "run.json").read_text())
    set_cpu, trial_cpu = bootstrap_costs(int(record["config"]["scorer"].get("bootstrap_resamples", 1000)))
    print_measured(m)
    print(f"bootstrap (timed here): {set_cpu:.3f} CPU s per trial set + {trial_cpu * 1000:.3f} ms per trial")
    scale = 1.0
    if m.metrics_cpu_seconds is not None and m.trial_sets:
        model = m.trial_sets * set_cpu + m.trials * trial_cpu
        scale = m.metrics_cpu_seconds / model
        print(f"that model gives {model:.1f} CPU s for the measured run's metrics, measured "
              f"{m.metrics_cpu_seconds:.1f}: the target's metrics are scaled by {scale:.2f}")  # fmt: skip
    k = Costs(args.orchestrator_ms_per_row / 1000, args.merge_ms_per_row / 1000, set_cpu, trial_cpu,
              args.cores_per_replica, args.efficiency, args.rss_per_jsonl_byte, scale)  # fmt: skip
    t = Target(args.utterances, args.generators, args.detectors, args.conditions)
    print_plan(m, t, k, args.replicas, args.shards)


if __name__ == "__main__":
    main()

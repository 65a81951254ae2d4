"""The harness's own ceiling: how much work one orchestrator sustains when the services cost nothing.

    python benchmarks/orchestrator_ceiling.py [--items 400] [--rows 1000000] [--profile]

Three measurements, all in this one run (the machine is shared: compare the figures with each other,
not with another day's):

1. Throughput with instant test doubles: the dummy generator (TTS, 0.5 s of audio per item, no model)
   and the dummy detector (an FFT per clip) as local processes, the scorer with ``rtf`` only, on a
   synthetic table dataset of ``--items`` utterances. Printed: generations and detections per second
   over the wall time of the run's four stages (service start-up and metrics left out), and the
   orchestrator's own CPU milliseconds per item (this process's CPU: the services are other
   processes). One orchestrator is one Python process, so 1000 / (CPU ms per item) is its ceiling
   in items per second whatever the cores.
2. The same with detector batching off (``execution.detector_batch_size: 1``, one clip per
   ScoreBatch call) and on (the default, 16), each with the run store as it was (one fsync per row,
   inside the table's lock: ``append_fsync_per_row``) and as it is (group commit).
3. Resume of a run store of ``--rows`` rows (synthetic generations.jsonl, the real row shape): the
   time and peak memory of opening it, measured in a fresh subprocess, as the store does it now (rows
   kept as their JSON bytes, read line by line) and as it did before (whole file decoded, every row a
   dict).

``--profile`` adds the orchestrator's top functions by own time (cProfile) for the batched run.
"""

from __future__ import annotations

import argparse
import cProfile
import csv
import io
import json
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import soundfile as sf
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from voxarena.orchestrator.run.config import load_config  # noqa: E402
from voxarena.orchestrator.run.pipeline import Arena  # noqa: E402
from voxarena.orchestrator.store.records import Row  # noqa: E402
from voxarena.orchestrator.store.run_store import JsonlTable  # noqa: E402


def make_dataset(root: Path, n: int) -> Path:
    """``n`` half-second seeded noise clips from 20 speakers, as a table dataset."""
    audio = root / "audio"
    audio.mkdir(parents=True)
    rng = np.random.default_rng(0)
    rows = []
    for i in range(n):
        path = audio / f"u{i:06d}.wav"
        sf.write(path, (0.05 * rng.standard_normal(8000)).astype(np.float32), 16000, subtype="PCM_16")
        rows.append({"id": path.stem, "audio": f"audio/{path.name}", "speaker": f"s{i % 20:02d}", "text": f"item {i}"})
    table = root / "items.csv"
    with open(table, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    return table


def write_config(path: Path, table: Path, batch_size: int) -> Path:
    cfg = {
        "name": "ceiling",
        "dataset": {"kind": "table", "root": str(table)},
        "protocol": {"seed": 1, "tasks": ["TTS"]},
        "generators": {"dummy-generator": {"parameters": {"seconds_per_char": "0.001"}, "concurrency": 8}},
        "detectors": {"dummy-detector": {"concurrency": 4}},
        "scorer": {"metrics": ["rtf"], "bootstrap_resamples": 0},
        "execution": {"detector_batch_size": batch_size},
    }
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class ThreadProfiles:
    """cProfile in every thread the stages start (cProfile alone sees only the thread that enables it)."""

    def __init__(self) -> None:
        self.profiles: list[cProfile.Profile] = []

    def _start_in_thread(self, *_: object) -> None:
        profile = cProfile.Profile()
        self.profiles.append(profile)
        profile.enable()  # replaces this hook in the new thread

    def __enter__(self) -> ThreadProfiles:
        threading.setprofile(self._start_in_thread)
        self._start_in_thread()
        return self

    def __exit__(self, *_: object) -> None:
        threading.setprofile(None)  # type: ignore[arg-type]
        self.profiles[0].disable()

    def top(self, n: int) -> str:
        text = io.StringIO()
        stats = pstats.Stats(self.profiles[0], stream=text)
        for profile in self.profiles[1:]:
            stats.add(profile)
        stats.sort_stats("tottime").print_stats(n)
        return text.getvalue()


def append_fsync_per_row(self: JsonlTable, row: Row) -> None:
    """The store before group commit: one fsync per row, inside the table's lock (the baseline)."""
    line = (json.dumps(row.to_dict(), sort_keys=True) + "\n").encode()
    with self._lock:
        with open(self.path, "ab") as f:
            f.write(line)
            f.flush()
            os.fsync(f.fileno())
        self._lines[row.id] = line.rstrip(b"\n")


def throughput(table: Path, work: Path, batch_size: int, per_row_fsync: bool, profile: bool) -> dict:
    name = f"batch{batch_size}-{'fsync-per-row' if per_row_fsync else 'group-commit'}"
    out = work / f"run-{name}"
    config = write_config(work / f"ceiling-{name}.yaml", table, batch_size)
    group_commit = JsonlTable.append
    if per_row_fsync:
        JsonlTable.append = append_fsync_per_row  # type: ignore[method-assign]
    profiles = ThreadProfiles() if profile else None
    arena = Arena(load_config(config), out, progress=False)
    execute, spent = arena._execute, {}

    def timed_execute(plan):  # the four stages only: no service start-up, no metrics
        c0, t0 = cpu_seconds(), time.perf_counter()
        if profiles:
            with profiles:
                execute(plan)
        else:
            execute(plan)
        spent.update(cpu=cpu_seconds() - c0, wall=time.perf_counter() - t0)

    arena._execute = timed_execute  # type: ignore[method-assign]
    try:
        arena.run()
    finally:
        JsonlTable.append = group_commit  # type: ignore[method-assign]
    cpu, wall = spent["cpu"], spent["wall"]
    n_gen = sum(1 for _ in open(out / "generations.jsonl"))
    n_det = sum(1 for _ in open(out / "detections.jsonl"))
    result = {
        "store": "one fsync per row" if per_row_fsync else "group commit",
        "detector_batch_size": batch_size,
        "wall_seconds": round(wall, 2),
        "orchestrator_cpu_seconds": round(cpu, 2),
        "generations": n_gen,
        "detections": n_det,
        "generations_per_second": round(n_gen / wall, 1),
        "detections_per_second": round(n_det / wall, 1),
        "orchestrator_cpu_ms_per_item": round(1000 * cpu / (n_gen + n_det), 2),
        "ceiling_items_per_second": round((n_gen + n_det) / cpu, 1),
    }
    if profiles:
        result["profile"] = profiles.top(20)
    return result


_OPEN_STORE = """
import sys, time
def peak_mb():  # VmHWM: this process alone (ru_maxrss keeps the parent's peak across fork + exec)
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")) // 1024
sys.path.insert(0, {repo!r})
from voxarena.orchestrator.store.run_store import RunStore
t0 = time.perf_counter()
store = RunStore(__import__("pathlib").Path({run!r}))
t = time.perf_counter() - t0
print(len(store.generations.rows), round(t, 2), peak_mb())
"""

# The store as it was before this benchmark's changes: the whole file read and decoded at once, every row
# parsed into a dict and kept.
_OPEN_AS_IT_WAS = """
import json, time
def peak_mb():  # VmHWM: this process alone (ru_maxrss keeps the parent's peak across fork + exec)
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")) // 1024
t0 = time.perf_counter()
rows = {{}}
for line in open({path!r}, "rb").read().decode().splitlines():
    if line.strip():
        row = json.loads(line)
        rows[row["id"]] = row
t = time.perf_counter() - t0
print(len(rows), round(t, 2), peak_mb())
"""


_IMPORTS_ONLY = """
import sys
def peak_mb():  # VmHWM: this process alone (ru_maxrss keeps the parent's peak across fork + exec)
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")) // 1024
sys.path.insert(0, {repo!r})
import voxarena.orchestrator.store.run_store
print(0, 0, peak_mb())
"""


def _measure(code: str) -> tuple[int, float, int]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    n, seconds, peak_mb = out.stdout.split()
    return int(n), float(seconds), int(peak_mb)


def resume_cost(template_run: Path, work: Path, rows: int) -> dict:
    """Open a synthetic store of ``rows`` generation rows shaped like the real run's first row, as the
    store does now and as it did before (each in a fresh process)."""
    row = json.loads(open(template_run / "generations.jsonl").readline())
    run = work / "big-store"
    run.mkdir()
    with open(run / "generations.jsonl", "w") as f:
        for i in range(rows):
            row["id"] = f"dummy-generator/TTS/u{i:09d}"
            f.write(json.dumps(row, sort_keys=True) + "\n")
    size = (run / "generations.jsonl").stat().st_size
    _, _, python_mb = _measure(_IMPORTS_ONLY.format(repo=str(REPO)))
    _, before_s, before_mb = _measure(_OPEN_AS_IT_WAS.format(path=str(run / "generations.jsonl")))
    n, seconds, peak_mb = _measure(_OPEN_STORE.format(repo=str(REPO), run=str(run)))
    return {
        "rows": n,
        "jsonl_mb": round(size / 2**20, 1),
        "open_seconds": seconds,
        "peak_rss_mb": peak_mb,
        "as_it_was_open_seconds": before_s,
        "as_it_was_peak_rss_mb": before_mb,
        "python_baseline_rss_mb": python_mb,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--items", type=int, default=400)
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--profile", action="store_true")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="voxarena-ceiling-") as tmp:
        work = Path(tmp)
        table = make_dataset(work / "data", args.items)
        runs = [
            throughput(table, work, batch, per_row, args.profile and batch > 1 and not per_row)
            for per_row in (True, False)
            for batch in (1, 16)
        ]
        store = resume_cost(work / "run-batch16-group-commit", work, args.rows)
    profile = runs[-1].pop("profile", None)
    print(json.dumps({"items": args.items, "runs": runs, "resume": store}, indent=2))
    if profile:
        print(profile)
    for r in runs:
        print(
            f"{r['store']:>17}, batch {r['detector_batch_size']:>2}: {r['generations_per_second']} generations/s, "
            f"{r['detections_per_second']} detections/s; orchestrator CPU {r['orchestrator_cpu_ms_per_item']} ms "
            f"per item -> ceiling {r['ceiling_items_per_second']} items/s"
        )
    before, after = runs[1], runs[3]
    print(
        f"group commit / one fsync per row (batch 16): "
        f"{after['generations_per_second'] / before['generations_per_second']:.2f}x generations/s"
    )
    print(
        f"resume of {store['rows']:,} rows ({store['jsonl_mb']} MB): {store['open_seconds']} s, "
        f"peak RSS {store['peak_rss_mb']} MB; as it was: {store['as_it_was_open_seconds']} s, "
        f"{store['as_it_was_peak_rss_mb']} MB (python with the store's imports {store['python_baseline_rss_mb']} MB)"
    )


if __name__ == "__main__":
    main()

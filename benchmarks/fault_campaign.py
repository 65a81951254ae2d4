"""Fault campaign (issue 13): kill the services and the orchestrator at random, feed every service the
bad-input corpus, and count what was lost.

    python benchmarks/fault_campaign.py [--kills N] [--seed S] [--items K] [--keep DIR]

1. Services: dummy-generator, dummy-detector and the scorer (metrics rtf and pesq) run as processes on
   fixed loopback ports under a supervisor that restarts a killed one after a random 0.2-3 s, as
   systemd, compose or Kubernetes would (local mode restarts nothing: its services die with the run).
   A process that exits without being killed is a crash; it is counted and restarted.
2. Reference: one uninterrupted ``orchestrator run`` (TTS and RECONSTRUCT, a clean and a channel
   condition, bootstrap CIs).
3. Campaign: the same config into a fresh directory. Kill k of N (SIGKILL) falls at a random point of
   the run's progress (rows written; the last ones in the metrics), alternately on the orchestrator
   (rerun at once: a resume) and on a random service (the orchestrator waits out the outage while the
   supervisor restarts it). Then plain reruns (no --retry-failed) until one exits 0.
4. Bad inputs: every hostile request of the conformance checker (``voxarena.conformance``: the checks it
   makes through ``Session.expect_error``, each followed by a health check) against every service.

Prints six lines and exits 1 unless all hold:

    items lost 0                  planned rows (the run's own plan) not done, from the run store
    items duplicated 0            rows written twice for an id that was done, or for no planned id
    final metrics equal to an uninterrupted run: yes   metrics/*.csv and *.json, timing columns (rtf) aside
    services crashed 0            service processes that exited unkilled, or not SERVING at the end
    services hung 0               calls that ran into their deadline, services or runs that stopped answering
    INTERNAL for client mistakes 0   bad inputs answered INTERNAL
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import soundfile as sf
import yaml

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.fault_bad_inputs import CALL_SECONDS, HostileInputs  # noqa: E402
from benchmarks.fault_services import Supervised, Supervisor  # noqa: E402
from voxarena.conformance.session import speech_like  # noqa: E402
from voxarena.orchestrator.fleet.clients import ServiceStartError  # noqa: E402
from voxarena.orchestrator.run.status import run_status  # noqa: E402
from voxarena.orchestrator.store.run_store import read_jsonl  # noqa: E402

SERVICES = {  # config name -> (role, module)
    "dummy-generator": ("generators", "voxarena.services.testing.dummy_generator"),
    "dummy-detector": ("detectors", "voxarena.services.testing.dummy_detector"),
    "scorer": ("scorer", "voxarena.scorers"),
}
TABLES = ("generations.jsonl", "degradations.jsonl", "detections.jsonl", "measurements.jsonl")
# The rows each service's calls make (the scorer's last work, the metrics, makes no row).
WORK = {
    "dummy-generator": ("generations.jsonl",),
    "dummy-detector": ("detections.jsonl",),
    "scorer": ("measurements.jsonl",),
}
TEXTS = ("The birch canoe slid on the smooth planks.", "Glue the sheet to the dark blue background.")
RESTART_DELAY = (0.2, 3.0)


def write_dataset(root: Path, items: int, seed: int) -> Path:
    """``items`` speech-like clips (the conformance probes' signal), two per speaker, as a table dataset."""
    rng = random.Random(seed)
    (root / "audio").mkdir(parents=True, exist_ok=True)
    rows = []
    for n in range(items):
        clip = speech_like(1.0 + 0.25 * (n % 3), rng.uniform(100, 240), seed=seed + n)
        sf.write(root / "audio" / f"c{n}.wav", clip.samples, clip.sample_rate, subtype="PCM_16")
        rows.append({"id": f"c{n}", "audio": f"audio/c{n}.wav", "speaker": f"s{n // 2}", "text": TEXTS[n % 2]})
    with open(root / "manifest.csv", "w", newline="") as f:
        w = csv.DictWriter(f, ["id", "audio", "speaker", "text"])
        w.writeheader()
        w.writerows(rows)
    return root / "manifest.csv"


class Campaign:
    def __init__(self, work: Path, kills: int, seed: int, items: int) -> None:
        self.work, self.kills, self.rng = work, kills, random.Random(seed)
        (work / "logs").mkdir(parents=True, exist_ok=True)
        self.services = {name: Supervised(name, module, work / "logs") for name, (_, module) in SERVICES.items()}
        self.supervisor = Supervisor(self.services)
        self.config = self._write_config(write_dataset(work / "data", items, seed), seed)
        self.hung: list[str] = []
        self.runs: Counter = Counter()  # exit code -> orchestrator runs
        self.kill_log: list[str] = []
        self.killed: Counter = Counter()  # service -> kills

    def _write_config(self, manifest: Path, seed: int) -> Path:
        cfg: dict = {
            "name": "fault-campaign",
            "dataset": {"kind": "table", "root": str(manifest)},
            "protocol": {"seed": seed, "tasks": ["TTS", "RECONSTRUCT"]},
            "conditions": {"quiet": [{"gain_db": -6}]},
            "generators": {},
            "detectors": {},
            "execution": {
                "deadline_seconds": CALL_SECONDS,
                "retries": 2,
                "backoff_seconds": 0.2,
                "outage_seconds": 120,
                "detector_batch_size": 4,
            },
        }
        for name, (role, _) in SERVICES.items():
            entry = {"address": self.services[name].address}
            if role == "scorer":
                cfg["scorer"] = {**entry, "metrics": ["rtf", "pesq"], "bootstrap_resamples": 50}
            else:
                cfg[role][name] = entry
        # Slower generations (0.2 s a call) keep the generator busy long enough for a kill to cut calls.
        cfg["generators"]["dummy-generator"]["parameters"] = {"sleep": "0.2"}
        path = self.work / "config.yaml"
        path.write_text(yaml.safe_dump(cfg))
        return path

    # ------------------------------------------------------------------ orchestrator runs
    def orchestrator(self, out: Path) -> subprocess.Popen[bytes]:
        cmd = [sys.executable, "-m", "voxarena.orchestrator", "run", str(self.config), "--out", str(out)]
        with open(self.work / "logs" / "orchestrator.log", "ab") as log:
            log.write(f"\n--- {' '.join(cmd)}\n".encode())
            log.flush()
            return subprocess.Popen([*cmd, "--no-progress"], stdout=log, stderr=log, cwd=REPO)

    def finish(self, proc: subprocess.Popen[bytes], timeout: float) -> int | None:
        """The run's exit code; None when it hung (it is killed)."""
        try:
            code = proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.hung.append(f"orchestrator run still going after {timeout:.0f} s")
            proc.kill()
            proc.wait()
            return None
        self.runs[code] += 1
        return code

    def run_to_completion(self, out: Path, timeout: float, attempts: int = 6) -> int | None:
        code = None
        for _ in range(attempts):
            code = self.finish(self.orchestrator(out), timeout)
            if code in (0, 4):  # complete, or only permanent failures: a plain rerun changes nothing
                break
        return code

    # ------------------------------------------------------------------ the campaign proper
    def attack(self, out: Path, reference: Path, timeout: float) -> int | None:
        """N kills at random points of progress, alternately the orchestrator and a random service (one
        with work left, where there is one: a killed service that is never called again tests nothing)."""
        points = sorted(self.rng.uniform(0, rows_written(reference)) for _ in range(self.kills))
        proc = self.orchestrator(out)
        last = -1
        for k, point in enumerate(points, 1):
            started, point = time.monotonic(), max(point, last + 1)  # each kill after some progress of its own
            while rows_written(out) < point and proc.poll() is None:
                if time.monotonic() - started > timeout:
                    break
                time.sleep(0.02)
            if proc.poll() is not None:  # done before this point: the kill falls on a rerun (resume, metrics)
                self.runs[proc.returncode] += 1
                proc = self.orchestrator(out)
                time.sleep(self.rng.uniform(0.5, 4.0))
            time.sleep(self.rng.uniform(0, 0.3))
            last = rows_written(out)
            where = f"at {last} rows"
            if k % 2:
                proc.kill()
                proc.wait()
                self.runs["killed"] += 1
                self.kill_log.append(f"kill {k}: orchestrator {where}")
                proc = self.orchestrator(out)
            else:
                name = self.victim(out, reference)
                delay = self.rng.uniform(*RESTART_DELAY)
                self.supervisor.kill(name, delay)
                self.killed[name] += 1
                done = f"{rows_written(out, WORK[name])} of {rows_written(reference, WORK[name])} {WORK[name][0]}"
                self.kill_log.append(f"kill {k}: {name} {where} ({done} rows), back after {delay:.1f} s")
        code = self.finish(proc, timeout)
        self.supervisor.settle()
        return code if code == 0 else self.run_to_completion(out, timeout)

    def victim(self, out: Path, reference: Path) -> str:
        """A random service among those up with work left (any up, if none has), the least killed first."""
        if not set(self.services) - self.supervisor.down():
            self.supervisor.settle()  # every service is down at once: the next kill waits for one
        up = sorted(set(self.services) - self.supervisor.down())
        busy = [n for n in up if rows_written(out, WORK[n]) < rows_written(reference, WORK[n])] or up
        fewest = min(self.killed[n] for n in busy)
        return self.rng.choice([n for n in busy if self.killed[n] == fewest])

    def bad_inputs(self) -> tuple[Counter, list[tuple[str, str]]]:
        """Every service fed the conformance checker's hostile requests: (bad inputs sent per service,
        problems by kind)."""
        answers: Counter = Counter()
        problems = []
        for svc in self.services.values():
            corpus = HostileInputs(svc.address)
            corpus.run()
            answers[svc.name] = len(corpus.hostile.answers)
            problems += [(kind, f"{svc.name}: {what}") for kind, what in corpus.hostile.problems()]
        return answers, problems


def rows_written(out: Path, tables: tuple[str, ...] = TABLES) -> int:
    """Rows in the run's tables so far (failed and retried ones included): the run's progress."""
    n = 0
    for table in tables:
        try:
            n += (out / table).read_bytes().count(b"\n")
        except FileNotFoundError:
            pass
    return n


# ---------------------------------------------------------------------------------- what was lost
def lost_and_duplicated(out: Path) -> tuple[int, int, int]:
    """(planned rows not done, rows done twice or off the plan, failed rows that reruns retried).

    The plan is the run's own (``status``: rebuilt from the frozen manifest and run.json). A failed row
    followed by an ok one is a retry, not a duplicate; two ok rows for one id are work done twice."""
    st = run_status(out)
    lost = sum(c["expected"] - c["done"] for c in st["coverage"])
    duplicated = retried = ok_ids = 0
    for table in ("generations.jsonl", "detections.jsonl", "measurements.jsonl"):
        raw = [json.loads(line) for line in (out / table).read_text().splitlines()]
        ok = Counter(r["id"] for r in raw if r["status"] == "ok")
        duplicated += sum(n - 1 for n in ok.values())
        retried += sum(1 for r in raw if r["status"] != "ok")
        ok_ids += sum(1 for r in read_jsonl(out / table).values() if r["status"] == "ok")
    duplicated += ok_ids - sum(c["done"] for c in st["coverage"])  # done rows of ids the plan does not have
    return lost, duplicated, retried


def metric_files(run: Path) -> dict[str, object]:
    """metrics/*.csv (rows, timing columns left out) and *.json, as compared between runs."""
    out: dict[str, object] = {}
    for path in sorted((run / "metrics").iterdir()):
        if path.suffix == ".csv":
            with open(path, newline="") as f:
                out[path.name] = [{k: v for k, v in r.items() if not k.startswith("rtf")} for r in csv.DictReader(f)]
        elif path.suffix == ".json":
            out[path.name] = json.loads(path.read_text())
    return out


def differences(a: dict[str, object], b: dict[str, object]) -> list[str]:
    return [name for name in sorted(set(a) | set(b)) if a.get(name) != b.get(name)]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kills", type=int, default=10, help="SIGKILLs, alternately the orchestrator and a service")
    p.add_argument("--seed", type=int, default=1, help="seeds the kills, the restart delays and the dataset")
    p.add_argument("--items", type=int, default=8, help="dataset items (x2 tasks x 2 conditions of work)")
    p.add_argument("--keep", type=Path, default=None, help="work here and keep it (default: a temporary dir)")
    args = p.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="voxarena-faults-"))
    campaign = Campaign(work, args.kills, args.seed, args.items)
    t0 = time.monotonic()
    try:
        for svc in campaign.services.values():
            svc.start()
        campaign.supervisor.start()
        reference, out = work / "reference", work / "campaign"
        started = time.monotonic()
        if campaign.run_to_completion(reference, 600, attempts=1) != 0:
            print(f"the uninterrupted run failed: see {work}/logs/orchestrator.log", file=sys.stderr)
            return 2
        timeout = max(120.0, 10 * (time.monotonic() - started))  # a run this much slower than the reference hung
        code = campaign.attack(out, reference, timeout)
        answers, problems = campaign.bad_inputs()
        time.sleep(0.5)  # a service the bad inputs brought down: the supervisor sees it exit
    except ServiceStartError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        campaign.supervisor.stopping.set()
        campaign.supervisor.join(180)
        for svc in campaign.services.values():
            svc.stop()
    lost, duplicated, retried = lost_and_duplicated(out) if (out / "run.json").exists() else (-1, 0, 0)
    diff = differences(metric_files(reference), metric_files(out)) if code == 0 else ["the run did not complete"]
    crashed = list(campaign.supervisor.crashes)
    crashed += [what for kind, what in problems if kind == "crashed"]
    hung = campaign.hung + [what for kind, what in problems if kind == "hung"]
    internal = [what for kind, what in problems if kind == "internal"]
    notes = [f"(not counted) {what}" for kind, what in problems if kind == "note"]
    for line in campaign.kill_log:
        print(line)
    runs = ", ".join(f"{n} x {code}" for code, n in sorted(campaign.runs.items(), key=str))
    resent = sum(r.get("attempts", 1) > 1 for r in read_jsonl(out / "generations.jsonl").values())
    print(f"orchestrator runs by exit code: {runs}; failed rows retried by reruns: {retried}; ", end="")
    print(f"generations answered after more than one attempt (a cut call sent again): {resent}")
    each = ", ".join(f"{name} {n}" for name, n in answers.items())
    print(f"bad inputs sent: {sum(answers.values())} ({each}); wall time {time.monotonic() - t0:.0f} s; work {work}")
    for detail in diff + crashed + hung + internal + notes:
        print(f"  - {detail}")
    print(f"items lost {lost}")
    print(f"items duplicated {duplicated}")
    print(f"final metrics equal to an uninterrupted run: {'no' if diff else 'yes'}")
    print(f"services crashed {len(crashed)}")
    print(f"services hung {len(hung)}")
    print(f"INTERNAL for client mistakes {len(internal)}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if lost or duplicated or diff or crashed or hung or internal else 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop the services on the way out
    sys.exit(main())

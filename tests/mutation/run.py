"""Mutation testing of the modules whose bugs change results (``make mutation``), with cosmic-ray.

Each target is one or more source files, the targeted pytest selection that should catch their
bugs, and optionally the functions whose mutants count (a service module's argument parsing and
signal handling are not what its unit tests are for). Per target, the committed tree (``git archive``
of HEAD as the run starts, the same commit for every target, named in the report) is unpacked into a
scratch directory, since cosmic-ray mutates files in place and the shared
checkout must never see a mutant; then ``cosmic-ray init``, the operator and definition filters
below, a baseline run (the selection must pass unmutated) and ``cosmic-ray exec``, each mutant's
selection run by a fork server that has the third-party libraries imported already
(``forkserver.py``: about 4x faster on the shared 2-core machine). Prints the score
per target (killed / (killed + survived); mutants the tests cannot even import count as killed,
with cosmic-ray's own "incompetent" outcome listed apart) and every surviving mutant's diff, and
writes ``report.md`` and ``report.json`` in the work directory.

    python tests/mutation/run.py [TARGET ...] [--jobs 2] [--workdir DIR]
    python tests/mutation/run.py --list

Why cosmic-ray and not mutmut: mutmut 3 mutates function bodies only (through trampolines), so
the constants that matter most here, a dataclass field default (``CostModel.c_fa = 10``) and
module-level tables (composite weights, codec rates), would never be mutated; cosmic-ray mutates
any expression, runs any shell command as the test (a targeted selection per target), and works
with this layout as it is (two import roots, ``SOURCE_ROOTS``, put first on the path).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FORKSERVER = Path(__file__).resolve().with_name("forkserver.py")
TARGET_SCORE = 0.85
# Where the tree's packages are imported from: the voxarena distribution (``voxarena/``) and the
# voxarena-sdk one (``sdk/src/voxarena/``), relative to the repository (or a scratch copy of it).
SOURCE_ROOTS = (".", "sdk/src")

# Operators left out: replacing arithmetic with bitwise/shift/modulo operators (and the reverse, which
# mostly rewrites ``X | None`` annotations, inert under ``from __future__ import annotations``) and
# ``==`` -> ``is``; they multiply the mutant count without modelling a plausible slip.
EXCLUDED_OPERATORS = [
    r"core/ReplaceBinaryOperator_.*_(RShift|LShift|BitOr|BitAnd|BitXor|FloorDiv|Mod)$",
    r"core/ReplaceBinaryOperator_(RShift|LShift|BitOr|BitAnd|BitXor)_.*",
    r"core/ReplaceComparisonOperator_.*_(Is|IsNot)$",
    r"core/ReplaceComparisonOperator_(Is|IsNot)_.*",
]


@dataclass(frozen=True)
class Target:
    name: str
    paths: tuple[str, ...]
    tests: tuple[str, ...]
    # Only mutants inside these functions/methods count (None: all of the file).
    only: tuple[str, ...] | None = None
    note: str = ""
    # Not in the default set (``--all`` or naming the target runs it): for a selection too slow to run
    # per mutant, e.g. one that runs whole arenas (about a minute each). None is, at present.
    extended: bool = False


TARGETS = [
    Target(
        "detection",
        ("voxarena/stats/detection.py",),
        ("tests/voxarena/stats/test_detection.py", "tests/scorers/test_calibration_loss.py"),
    ),
    Target("bootstrap", ("voxarena/stats/bootstrap.py",), ("tests/voxarena/stats/test_bootstrap.py",)),
    Target(
        "composite",
        ("voxarena/stats/composite.py",),
        ("tests/voxarena/stats/test_composite.py", "tests/orchestrator/test_offline_cli.py", "-k", "composite"),
    ),
    Target("i2d", ("voxarena/stats/i2d.py",), ("tests/voxarena/stats/test_i2d.py",)),
    Target(
        "channel",
        ("voxarena/dsp/channel.py", "voxarena/orchestrator/run/channel.py"),
        ("tests/orchestrator/test_channel.py",),
    ),
    Target(
        "sdk",
        (
            "sdk/src/voxarena/sdk/errors.py",
            "sdk/src/voxarena/sdk/servicers.py",
            "sdk/src/voxarena/sdk/interceptors.py",
        ),
        (
            "tests/services/test_sdk_server.py",
            "tests/services/test_bad_input_codes.py",
            "tests/services/test_call_log.py",
        ),
        only=(
            "GetInfo",
            "_to_request",
            "_bounded",
            "Synthesize",
            "_clip",
            "Score",
            "ScoreBatch",
            "intercept_service",
            "__call__",
            "_mapped",
            "error_prefix",
            "request_ids",
            "call_log_line",
            "tolerant_deserializer",
            "parse",
            "_require_ready",
            "model_info",
            "_options",
            "_decode",
        ),
        note="error mapping and echo: the servicers, the interceptor, its tolerant deserializer and call log line",
    ),
    Target(
        "clients",
        ("voxarena/orchestrator/fleet/clients.py",),
        ("tests/orchestrator/test_clients.py", "tests/orchestrator/test_retry_after_outage.py"),
        only=("call_with_retry", "call", "__init__"),
    ),
    Target("validation", ("voxarena/orchestrator/run/validation.py",), ("tests/orchestrator/test_validation.py",)),
    Target(
        "manifest",
        ("voxarena/orchestrator/run/manifest.py", "voxarena/orchestrator/run/importers.py"),
        (
            "tests/orchestrator/test_manifest_identity.py",
            "tests/orchestrator/test_manifest.py",
            "tests/orchestrator/test_importers.py::test_vctk_092_layout",
            "tests/orchestrator/test_importers.py::test_table_manifest",
            "tests/orchestrator/test_importers.py::test_table_errors_name_the_row",
            "tests/orchestrator/test_asvspoof.py::test_the_three_protocol_layouts",
            "tests/orchestrator/test_dataset_paths.py",
        ),
        note="manifests, hashes and item seeds: the frozen manifest and every importer, all of both modules",
    ),
    Target(
        "protocol",
        ("voxarena/orchestrator/metrics/compare.py",),
        ("tests/orchestrator/test_compare_identity.py",),
        only=("protocol_differences", "_image_difference", "check_comparable", "_record", "_fingerprint", "__init__"),
        note="protocol identity (compare-check); not compare-timing",
    ),
    Target(
        "resume",
        (
            "voxarena/orchestrator/run/pipeline.py",
            "voxarena/orchestrator/fleet/fleet.py",
            "voxarena/orchestrator/fleet/service_config.py",
        ),
        ("tests/orchestrator/test_resume_identity.py",),
        only=(
            "freeze_manifest",
            "_check_resume",
            "check_unchanged",
            "protocol_view",
            "service_protocol_view",
            "config_differences",
        ),
        note="what a resume refuses: changed config, dataset (frozen manifest), model (version, weights) or image id",
    ),
]


@dataclass
class Result:
    target: str
    mutants: int = 0
    killed: int = 0
    survived: int = 0
    incompetent: int = 0
    skipped: int = 0
    seconds: float = 0.0
    baseline_seconds: float = 0.0
    survivors: list[dict] = field(default_factory=list)
    error: str = ""
    commit: str = ""  # the commit whose tree was mutated

    @property
    def score(self) -> float:
        tested = self.killed + self.survived
        return self.killed / tested if tested else float("nan")


def _env(scratch: Path) -> dict[str, str]:
    # The scratch copy is not beside ../shared: point the tests at the real speech data. Its import
    # roots go first on the path: both distributions are installed editable from the checkout, and
    # ``voxarena`` is a namespace package over both, so without them ``voxarena.sdk`` (and the
    # contract's stubs, codec, ...) would be imported from the checkout, never the mutated copy.
    speech = os.environ.get("VOXARENA_SPEECH", str(REPO.parent / "shared" / "data" / "speech"))
    path = os.pathsep.join(str(scratch / root) for root in SOURCE_ROOTS)
    return {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
        "VOXARENA_SPEECH": speech,
        "PYTHONPATH": path,
    }


def _run(cmd: list[str], cwd: Path, log, timeout: float | None = None) -> subprocess.CompletedProcess:
    env = _env(cwd)
    log.write(f"$ {' '.join(cmd)}\n")
    log.flush()
    return subprocess.run(
        ["nice", "-n", "10", *cmd], cwd=cwd, stdout=log, stderr=subprocess.STDOUT, env=env, timeout=timeout
    )


def _test_command(target: Target, sock: Path, timeout: float) -> list[str]:
    """The forked pytest run of the target's selection (see forkserver.py); the child's own alarm
    fires a little before cosmic-ray's timeout, so the server is free for the next mutant."""
    return [
        sys.executable,
        str(FORKSERVER),
        "run",
        str(sock),
        f"{max(timeout - 10, 10):.0f}",
        "--",
        "-x",
        "-q",
        "-p",
        "no:cacheprovider",
        *target.tests,
    ]


def _config(target: Target, command: list[str], timeout: float) -> str:
    paths = ", ".join(json.dumps(p) for p in target.paths)
    return (
        f"[cosmic-ray]\nmodule-path = [{paths}]\ntimeout = {timeout:.0f}\nexcluded-modules = []\n"
        f"test-command = {json.dumps(' '.join(command))}\n\n"
        '[cosmic-ray.distributor]\nname = "local"\n'
    )


def _filter(session: Path, target: Target) -> int:
    """Mark excluded operators and mutants outside ``target.only`` as skipped; returns how many."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    patterns = [re.compile(p) for p in EXCLUDED_OPERATORS]
    skipped = 0
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item in list(db.pending_work_items):
            m = item.mutations[0]
            outside = target.only is not None and m.definition_name not in target.only
            if outside or any(p.match(m.operator_name) for p in patterns):
                db.set_result(item.job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))
                skipped += 1
    return skipped


def _collect(session: Path, result: Result) -> None:
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import TestOutcome, WorkerOutcome

    with use_db(str(session), WorkDB.Mode.open) as db:
        for item, res in db.completed_work_items:
            if res.worker_outcome == WorkerOutcome.SKIPPED:
                result.skipped += 1
                continue
            result.mutants += 1
            if res.test_outcome == TestOutcome.SURVIVED:
                result.survived += 1
                m = item.mutations[0]
                result.survivors.append(
                    {
                        "file": str(m.module_path),
                        "line": m.start_pos[0],
                        "function": m.definition_name,
                        "operator": m.operator_name,
                        "diff": res.diff or "",
                    }
                )
            elif res.test_outcome == TestOutcome.INCOMPETENT:
                result.incompetent += 1
                result.killed += 1
            else:
                result.killed += 1
    result.survivors.sort(key=lambda s: (s["file"], s["line"]))


def _retest_survivors(scratch: Path, session: Path) -> None:
    """Take the tests of HEAD into the scratch copy and mark the surviving mutants pending again, so
    that ``exec`` reruns just those against tests added since (the mutated sources are unchanged)."""
    import sqlite3

    archive = subprocess.run(["git", "archive", "HEAD", "tests"], cwd=REPO, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(scratch)], input=archive, check=True)
    with sqlite3.connect(session) as db:
        db.execute("DELETE FROM work_results WHERE test_outcome = 'SURVIVED'")  # stored by enum name


def run_target(target: Target, workdir: Path, commit: str, resume: bool = False, retest: bool = False) -> Result:
    """Mutate ``target`` in ``workdir/<name>`` as of ``commit``; ``resume`` goes on with an interrupted
    session there, ``retest`` reruns its survivors against the current tests."""
    result = Result(target.name)
    scratch = workdir / target.name
    session = scratch / "session.sqlite"
    resume = (resume or retest) and session.exists()
    if resume and retest:
        _retest_survivors(scratch, session)
    if not resume:
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir(parents=True)
        archive = subprocess.run(["git", "archive", commit], cwd=REPO, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(scratch)], input=archive, check=True)
        (scratch / ".commit").write_text(commit + "\n")
        for path in target.paths:  # cosmic-ray restores a mutated file after each run, not when killed
            (scratch / ".pristine" / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(scratch / path, scratch / ".pristine" / path)
    else:
        for path in target.paths:
            shutil.copy(scratch / ".pristine" / path, scratch / path)
    cr = str(Path(sys.executable).with_name("cosmic-ray"))
    sock = scratch / "forkserver.sock"
    t0 = time.perf_counter()
    with open(workdir / f"{target.name}.log", "a" if resume else "w") as log:
        env = _env(scratch)
        server = subprocess.Popen(
            ["nice", "-n", "10", sys.executable, str(FORKSERVER), "serve", str(sock)],
            cwd=workdir,
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
            text=True,
        )
        try:
            if server.stdout.readline().strip() != "ready":
                result.error = "the fork server did not start"
                return result
            # The baseline runs plainly, so that a failure shows in the log.
            base = _run(
                [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *target.tests], scratch, log
            )
            result.baseline_seconds = time.perf_counter() - t0
            if base.returncode != 0:
                result.error = f"the selection fails unmutated (see {workdir / target.name}.log)"
                return result
            # A mutant's run may take a few times the baseline on a loaded machine; beyond that it hangs.
            timeout = max(120.0, 6 * result.baseline_seconds)
            (scratch / "cr.toml").write_text(_config(target, _test_command(target, sock, timeout), timeout))
            if not resume:
                if _run([cr, "init", "cr.toml", str(session)], scratch, log).returncode != 0:
                    result.error = "cosmic-ray init failed"
                    return result
                _filter(session, target)
            if _run([cr, "exec", "cr.toml", str(session)], scratch, log).returncode != 0:
                result.error = "cosmic-ray exec failed"
        finally:
            server.terminate()
            server.wait()
    _collect(scratch / "session.sqlite", result)
    result.commit = _commit(scratch)
    result.seconds = time.perf_counter() - t0 + _elapsed(scratch)
    (scratch / "elapsed").write_text(f"{result.seconds:.1f}\n")  # summed over resumed sessions
    return result


def _commit(scratch: Path) -> str:
    try:
        return (scratch / ".commit").read_text().strip()
    except OSError:
        return ""


def _elapsed(scratch: Path) -> float:
    try:
        return float((scratch / "elapsed").read_text())
    except (OSError, ValueError):
        return 0.0


def report(results: list[Result], wall: float) -> str:
    lines = [
        "| target | mutants | killed | survived | (incompetent) | score | minutes |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results:
        flag = "" if r.error or r.score >= TARGET_SCORE else " (below target)"
        score = r.error or f"{100 * r.score:.1f}%{flag}"
        lines.append(
            f"| {r.target} | {r.mutants} | {r.killed} | {r.survived} | {r.incompetent} | {score} | "
            f"{r.seconds / 60:.1f} |"
        )
    commits = sorted({r.commit[:12] for r in results if r.commit})
    lines.append(
        f"\nwall time {wall / 60:.1f} min; skipped by the operator/definition filters: "
        f"{sum(r.skipped for r in results)}; commit {', '.join(commits) or 'unknown'}\n"
    )
    for r in results:
        for s in r.survivors:
            lines.append(f"### {r.target}: {s['file']}:{s['line']} ({s['function']}, {s['operator']})\n")
            lines.append("```diff\n" + s["diff"].strip() + "\n```\n")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("targets", nargs="*", help="target names (default: all but the extended ones)")
    p.add_argument("--all", action="store_true", help="include the extended targets (see Target.extended)")
    p.add_argument("--jobs", type=int, default=2, help="targets mutated at the same time (one scratch copy each)")
    p.add_argument("--workdir", type=Path, default=Path(os.environ.get("TMPDIR", "/tmp")) / "voxarena-mutation")
    p.add_argument("--resume", action="store_true", help="go on with interrupted sessions in the work directory")
    p.add_argument("--report-only", action="store_true", help="report the sessions in the work directory, run nothing")
    p.add_argument(
        "--retest-survivors",
        action="store_true",
        help="rerun the surviving mutants of the sessions in the work directory against HEAD's tests",
    )
    p.add_argument("--list", action="store_true")
    args = p.parse_args(argv)
    by_name = {t.name: t for t in TARGETS}
    if args.list:
        for t in TARGETS:
            print(f"{t.name:<11} {' '.join(t.paths):<45} {' '.join(t.tests)}{'  [extended]' if t.extended else ''}")
        return 0
    unknown = [n for n in args.targets if n not in by_name]
    if unknown:
        p.error(f"unknown target(s) {', '.join(unknown)}; see --list")
    chosen = [by_name[n] for n in args.targets] or [t for t in TARGETS if args.all or not t.extended]
    args.workdir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if args.report_only:
        results = []
        for t in chosen:
            if (args.workdir / t.name / "session.sqlite").exists():
                results.append(
                    Result(t.name, seconds=_elapsed(args.workdir / t.name), commit=_commit(args.workdir / t.name))
                )
                _collect(args.workdir / t.name / "session.sqlite", results[-1])
    else:
        # Every target mutates the same commit, HEAD when the run starts, whatever is committed meanwhile.
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True)
        with ThreadPoolExecutor(args.jobs) as pool:
            results = list(
                pool.map(
                    lambda t: run_target(t, args.workdir, commit.stdout.strip(), args.resume, args.retest_survivors),
                    chosen,
                )
            )
    text = report(results, time.perf_counter() - t0)
    (args.workdir / "report.md").write_text(text + "\n")
    (args.workdir / "report.json").write_text(
        json.dumps([{**r.__dict__, "score": r.score} for r in results], indent=2, default=str) + "\n"
    )
    print(text)
    print(f"\nreport: {args.workdir / 'report.md'}")
    return 0 if all(not r.error and r.score >= TARGET_SCORE for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

"""``orchestrator merge SHARD_DIRS... --out RUN``: one run directory from the N shards of a sharded run.

Before anything is written it checks, and a refusal names the shard directory and why:

- every directory is a shard (its run.json says ``shard``) of one protocol identity: the same frozen
  manifest (hash), the same N, the same protocol (the config as a resume compares it:
  ``protocol_view``) and the same services (model name, version, weights, image id);
- shards 0..N-1 are each given exactly once;
- every shard is complete (``status``), unless ``allow_incomplete``;
- each shard's rows are of its own items only, so no row is in two shards, and together the rows are
  the whole run's plan, every planned row once.

Then it writes a normal run directory: the frozen manifest, each table the union of the shards' rows
(their lines as the shards wrote them, sorted by id), the audio hard-linked (copied across file
systems), and run.json (the first shard's, without ``shard``, with every shard's sessions and
``merged_from``). What spans items is then done once over the union, exactly as an unsharded run does
it (``pipeline.across_items``): the fused detectors fitted on the calibration split, then the metrics,
through the scorer as configured (only the scorer is started: the other services' GetInfo is read
from run.json). ``status``, ``report`` and ``compare`` treat the result as any run, and a rerun of the
merge into the same directory (e.g. after the scorer failed) does it again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from google.protobuf import json_format
from pydantic import ValidationError

from voxarena.orchestrator.fleet.fleet import ServiceFleet
from voxarena.orchestrator.metrics.compare import service_differences
from voxarena.orchestrator.metrics.fusion import recorded_calibration_items
from voxarena.orchestrator.run.config import RunConfig, config_differences, protocol_view
from voxarena.orchestrator.run.manifest import ManifestSet
from voxarena.orchestrator.run.pipeline import across_items, now_utc
from voxarena.orchestrator.run.plan import Plan
from voxarena.orchestrator.run.shard import Shard, ShardError
from voxarena.orchestrator.run.status import run_status
from voxarena.orchestrator.store.records import GenerationRecord
from voxarena.orchestrator.store.run_store import RunStore
from voxarena.v1 import detector_pb2, generator_pb2, scorer_pb2

# The tables a shard writes, keyed by id; degradations are keyed "condition|clip".
TABLES = ("generations", "degradations", "detections", "measurements", "streams")
_INFO = {
    "generator": generator_pb2.GeneratorInfo,
    "detector": detector_pb2.DetectorInfo,
    "scorer": scorer_pb2.ScorerInfo,
}


@dataclass
class ShardDir:
    path: Path
    record: dict
    shard: Shard
    manifest_sha256: str  # of its manifest.jsonl's bytes

    @classmethod
    def read(cls, path: Path) -> ShardDir:
        run_json, manifest = path / "run.json", path / "manifest.jsonl"
        if not run_json.exists() or not manifest.exists():
            raise ShardError(f"{path}: not a run directory (no run.json and manifest.jsonl)")
        try:
            record = json.loads(run_json.read_text())
        except ValueError as e:
            raise ShardError(f"{run_json}: not JSON ({e})") from None
        missing = [k for k in ("config", "manifest", "services", "sessions") if k not in record]
        if missing:
            raise ShardError(f"{run_json}: no {', '.join(missing)}: not the run.json of a run")
        shard = Shard.of_record(record)
        if shard is None:
            what = "a merged run" if record.get("merged_from") else "a whole run"
            raise ShardError(f"{path}: not a shard ({what}: its run.json has no shard; run with --shard K/N)")
        return cls(path, record, shard, hashlib.sha256(manifest.read_bytes()).hexdigest())

    def __str__(self) -> str:
        return f"{self.path} (shard {self.shard})"

    def lines(self, table: str) -> dict[str, bytes]:
        """The table's latest line per id, as the shard wrote it (a torn last line is left out)."""
        path = self.path / f"{table}.jsonl"
        data = path.read_bytes() if path.exists() else b""
        out = {}
        for line in data[: data.rfind(b"\n") + 1].splitlines(keepends=True):
            if line.strip():
                out[json.loads(line)["id"]] = line
        return out


def _identity(first: ShardDir, other: ShardDir) -> list[str]:
    """Why ``other`` is not a shard of the same run as ``first`` (nothing when it is)."""
    a, b = first.record, other.record
    out = []
    if other.manifest_sha256 != first.manifest_sha256 or b["manifest"]["sha256"] != a["manifest"]["sha256"]:
        out.append(f"another frozen manifest ({other.manifest_sha256[:12]} vs {first.manifest_sha256[:12]})")
    if other.shard.count != first.shard.count:
        out.append(f"{other.shard.count} shards, not {first.shard.count}")
    changed = config_differences(protocol_view(a["config"]), protocol_view(b["config"]))
    if changed:
        out.append(f"another configuration ({', '.join(changed)} differ)")
    if set(a["services"]) != set(b["services"]):
        out.append(f"other services ({', '.join(sorted(set(a['services']) ^ set(b['services'])))})")
    return out + service_differences(a["services"], b["services"])


def check_shards(shards: list[ShardDir], allow_incomplete: bool) -> None:
    """One protocol identity, shards 0..N-1 each once, each complete (unless ``allow_incomplete``)."""
    first, problems = shards[0], []
    for s in shards[1:]:
        why = _identity(first, s)
        if why:
            problems.append(f"{s}: not a shard of the same run as {first}: {'; '.join(why)}")
    if problems:
        raise ShardError("\n".join(problems))
    n = first.shard.count
    given = Counter(s.shard.index for s in shards)
    for k in sorted(k for k, c in given.items() if c > 1):
        problems.append(
            f"shard {k}/{n} given {given[k]} times: {', '.join(str(s.path) for s in shards if s.shard.index == k)}"
        )
    missing = [f"{k}/{n}" for k in range(n) if k not in given]
    if missing:
        have = ", ".join(str(s) for s in sorted(shards, key=lambda s: s.shard.index))
        problems.append(f"shard {', '.join(missing)} missing: the {n} shards of the run are needed (given: {have})")
    if problems:
        raise ShardError("\n".join(problems))
    if not allow_incomplete:
        for s in shards:
            st = run_status(s.path)
            if not st["complete"]:
                problems.append(f"{s.path}: {st['outcome']['summary']}")
        if problems:
            raise ShardError(
                "\n".join(problems + ["(--allow-incomplete merges them as they are: the run is then incomplete)"])
            )


def _share(s: ShardDir, plan: Plan, rows: dict[str, dict[str, bytes]]) -> dict[str, set[str]]:
    """The ids the shard's plan allows in each table (degradations: of its clips)."""
    gens = {i: GenerationRecord.from_dict(json.loads(line)) for i, line in rows["generations"].items()}
    allowed = plan.service_rows(gens)
    clips = {it.id for it in plan.manifest} | allowed["generations"]
    allowed["degradations"] = {i for i in rows["degradations"] if i.split("|", 1)[-1] in clips}
    return allowed


def union_rows(shards: list[ShardDir], manifest: ManifestSet, allow_incomplete: bool) -> dict[str, dict[str, bytes]]:
    """Every table's lines, the union of the shards', each row of one shard and of its own items only,
    together the whole plan (all of it unless ``allow_incomplete``)."""
    union: dict[str, dict[str, bytes]] = {t: {} for t in TABLES}
    owner: dict[str, Path] = {}
    problems = []
    for s in shards:
        rows = {t: s.lines(t) for t in TABLES}
        allowed = _share(s, Plan.of_record(s.record, manifest), rows)
        for t in TABLES:
            stray = sorted(set(rows[t]) - allowed[t])
            if stray:
                problems.append(f"{s}: {len(stray)} {t} rows outside its share (e.g. {', '.join(stray[:3])})")
            for i in sorted(set(rows[t]) & set(union[t])):
                problems.append(f"{t} row {i} is in two shards: {owner[t + i]} and {s.path}")
            union[t].update(rows[t])
            owner.update({t + i: s.path for i in rows[t]})
    if problems:
        raise ShardError("\n".join(problems[:20]))
    whole = Plan.of_record({**shards[0].record, "shard": None}, manifest)
    gens = {i: GenerationRecord.from_dict(json.loads(line)) for i, line in union["generations"].items()}
    expected = whole.service_rows(gens)
    for t, ids in expected.items():
        extra, missing = sorted(set(union[t]) - ids), sorted(ids - set(union[t]))
        if extra or (missing and not allow_incomplete):
            raise ShardError(
                f"the shards' {t} rows are not the run's plan: {len(extra)} outside it, {len(missing)} missing "
                f"(e.g. {', '.join((extra + missing)[:3])})"
            )
    return union


def _link_audio(shards: list[ShardDir], out: Path) -> int:
    """Hard-link (or copy, across file systems) every shard's stored audio into ``out``; audio is
    content-addressed, so a file already there is the same file. Returns the files added."""
    added = 0
    for s in shards:
        for src in sorted((s.path / "audio").rglob("*.wav")):
            dst = out / src.relative_to(s.path)
            if src.name.startswith(".") or dst.exists():
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(src, dst)
            except OSError:
                shutil.copy2(src, dst)
            added += 1
    return added


def merged_record(shards: list[ShardDir], started: str) -> dict:
    """run.json of the merged run: the first shard's (same protocol, services), without ``shard``, with
    every shard's sessions and where each came from."""
    ordered = sorted(shards, key=lambda s: s.shard.index)
    record = {k: v for k, v in ordered[0].record.items() if k not in ("shard", "ended_at", "fusion")}
    record["started_at"] = min(s.record.get("started_at", started) for s in ordered)
    record["sessions"] = [{**x, "shard": str(s.shard)} for s in ordered for x in s.record.get("sessions", [])]
    record["sessions"].append({"started_at": started, "merge": len(ordered)})
    record["merged_from"] = [
        {
            "shard": str(s.shard),
            "dir": str(s.path.resolve()),
            "items": s.record["shard"].get("items"),
            "git_commit": s.record.get("git_commit"),
            "stack": s.record.get("stack"),
        }
        for s in ordered
    ]
    return record


def _recorded_infos(record: dict) -> dict:
    """Every service's GetInfo as run.json recorded it, as the metric tables read it."""
    return {n: json_format.ParseDict(r["info"], _INFO[r["role"]]()) for n, r in record["services"].items()}


def _prepare_out(out: Path) -> None:
    """``out`` must be new, empty, or an earlier merge (redone: same files rewritten)."""
    if out.exists() and any(out.iterdir()):
        run_json = out / "run.json"
        if not run_json.exists() or not json.loads(run_json.read_text()).get("merged_from"):
            raise ShardError(f"--out {out}: exists and is not an earlier merge; merge into a new directory")


class MergeSteps:
    """Where a merge is, as progress lines show it (stage -> (done, total)): shards read, rows written, metrics."""

    def __init__(self) -> None:
        self.state: dict[str, tuple[int, int]] = {"shards": (0, 0), "rows": (0, 0), "metrics": (0, 1)}

    def snapshot(self) -> dict[str, tuple[int, int]]:
        return dict(self.state)


def merge(
    dirs: list[Path], out: Path, stack: str = "local", allow_incomplete: bool = False, steps: MergeSteps | None = None
) -> dict:
    """Check the shards, write the merged run directory, fuse and compute the metrics once; returns run.json.
    ``steps`` follows the work (``orchestrator merge``'s progress lines)."""
    if not dirs:
        raise ShardError("no shard directories given")
    steps = steps or MergeSteps()
    shards = []
    for d in dirs:
        shards.append(ShardDir.read(d))
        steps.state["shards"] = (len(shards), len(dirs))
    check_shards(shards, allow_incomplete)
    manifest = ManifestSet.from_file(shards[0].path / "manifest.jsonl")
    union = union_rows(shards, manifest, allow_incomplete)
    n_rows = sum(len(rows) for rows in union.values())
    steps.state["rows"] = (0, n_rows)
    try:
        cfg = RunConfig.model_validate(shards[0].record["config"])
    except ValidationError as e:
        raise ShardError(f"{shards[0].path}/run.json: config: {e}") from None
    _prepare_out(out)
    started, t0 = now_utc(), time.perf_counter()
    store = RunStore(out)
    shutil.copyfile(shards[0].path / "manifest.jsonl", store.manifest_path)
    _link_audio(shards, out)
    for t in TABLES:
        tmp = out / f"{t}.jsonl.tmp"
        tmp.write_bytes(b"".join(union[t][i] for i in sorted(union[t])))
        tmp.replace(out / f"{t}.jsonl")
    steps.state["rows"] = (n_rows, n_rows)
    store = RunStore(out)  # reads the tables just written
    record = merged_record(shards, started)
    store.write_json(record)
    # Only the scorer works now; the generators' and detectors' GetInfo is the shards' record of it.
    fleet = ServiceFleet(cfg.model_copy(update={"generators": {}, "detectors": {}}), store.logs_dir, stack)
    fleet.start()
    try:
        fleet.check_metrics(cfg.scorer.metrics)
        fleet.check_scorer_limits()
        fleet.check_unchanged(record)  # the scorer the shards measured with
        plan = Plan.of_record(record, manifest)
        infos = {**_recorded_infos(record), "scorer": fleet.scorer.info}
        calibration = recorded_calibration_items(record, manifest)
        across_items(store, cfg, plan, infos, fleet.scorer.client, calibration, record)
        steps.state["metrics"] = (1, 1)
    finally:
        cpu = fleet.stop()
    record["ended_at"] = now_utc()
    record["sessions"][-1].update(
        ended_at=record["ended_at"],
        wall_seconds=round(time.perf_counter() - t0, 3),
        service_cpu_seconds={k: round(v, 3) for k, v in cpu.items()},
    )
    store.write_json(record)
    store.close()
    return record

"""What must agree between processes, computed in this one: run by ``test_cross_process`` as separate
processes with different ``PYTHONHASHSEED``s, whose outputs must then be equal.

Python salts ``hash()`` of str and bytes per process, and the iteration order of a set of strings follows
it. So a shard assignment, a seed, a hash or an order computed from ``hash()`` (or from a set's order)
agrees within one process, which is where every other test runs it, and differs between the N
orchestrators of a sharded run, a resumed run and the run it resumes, or two runs a ``compare`` puts side
by side. Each probe prints what such a process would write or decide, as JSON.

    python cross_process_probe.py DATASET_CSV WORK [--merge DIR,DIR,..]..

prints ``{"facts": {...}, "merges": [...]}``: every fact below; the tables ``orchestrator merge`` would
write of each ``--merge`` set of shard directories (or its refusal); and leaves in ``WORK/shards`` the
shard directories of a 3-way sharded run as this process makes them.
"""

from __future__ import annotations

import hashlib
import json
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

import numpy as np

from voxarena.codec import AudioClip
from voxarena.orchestrator.metrics.compare import protocol_differences, service_differences
from voxarena.orchestrator.metrics.fusion import calibration_items, split_record
from voxarena.orchestrator.race.report import most_evasive
from voxarena.orchestrator.run.channel import condition_seed
from voxarena.orchestrator.run.config import CalibrationSplitConfig, ChannelStep, DatasetConfig, RunConfig
from voxarena.orchestrator.run.degrade import Degrade
from voxarena.orchestrator.run.importers import build_manifest
from voxarena.orchestrator.run.manifest import ManifestSet
from voxarena.orchestrator.run.merge import TABLES, ShardDir, check_shards, union_rows
from voxarena.orchestrator.run.plan import Plan, reference_items
from voxarena.orchestrator.run.shard import Shard
from voxarena.orchestrator.store.clips import Clip
from voxarena.orchestrator.store.records import GenerationRecord
from voxarena.orchestrator.store.run_store import RunStore

RUN_SEED = 11
GENERATORS = {"gen-b": ["CONVERT", "TTS", "RECONSTRUCT", "CLONE"], "gen-a": ["TTS"]}
TASKS = ["TTS", "CLONE", "RECONSTRUCT", "CONVERT"]
DETECTORS = ["det-y", "det-x"]
CONDITIONS = {
    "noisy": [{"noise_snr_db": 10, "noise": "pink"}, {"gain_db": -3}],
    "white": [{"noise_snr_db": 20}],
}
SHARD_COUNTS = (2, 3, 5)
SHARDS = 3  # the sharded run each process writes


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def run_config(dataset_csv: str) -> RunConfig:
    """A sharded run's config: generators and detectors by address (nothing is started here)."""
    return RunConfig.model_validate(
        {
            "name": "cross-process",
            "dataset": {"kind": "table", "root": dataset_csv},
            "protocol": {
                "seed": RUN_SEED,
                "tasks": TASKS,
                "i2d": {"iterations": 2},
                "calibration_split": {"speaker_fraction": 0.5},
            },
            "generators": {g: {"address": f"{g}:50051"} for g in GENERATORS},
            "detectors": {d: {"address": f"{d}:50051"} for d in DETECTORS},
            "scorer": {"address": "scorer:50051", "metrics": ["rtf"]},
            "conditions": CONDITIONS,
        }
    )


def services() -> dict[str, dict]:
    """run.json's ``services`` as a fleet records them (GetInfo; only what the plan and identity read)."""
    out: dict[str, dict] = {}
    for g, tasks in GENERATORS.items():
        model = {"name": g, "version": "1", "weights_sha256": _sha(g.encode())}
        out[g] = {"role": "generator", "info": {"model": model, "tasks": tasks}}
    for d in DETECTORS:
        model = {"name": d, "version": "1", "weights_sha256": _sha(d.encode()), "metadata": {"calibration": "x"}}
        out[d] = {"role": "detector", "info": {"model": model}}
    return out


def manifest_of(dataset_csv: str) -> ManifestSet:
    return build_manifest(DatasetConfig(kind="table", root=dataset_csv), RUN_SEED)


def plan_of(manifest: ManifestSet, shard: Shard | None = None) -> Plan:
    tasks = {g: set(t) for g, t in GENERATORS.items()}  # GetInfo's tasks: a set, as Plan.of_record makes it
    return Plan.for_run(run_config("unused.csv"), manifest, tasks, shard)


# ------------------------------------------------------------------------------------------ facts
def manifest_facts(manifest: ManifestSet, work: Path) -> dict:
    """The frozen manifest (ids, item seeds, bytes and hash) as an importer makes it."""
    return {
        "sha256": manifest.sha256,
        "items": [[it.id, it.index, it.seed, it.speaker] for it in manifest],
        "corpus_attacks": manifest.corpus_attacks(),
    }


def shard_facts(manifest: ManifestSet, work: Path) -> dict:
    """Which shard owns each item, for several N."""
    return {str(n): [[it.id for it in Shard(k, n).items(manifest)] for k in range(n)] for n in SHARD_COUNTS}


def plan_facts(manifest: ManifestSet, work: Path) -> dict:
    """The plan's order and ids: references, jobs, the rows expected of the whole run and of a shard."""
    plan = plan_of(manifest)
    gens = {i: generation_record({"id": i, "status": "ok"}) for g in plan.generators for i in plan.generation_ids(g)}
    rows = plan.service_rows(gens)
    shard_plan = plan_of(manifest, Shard(1, 3))
    return {
        "references": {k: v.id for k, v in reference_items(manifest).items()},
        "jobs": [[j.generator, j.task, j.item.id, j.reference.id] for j in plan.jobs],
        "detection_ids": plan.detection_ids("det-x", "noisy", gens),
        "service_rows": {t: sorted(ids) for t, ids in rows.items()},
        "shard_generation_ids": [i for g in shard_plan.generators for i in shard_plan.generation_ids(g)],
    }


def seed_facts(manifest: ManifestSet, work: Path) -> dict:
    """The channel conditions' seeds of every clip."""
    return {c: [condition_seed(RUN_SEED, c, it.id) for it in manifest] for c in [*CONDITIONS, "attacked"]}


def degradation_facts(manifest: ManifestSet, work: Path) -> dict:
    """The degraded clips a run stores (seeded noise), content-addressed, and their rows' audio paths."""
    store = RunStore(work / "degraded")
    conditions = {c: [ChannelStep.model_validate(s) for s in steps] for c, steps in CONDITIONS.items()}
    degrade = Degrade(store, conditions, RUN_SEED, retry_failed=False)
    out = {}
    for it in manifest.items[:4]:
        for c in conditions:
            clip = degrade(Clip.of_item(it), c)
            out[f"{c}|{it.id}"] = [store.degradations.get(f"{c}|{it.id}").audio, _sha(clip.samples.tobytes())]
    store.close()
    return out


def attack_facts(manifest: ManifestSet, work: Path) -> dict:
    """An attack's queries and result, seeded from the condition's seed, against a fixed score."""
    from voxarena.attack import Budget, SearchSettings, attack
    from voxarena.orchestrator.store.clips import item_audio

    def score(clips: list[AudioClip]) -> list[float]:  # a deterministic stand-in for a detector
        return [float(np.mean(np.abs(np.diff(c.as_float32())))) for c in clips]

    out = {}
    for it in manifest.items[:2]:
        seed = condition_seed(RUN_SEED, "attacked", it.id)
        result = attack(item_audio(it), score, Budget(30.0, 6.0), SearchSettings(12, 4, seed, 8, True))
        out[it.id] = [_sha(result.clip.samples.tobytes()), _sha(result.log_jsonl().encode()), result.best_index]
    return out


def calibration_facts(manifest: ManifestSet, work: Path) -> dict:
    """The calibration split by speakers (a seeded choice), and what run.json records of it."""
    split = CalibrationSplitConfig(speaker_fraction=0.5)
    chosen = calibration_items(manifest, split, RUN_SEED)
    return {"items": sorted(chosen), "record": split_record(manifest, chosen, split)}


def race_facts(manifest: ManifestSet, work: Path) -> dict:
    """A race's pick among candidates given as a set (tied EERs: the first by name wins)."""
    names = {f"cand-{c}" for c in "qwertyuiop"}
    eers = {("det", g, "clean"): {"eer": 0.1 if g in ("cand-q", "cand-w") else 0.25} for g in names}
    picks = [most_evasive(eers, ["det"], list(names), "clean")]
    picks.append(most_evasive(eers, ["det"], list(names - {"cand-e"}), "clean"))
    return {"picks": picks}


def compare_facts(manifest: ManifestSet, work: Path) -> dict:
    """What ``compare`` says of two runs that differ in services and protocol, in its order."""
    a, b = services(), services()
    for name in b:
        b[name]["info"]["model"]["version"] = "2"
    runs = []
    for k, svc in enumerate((a, b)):
        run = work / f"run-{k}"
        (run / "metrics").mkdir(parents=True, exist_ok=True)
        cfg = run_config(str(work / "m.csv")).model_dump(mode="json")
        cfg["conditions"] = {c: [{"gain_db": k}] for c in ("c-one", "c-two", "c-three", "c-four")}
        record = {"config": cfg, "services": svc, "seeds": {"run_seed": RUN_SEED}}
        record["manifest"] = {"sha256": manifest.sha256, "items": len(manifest)}
        (run / "run.json").write_text(json.dumps(record))
        fingerprint = {f"key-{c}": f"{c}{k}" for c in "abcdefghij"}
        (run / "metrics" / "fingerprint.json").write_text(json.dumps({"fingerprint": fingerprint}))
        runs.append(run)
    return {"services": service_differences(a, b), "protocol": protocol_differences(runs[0], runs[1])}


FACTS: dict[str, Callable[[ManifestSet, Path], object]] = {
    "manifest": manifest_facts,
    "shard": shard_facts,
    "plan": plan_facts,
    "seeds": seed_facts,
    "degradations": degradation_facts,
    "attack": attack_facts,
    "calibration": calibration_facts,
    "race": race_facts,
    "compare": compare_facts,
}


def facts(dataset_csv: str, work: Path) -> dict:
    """Every fact; one that raises is its traceback, so the test shows it."""
    manifest = manifest_of(dataset_csv)
    out: dict[str, object] = {}
    for name, probe in FACTS.items():
        try:
            out[name] = probe(manifest, work)
        except Exception:
            out[name] = {"error": traceback.format_exc()}
    return out


# ------------------------------------------------------------------------------------------ shards
def generation_record(row: dict) -> GenerationRecord:
    """A stand-in generation row as the record the plan reads: its identity from its id."""
    generator, task, item = row["id"].split("|")[:3]
    return GenerationRecord.from_dict({**row, "generator": generator, "task": task, "item": item, "seed": 0})


def write_shards(dataset_csv: str, out: Path, n: int) -> None:
    """The N shard directories as N orchestrators would leave them: each with the frozen manifest, a
    run.json, and one row for every generation, detection and measurement its plan holds."""
    manifest = manifest_of(dataset_csv)
    cfg = run_config(dataset_csv)
    for k in range(n):
        shard = Shard(k, n)
        run = out / f"shard-{k}"
        run.mkdir(parents=True)
        manifest.to_file(run / "manifest.jsonl")
        record = {
            "config": cfg.model_dump(mode="json"),
            "manifest": {"sha256": manifest.sha256, "items": len(manifest)},
            "shard": shard.record(len(shard.items(manifest))),
            "services": services(),
            "sessions": [],
        }
        (run / "run.json").write_text(json.dumps(record))
        plan = Plan.of_record(record, manifest)
        gens = {}
        for g in plan.generators:
            for i in plan.generation_ids(g):
                gens[i] = generation_record({"id": i, "status": "ok", "iteration": 2 if "|i2d" in i else 1})
        rows = plan.service_rows(gens)
        tables = {"generations": [r.to_dict() for r in gens.values()]}
        tables["detections"] = [{"id": i, "status": "ok"} for i in sorted(rows["detections"])]
        tables["measurements"] = [{"id": i, "status": "ok"} for i in sorted(rows["measurements"])]
        for t, table in tables.items():
            (run / f"{t}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in table))


def merged_tables(dataset_csv: str, dirs: list[Path]) -> dict:
    """The checks of ``orchestrator merge`` and the tables it writes (each the sorted union of the
    shards' lines), or the merge's refusal."""
    shards = [ShardDir.read(d) for d in dirs]
    try:
        check_shards(shards, allow_incomplete=True)  # completeness: union_rows below, against the plan
        union = union_rows(shards, manifest_of(dataset_csv), allow_incomplete=False)
    except ValueError as e:
        return {"refused": str(e)}
    return {t: _sha(b"".join(union[t][i] for i in sorted(union[t]))) for t in TABLES}


def main(argv: list[str]) -> None:
    dataset_csv, work = argv[0], Path(argv[1])
    merges = [[Path(d) for d in argv[k + 1].split(",")] for k in range(2, len(argv)) if argv[k] == "--merge"]
    write_shards(dataset_csv, work / "shards", SHARDS)
    out = {"facts": facts(dataset_csv, work), "merges": [merged_tables(dataset_csv, dirs) for dirs in merges]}
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])

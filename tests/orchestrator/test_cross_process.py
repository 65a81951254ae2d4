"""What must agree between processes does, whatever each process's ``PYTHONHASHSEED``.

The N orchestrators of a sharded run, the merge after them, a resumed run and the run it resumes, two
runs ``compare`` puts side by side: each is its own process, and Python salts ``hash()`` of strings per
process (a set of strings iterates in that order too). A shard assignment, a seed, a hash or an order
taken from ``hash()`` agrees within a process, where every other test runs, and nowhere else. So
``cross_process_probe.py`` computes each such fact in three processes with PYTHONHASHSEED 1, 2 and 3,
and these tests compare them: which shard owns an item; the merge of shards written by different
processes; the frozen manifest (item seeds, hash); the plan's order and ids; the channel conditions'
seeds and the degraded clips' bytes and content addresses; an attack's queries; the calibration split;
a race's pick; ``compare``'s findings in their order.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = Path(__file__).with_name("cross_process_probe.py")
HASH_SEEDS = ("1", "2", "3")


def _probe(hash_seed: str, dataset: Path, work: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.Popen(
        [sys.executable, str(PROBE), str(dataset), str(work), *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _result(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def probed(tmp_path_factory, synthetic_dataset_factory) -> dict:
    """Each process's facts, and process 3's merges of shard directories written by processes 1 and 2."""
    tmp = tmp_path_factory.mktemp("cross-process")
    dataset = synthetic_dataset_factory(tmp / "dataset", speakers=10, clips=3)
    work = {s: tmp / f"hash-seed-{s}" for s in HASH_SEEDS}
    first = [_probe(s, dataset, work[s]) for s in HASH_SEEDS[:2]]  # in parallel
    results = {s: _result(p) for s, p in zip(HASH_SEEDS[:2], first)}
    one, two, three = (work[s] / "shards" for s in HASH_SEEDS)
    merges = {
        "1, 2, 1": [one / "shard-0", two / "shard-1", one / "shard-2"],
        "2, 1, 2": [two / "shard-0", one / "shard-1", two / "shard-2"],
        "3 alone": [three / f"shard-{k}" for k in range(3)],
    }
    args = [a for dirs in merges.values() for a in ("--merge", ",".join(map(str, dirs)))]
    results["3"] = _result(_probe("3", dataset, work["3"], *args))
    return {"facts": {s: r["facts"] for s, r in results.items()}, "merges": dict(zip(merges, results["3"]["merges"]))}


def _same_in_every_process(probed: dict, fact: str) -> object:
    values = {s: f[fact] for s, f in probed["facts"].items()}
    for s, v in values.items():
        assert not (isinstance(v, dict) and "error" in v), f"PYTHONHASHSEED={s}: {fact}: {v['error']}"
    first = values[HASH_SEEDS[0]]
    for s in HASH_SEEDS[1:]:
        assert values[s] == first, f"{fact}: PYTHONHASHSEED={s} differs from PYTHONHASHSEED={HASH_SEEDS[0]}"
    return first


def test_every_process_gives_an_item_to_the_same_shard(probed):
    owned = _same_in_every_process(probed, "shard")
    manifest = [row[0] for row in probed["facts"]["1"]["manifest"]["items"]]
    for n, shards in owned.items():
        assert len(shards) == int(n)
        assert sorted(i for s in shards for i in s) == sorted(manifest), n  # each item in one shard
        assert all(shards), n  # 30 items: no shard of 2, 3 or 5 is empty


def test_shards_written_by_different_processes_merge_into_the_same_run(probed):
    merges = probed["merges"]
    for name, tables in merges.items():
        assert "refused" not in tables, f"merge of shards from processes {name}: {tables.get('refused')}"
    assert merges["1, 2, 1"] == merges["2, 1, 2"] == merges["3 alone"]


@pytest.mark.parametrize(
    "fact",
    [
        "manifest",  # item ids, item seeds (run seed + index), the manifest's bytes and hash
        "plan",  # references, jobs (tasks from a GetInfo set), expected ids
        "seeds",  # channel conditions' seeds
        "degradations",  # seeded noise: the clips' bytes and content-addressed paths
        "attack",  # an attack's perturbation and search, seeded from the condition's seed
        "calibration",  # the seeded speaker split and run.json's record of it
        "race",  # the pick among tied candidates given as a set
        "compare",  # compare's differences, in their order
    ],
)
def test_every_process_computes_the_same(probed, fact):
    _same_in_every_process(probed, fact)


def test_the_probed_facts_are_not_trivially_equal(probed):
    """The facts compared above carry what they claim to: distinct seeds, a real split, the tie broken by
    name, compare's findings (so an empty or constant answer does not pass for agreement)."""
    facts = probed["facts"]["1"]
    seeds = facts["seeds"]
    assert len({s for values in seeds.values() for s in values}) == 3 * 30
    assert len({tuple(v) for v in facts["degradations"].values()}) == len(facts["degradations"]) == 8
    assert facts["calibration"]["record"]["calibration"]["speakers"] == 5
    assert facts["race"]["picks"] == ["cand-e", "cand-i"]
    assert len(facts["compare"]["services"]) == 4 and len(facts["compare"]["protocol"]) >= 5
    assert [j[1] for j in facts["plan"]["jobs"][:1]] == ["TTS"] and len(facts["plan"]["shard_generation_ids"]) > 0

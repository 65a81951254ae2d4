"""Sharded runs and their merge (``--shard K/N``, ``orchestrator merge``): an unsharded run, the same
config run as 2 and as 3 shards and merged, against the test-double services (two generators, I2D,
a channel condition, two detectors and their fusion on a calibration split). The services are
started once for the module and reached by address by every run, as N orchestrators share a stack.

Timing columns: what comes from wall times differs between any two runs, sharded or not: ``rtf``
(the scorer's real-time factor, from each generation's timing) with its interval, ``rtf_ci_low`` and
``rtf_ci_high``, in ``generator_metrics*.csv``, and the rows of metric ``rtf`` (``1-rtf`` once
oriented) in ``i2d_iterations.csv`` and ``i2d_aggregates.csv``. The generator composites of
``composite_scores.csv`` (``tts``, ``reconstruction``) weigh ``rtf`` in, so they count as timing too.
Every other byte of every ``metrics/*.csv`` must be the same, and a table without timing is compared
byte for byte.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from voxarena.orchestrator.cli.app import app
from voxarena.orchestrator.fleet.fleet import RunError
from voxarena.orchestrator.fleet.local_services import LocalService
from voxarena.orchestrator.metrics.compare import protocol_differences
from voxarena.orchestrator.run.config import load_config
from voxarena.orchestrator.run.manifest import ManifestSet
from voxarena.orchestrator.run.merge import TABLES, merge
from voxarena.orchestrator.run.pipeline import Arena
from voxarena.orchestrator.run.plan import Plan
from voxarena.orchestrator.run.shard import Shard, ShardError
from voxarena.orchestrator.run.status import run_status
from voxarena.orchestrator.store.records import GenerationRecord
from voxarena.orchestrator.store.run_store import read_records

SERVICES = {
    "dummy-generator": (None, []),
    "dummy-cloner": (None, []),
    "dummy-detector": (None, []),
    "raw-detector": ("voxarena.services.testing.raw_faulty_services", ["--role", "detector", "--fault", "none"]),
    "scorer": (None, []),
}
TIMING_COLUMNS = ("rtf", "rtf_ci_low", "rtf_ci_high")
TIMING_METRICS = ("rtf", "1-rtf")  # rows of the I2D tables
TIMING_COMPOSITES = ("tts", "reconstruction")


@pytest.fixture(scope="module")
def addresses(tmp_path_factory):
    logs = tmp_path_factory.mktemp("service-logs")
    started = {n: LocalService(n, module, logs / f"{n}.log", args) for n, (module, args) in SERVICES.items()}
    try:
        for svc in started.values():
            svc.start()
        yield {n: svc.wait_ready(300) for n, svc in started.items()}
    finally:
        for svc in started.values():
            svc.stop()


def write_config(path: Path, dataset: dict, addresses: dict, **changes) -> Path:
    cfg = {
        "name": "sharded",
        "dataset": {**dataset, "max_items": 8},
        "protocol": {
            "seed": 11,
            "tasks": ["TTS", "CLONE"],
            "i2d": {"iterations": 2},
            "calibration_split": {"speaker_fraction": 0.5},
        },
        "generators": {"dummy-generator": {"address": addresses["dummy-generator"]}},
        "detectors": {
            "dummy-detector": {"address": addresses["dummy-detector"]},
            "raw-detector": {"address": addresses["raw-detector"]},
            "fused": {"fusion": {"members": ["dummy-detector", "raw-detector"]}},
        },
        "scorer": {"address": addresses["scorer"], "metrics": ["rtf", "psnr"], "bootstrap_resamples": 20},
        "conditions": {"noisy": [{"noise_snr_db": 5}]},
        "execution": {"deadline_seconds": 300, "retries": 2, "backoff_seconds": 0.05, "detector_batch_size": 4},
    }
    cfg["generators"]["dummy-cloner"] = {"address": addresses["dummy-cloner"]}
    for key, value in changes.items():
        node = cfg
        *parents, last = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(cfg))
    return path


def run(config: Path, out: Path, shard: Shard | None = None) -> Path:
    Arena(load_config(config), out, config_file=config, progress=False, shard=shard).run()
    return out


@pytest.fixture(scope="module")
def runs(tmp_path_factory, synthetic_dataset, addresses) -> dict:
    """The unsharded run, its 2 and 3 shards, and the merges (2 by the command line, 3 by the function)."""
    tmp = tmp_path_factory.mktemp("sharded")
    config = write_config(tmp / "config.yaml", synthetic_dataset, addresses)
    out = {"config": config, "whole": run(config, tmp / "whole")}
    out[2] = [run(config, tmp / f"shard-{k}-of-2", Shard(k, 2)) for k in range(2)]
    out[3] = [run(config, tmp / f"shard-{k}-of-3", Shard(k, 3)) for k in range(2)]
    last = tmp / "shard-2-of-3"  # one by the command line
    ran = CliRunner().invoke(app, ["run", str(config), "--shard", "2/3", "--out", str(last), "--no-progress"])
    assert ran.exit_code == 0, ran.output
    assert ran.output.strip().splitlines()[-1].startswith("shard 2/3 complete: merge the 3 shards: "), ran.output
    items = json.loads((last / "run.json").read_text())["shard"]["items"]
    assert f", shard 2/3: {items} of them" in " ".join(ran.output.split()), ran.output
    out[3].append(last)
    merged = CliRunner().invoke(app, ["merge", *map(str, out[2]), "--out", str(tmp / "merged-2")])
    assert merged.exit_code == 0, merged.output
    assert merged.output.strip().splitlines()[-1] == "complete"
    out["merged", 2] = tmp / "merged-2"
    merge(out[3], tmp / "merged-3")
    out["merged", 3] = tmp / "merged-3"
    return out


def without_timing(path: Path) -> tuple[str, bool]:
    """The CSV without its timing columns and rows, and whether it had any."""
    text = path.read_text()
    rows = list(csv.reader(io.StringIO(text)))
    header = rows[0]
    keep = [i for i, c in enumerate(header) if c not in TIMING_COLUMNS]
    if "metric" in header:
        rows = [r for r in rows if r[header.index("metric")] not in TIMING_METRICS]
    if path.name == "composite_scores.csv":
        rows = [r for r in rows if r[0] not in TIMING_COMPOSITES]
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([r[i] for i in keep] for r in rows)
    return out.getvalue(), out.getvalue() != text


@pytest.mark.parametrize("n", [2, 3])
def test_merged_shards_have_the_metrics_of_the_unsharded_run(runs, n):
    whole, merged = runs["whole"] / "metrics", runs["merged", n] / "metrics"
    tables = sorted(p.name for p in whole.glob("*.csv"))
    assert sorted(p.name for p in merged.glob("*.csv")) == tables
    assert {"detection_metrics.csv", "generator_metrics.csv", "i2d_iterations.csv"} <= set(tables)
    timed = []
    for name in tables:
        (a, a_timed), (b, b_timed) = without_timing(whole / name), without_timing(merged / name)
        assert b == a and a_timed == b_timed, name
        if a_timed:
            timed.append(name)
        else:
            assert (merged / name).read_bytes() == (whole / name).read_bytes(), name
    assert "detection_metrics.csv" not in timed and "generator_metrics.csv" in timed
    for name in ("fingerprint.json", "coverage.json"):
        assert (merged / name).read_bytes() == (whole / name).read_bytes(), name
    # the timing columns are there, with values
    gen = list(csv.DictReader(io.StringIO((merged / "generator_metrics.csv").read_text())))
    assert gen and all(float(r["rtf"]) > 0 for r in gen)


def _ids(table: Path) -> set[str]:
    """The ids of a table's rows; none when the run never wrote to it (a run without streams)."""
    return {json.loads(line)["id"] for line in table.read_text().splitlines()} if table.exists() else set()


@pytest.mark.parametrize("n", [2, 3])
def test_the_shards_split_the_items_and_their_union_is_the_plan_once(runs, n):
    shards, merged = runs[n], runs["merged", n]
    manifest = ManifestSet.from_file(runs["whole"] / "manifest.jsonl")
    owned = [{it.id for it in Shard(k, n).items(manifest)} for k in range(n)]
    assert sum(map(len, owned)) == len(manifest) == len(set().union(*owned))
    seen: dict[str, set[str]] = {t: set() for t in TABLES}
    for k, shard in enumerate(shards):
        record = json.loads((shard / "run.json").read_text())
        assert record["shard"]["index"] == k and record["shard"]["count"] == n
        assert (shard / "manifest.jsonl").read_bytes() == (runs["whole"] / "manifest.jsonl").read_bytes()
        for t in TABLES:
            ids = _ids(shard / f"{t}.jsonl")
            assert not ids & seen[t], t  # no row in two shards
            seen[t] |= ids
        items = {json.loads(line)["item"] for line in (shard / "detections.jsonl").read_text().splitlines()}
        assert items == owned[k]  # every detection of an item is in the item's shard
    whole_ids: dict[str, set[str]] = {}
    for t in TABLES:
        whole_ids[t] = _ids(runs["whole"] / f"{t}.jsonl")
        merged_ids = _ids(merged / f"{t}.jsonl")
        assert merged_ids == whole_ids[t], t  # fused rows included: made once, at merge
        if t != "detections":
            assert seen[t] == whole_ids[t], t
    fused = {i for i in whole_ids["detections"] if i.startswith("fused")}
    assert fused and seen["detections"] == whole_ids["detections"] - fused
    gens = read_records(merged / "generations.jsonl", GenerationRecord)
    plan = Plan.of_record(json.loads((merged / "run.json").read_text()), manifest)
    assert plan.service_rows(gens)["detections"] == seen["detections"]
    st = run_status(merged)
    assert st["complete"] and st["shard"] is None and all(r["expected"] == r["done"] for r in st["coverage"])


def test_a_shard_does_the_per_item_work_only_and_says_how_to_merge(runs):
    shard = runs[2][1]
    assert not list((shard / "metrics").glob("*.csv")) and not (shard / "metrics" / "fingerprint.json").exists()
    record = json.loads((shard / "run.json").read_text())
    whole = json.loads((runs["whole"] / "run.json").read_text())
    assert record["manifest"] == whole["manifest"] and "fusion" not in record and "fusion" in whole
    assert not any(json.loads(x)["detector"] == "fused" for x in (shard / "detections.jsonl").read_text().splitlines())
    shown = CliRunner().invoke(app, ["status", str(shard)])
    assert shown.exit_code == 0, shown.output
    assert "shard 1/2" in shown.output
    assert (
        shown.output.strip()
        .splitlines()[-1]
        .startswith(f"shard 1/2 complete: merge the 2 shards: `orchestrator merge {shard} DIR0 --out RUN`")
    )
    merged = json.loads((runs["merged", 2] / "run.json").read_text())
    assert [m["shard"] for m in merged["merged_from"]] == ["0/2", "1/2"] and "shard" not in merged
    assert merged["fusion"] == whole["fusion"]
    assert protocol_differences(runs["whole"], runs["merged", 2]) == []  # compare-check: the same protocol


# ------------------------------------------------------------------------------------------- refusals
def test_a_missing_shard_is_refused_naming_it(runs, tmp_path):
    with pytest.raises(
        ShardError,
        match=r"shard 1/3 missing: the 3 shards of the run are needed "
        r"\(given: .*shard-0-of-3 \(shard 0/3\), .*shard-2-of-3 \(shard 2/3\)\)",
    ):
        merge([runs[3][0], runs[3][2]], tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_a_duplicated_shard_is_refused_naming_both_directories(runs, tmp_path):
    copy = tmp_path / "copy-of-0"
    shutil.copytree(runs[2][0], copy)
    with pytest.raises(ShardError, match=rf"shard 0/2 given 2 times: {runs[2][0]}, {copy}"):
        merge([runs[2][0], copy, runs[2][1]], tmp_path / "m")


def test_shards_of_two_different_sets_are_refused(runs, tmp_path):
    with pytest.raises(
        ShardError, match=r"shard-1-of-3 \(shard 1/3\): not a shard of the same run as .*: 3 shards, not 2"
    ):
        merge([runs[2][0], runs[3][1]], tmp_path / "m")


def test_a_shard_of_another_config_is_refused_naming_it_and_the_keys(runs, tmp_path, synthetic_dataset, addresses):
    other = write_config(
        tmp_path / "other.yaml",
        synthetic_dataset,
        addresses,
        **{"dataset.max_items": 4, "protocol.tasks": ["TTS"], "protocol.i2d": None},
    )
    foreign = run(other, tmp_path / "foreign", Shard(1, 2))
    with pytest.raises(ShardError) as e:
        merge([runs[2][0], foreign], tmp_path / "m")
    assert str(e.value).startswith(f"{foreign} (shard 1/2): not a shard of the same run as {runs[2][0]} (shard 0/2): ")
    assert "another frozen manifest" in str(e.value)
    assert "another configuration (dataset.max_items, protocol.i2d, protocol.tasks differ)" in str(e.value)


def test_a_whole_run_is_not_a_shard(runs, tmp_path):
    with pytest.raises(ShardError, match=rf"{runs['whole']}: not a shard \(a whole run: its run.json has no shard"):
        merge([runs["whole"], runs[2][1]], tmp_path / "m")
    with pytest.raises(ShardError, match=r"not a shard \(a merged run"):
        merge([runs["merged", 2]], tmp_path / "m")


def test_an_incomplete_shard_is_refused_with_its_counts(runs, tmp_path):
    cut = tmp_path / "cut"
    shutil.copytree(runs[2][1], cut)
    lines = (cut / "detections.jsonl").read_text().splitlines(keepends=True)
    (cut / "detections.jsonl").write_text("".join(lines[:-3]))
    with pytest.raises(
        ShardError,
        match=rf"{cut}: shard 1/2 incomplete: 3 pending: rerun `orchestrator run CONFIG --shard 1/2 --out {cut}`",
    ):
        merge([runs[2][0], cut], tmp_path / "m")


def test_allow_incomplete_merges_what_there_is_into_an_incomplete_run(runs, tmp_path):
    cut = tmp_path / "cut"
    shutil.copytree(runs[2][1], cut)
    # Three rows of one member: the order of the file is the order calls ended, so its last lines may
    # hold both members' rows of one clip, whose fused row is then pending too (nothing to fuse).
    lines = (cut / "detections.jsonl").read_text().splitlines(keepends=True)
    dropped = [i for i, line in enumerate(lines) if json.loads(line)["detector"] == "dummy-detector"][-3:]
    (cut / "detections.jsonl").write_text("".join(line for i, line in enumerate(lines) if i not in dropped))
    merge([runs[2][0], cut], tmp_path / "m", allow_incomplete=True)
    st = run_status(tmp_path / "m")
    assert st["outcome"]["exit_code"] == 3 and st["outcome"]["pending"] == 3 and st["metrics_written"]
    assert (
        st["outcome"]["summary"].startswith("incomplete: ")
        and "3 pending: rerun `orchestrator run`" in (st["outcome"]["summary"])
    )
    # a fused row whose member's row is missing is a failed fused row, as in any run
    failed = [r for r in st["coverage"] if r["failed"]]
    assert all(r["service"].startswith("fused") for r in failed) and sum(r["failed"] for r in failed) == 3
    assert all(
        reason == "member dummy-detector has no row for it" for r in failed for reason in r["failure_reasons"]
    ), failed


def test_a_row_of_another_shard_is_refused(runs, tmp_path):
    stray = tmp_path / "stray"
    shutil.copytree(runs[2][0], stray)
    other = (runs[2][1] / "generations.jsonl").read_text().splitlines(keepends=True)[0]
    with open(stray / "generations.jsonl", "a") as f:
        f.write(other)
    row_id = json.loads(other)["id"]
    with pytest.raises(
        ShardError,
        match=rf"{stray} \(shard 0/2\): 1 generations rows outside its share \(e\.g\. {row_id.replace('|', '[|]')}\)",
    ):
        merge([stray, runs[2][1]], tmp_path / "m")


def test_a_shard_resumes_as_the_same_shard_only(runs):
    config = load_config(runs["config"])
    record = json.loads((runs[2][0] / "run.json").read_text())
    Arena(config, runs[2][0], progress=False, shard=Shard(0, 2))._check_resume(record)
    for shard in (Shard(1, 2), None, Shard(0, 3)):
        with pytest.raises(RunError, match=r"was run as shard 0/2; resume it with --shard 0/2, or use a new --out"):
            Arena(config, runs[2][0], progress=False, shard=shard)._check_resume(record)
    whole = json.loads((runs["whole"] / "run.json").read_text())
    with pytest.raises(RunError, match=r"was run unsharded; resume it with no --shard, or use a new --out"):
        Arena(config, runs["whole"], progress=False, shard=Shard(0, 2))._check_resume(whole)
    merged = json.loads((runs["merged", 2] / "run.json").read_text())
    with pytest.raises(RunError, match=r"was run unsharded; .*; a merged run is not a shard"):
        Arena(config, runs["merged", 2], progress=False, shard=Shard(0, 2))._check_resume(merged)
    Arena(config, runs["merged", 2], progress=False)._check_resume(merged)  # a merged run resumes as a run


@pytest.mark.parametrize(
    "spec, message",
    [
        ("3/2", "--shard 3/2: K must be in 0..N-1 (0..1; K is 0-based)"),
        ("2/2", "--shard 2/2: K must be in 0..N-1 (0..1; K is 0-based)"),
        ("-1/2", "--shard -1/2: K must be in 0..N-1 (0..1; K is 0-based)"),
        ("0/0", "--shard 0/0: N must be 1 or more"),
        ("1", "--shard 1: expected K/N, e.g. 0/4 (K in 0..N-1)"),
        ("a/b", "--shard a/b: expected K/N, e.g. 0/4 (K in 0..N-1)"),
    ],
)
def test_a_bad_shard_is_refused(spec, message, tmp_path):
    with pytest.raises(ShardError) as e:
        Shard.parse(spec)
    assert str(e.value) == message
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"dataset": {"kind": "table", "root": "m.csv"}, "generators": {"g": {}}}))
    refused = CliRunner().invoke(app, ["run", str(config), "--shard", spec, "--out", str(tmp_path / "r")])
    assert refused.exit_code == 2 and message in " ".join(refused.output.split()), refused.output
    assert not (tmp_path / "r").exists()


def test_assignment_is_by_item_id_alone():
    ids = [f"item-{i}" for i in range(300)]
    for n in (1, 2, 3, 7):
        owners = [[k for k in range(n) if Shard(k, n).owns(i)] for i in ids]
        assert all(len(o) == 1 for o in owners)  # each item in exactly one shard
        counts = [sum(o == [k] for o in owners) for k in range(n)]
        assert min(counts) > 300 / n * 0.6  # spread, not all in one
    # independent of order and of the other items: sha256("item-0") mod 2
    import hashlib

    assert Shard(int(hashlib.sha256(b"item-0").hexdigest(), 16) % 2, 2).owns("item-0")


def test_a_merge_off_a_terminal_prints_its_progress(runs, tmp_path):
    merged = CliRunner().invoke(
        app,
        ["merge", *map(str, runs[2]), "--out", str(tmp_path / "m"), "--progress-every", "0.05", "--log-format", "json"],
    )
    assert merged.exit_code == 0, merged.output
    events = [json.loads(line) for line in merged.output.splitlines() if line.startswith('{"elapsed')]
    assert events and events[-1]["stages"]["shards"] == {"done": 2, "total": 2}
    rows = events[-1]["stages"]["rows"]
    assert rows["done"] == rows["total"] > 0 and events[-1]["stages"]["metrics"] == {"done": 1, "total": 1}

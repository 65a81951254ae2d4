"""What a resume checks, called directly and without services: the frozen manifest
(``Arena.freeze_manifest``), the run's protocol (``Arena._check_resume`` over ``protocol_view`` and
``config_differences``) and each service's model identity and image id (``ServiceFleet.check_unchanged``).

The end-to-end refusals (a real run, then a resume) are in test_resume.py and test_pipeline.py; these
pin the same checks on hand-made inputs in well under a second, and serve as the mutation target's
selection (tests/mutation/run.py, ``resume``). Expected messages and dotted keys are written out here.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from voxarena.orchestrator.fleet.fleet import RunError, Service, ServiceFleet
from voxarena.orchestrator.run.config import RunConfig, config_differences, protocol_view
from voxarena.orchestrator.run.pipeline import Arena
from voxarena.v1 import common_pb2, generator_pb2

# Listed in file order, which is not sorted order: a refusal names changed ids sorted.
IDS = ["z1", "y1", "x1", "w1", "v1", "u1", "t1"]


@pytest.fixture
def dataset(tmp_path, synthetic_dataset_factory) -> Path:
    rows = [{"id": i, "speaker": f"s{n % 3}", "seconds": 0.25} for n, i in enumerate(IDS)]
    return synthetic_dataset_factory(tmp_path / "data", rows)


def config(table: Path, **changes) -> RunConfig:
    data = {
        "name": "resume",
        "dataset": {"kind": "table", "root": str(table), "max_items": 5},
        "protocol": {"seed": 11, "tasks": ["TTS"]},
        "generators": {"dummy-generator": {"voice": "a"}},
        "detectors": {"dummy-detector": {}},
        "scorer": {"metrics": ["rtf"]},
    }
    for key, value in changes.items():
        node = data
        *parents, last = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    return RunConfig.model_validate(data)


def refusal(ids: str) -> str:
    return rf"differs from the frozen manifest \(e\.g\. {re.escape(ids)}\); resume with the same inputs"


# ------------------------------------------------------------------------------------ the frozen manifest
def test_the_first_run_freezes_the_manifest_and_a_resume_reads_it(dataset, tmp_path):
    out = tmp_path / "run"
    first = Arena(config(dataset), out, progress=False).freeze_manifest()
    frozen = (out / "manifest.jsonl").read_bytes()
    assert [i.id for i in first] == IDS[:5] and [i.seed for i in first] == [11, 12, 13, 14, 15]
    assert hashlib.sha256(frozen).hexdigest() == first.sha256 and frozen.count(b"\n") == 5
    again = Arena(config(dataset), out, progress=False).freeze_manifest()
    assert again.items == first.items and (out / "manifest.jsonl").read_bytes() == frozen


def test_a_changed_clip_is_refused_naming_it(dataset, tmp_path):
    out = tmp_path / "run"
    Arena(config(dataset), out, progress=False).freeze_manifest()
    frozen = (out / "manifest.jsonl").read_bytes()
    clip = dataset.parent / "audio" / "x1.wav"
    x, rate = sf.read(clip, dtype="int16")
    sf.write(clip, (x // 2).astype(np.int16), rate, subtype="PCM_16")
    with pytest.raises(RunError, match=refusal("x1")):
        Arena(config(dataset), out, progress=False).freeze_manifest()
    assert (out / "manifest.jsonl").read_bytes() == frozen  # never rewritten


def test_added_or_removed_items_are_named_sorted(dataset, tmp_path):
    out = tmp_path / "run"
    Arena(config(dataset), out, progress=False).freeze_manifest()
    with pytest.raises(RunError, match=refusal("t1, u1")):  # two more items: u1, t1 in file order
        Arena(config(dataset, **{"dataset.max_items": 7}), out, progress=False).freeze_manifest()
    with pytest.raises(RunError, match=refusal("v1, w1")):  # two fewer
        Arena(config(dataset, **{"dataset.max_items": 3}), out, progress=False).freeze_manifest()


def test_a_changed_run_seed_changes_every_item_and_five_are_named(dataset, tmp_path):
    out = tmp_path / "run"
    Arena(config(dataset, **{"dataset.max_items": 7}), out, progress=False).freeze_manifest()
    with pytest.raises(RunError, match=refusal("z1, y1, x1, w1, v1")):  # in manifest order, five of seven
        Arena(config(dataset, **{"dataset.max_items": 7, "protocol.seed": 12}), out, progress=False).freeze_manifest()


# ------------------------------------------------------------------------------------ the protocol
def test_a_resume_accepts_the_same_protocol_and_new_transport(dataset, tmp_path):
    arena = Arena(config(dataset), tmp_path / "run", progress=False)
    arena._check_resume(None)  # a new run
    arena._check_resume({"config": config(dataset).model_dump(mode="json")})
    moved = config(
        dataset,
        **{
            "generators.dummy-generator.address": "10.0.0.1:50051",
            "generators.dummy-generator.concurrency": 8,
            "execution.deadline_seconds": 5,
            "execution.retries": 0,
        },
    )
    arena._check_resume({"config": moved.model_dump(mode="json")})


@pytest.mark.parametrize(
    "changes, named",
    [
        ({"protocol.seed": 12}, "protocol.seed"),
        ({"generators.dummy-generator.voice": "b"}, "generators.dummy-generator.voice"),
        ({"dataset.max_items": 4, "scorer.metrics": ["rtf", "wer"]}, "dataset.max_items, scorer.metrics"),
        ({"generators": {"other": {}}}, "generators.dummy-generator, generators.other"),
    ],
)
def test_a_resume_refuses_another_protocol_naming_the_keys(dataset, tmp_path, changes, named):
    arena = Arena(config(dataset), tmp_path / "run", progress=False)
    previous = {"config": config(dataset, **changes).model_dump(mode="json")}
    with pytest.raises(RunError, match=rf"was run with a different configuration \({re.escape(named)} changed;"):
        arena._check_resume(previous)


def test_protocol_view_drops_transport_only():
    dump = {
        "name": "n",
        "execution": {"retries": 2},
        "generators": {
            "g": {"address": "h:1", "tls": {"ca": "c"}, "token_env": "T", "concurrency": 2, "voice": "v", "args": []},
        },
        "scorer": {"address": "s:1", "batch_size": 8, "metrics": ["rtf"]},
    }
    assert protocol_view(dump) == {
        "name": "n",
        "generators": {"g": {"voice": "v", "args": []}},
        "detectors": {},
        "scorer": {"metrics": ["rtf"]},
    }
    assert protocol_view({"name": "n", "detectors": {"d": {"address": "a", "module": "m"}}}) == {
        "name": "n",
        "generators": {},
        "detectors": {"d": {"module": "m"}},
    }


def test_of_a_container_only_what_its_model_sees_is_protocol():
    def entry(**container) -> dict:
        return {"dummy-generator": {"image": "acme/g:1", "container": container, "voice": "v"}}

    limits = {"cpus": 2.0, "memory": "3g", "pids": 256, "port": 50051, "user": "10001:10001", "pull": False}
    assert protocol_view({"generators": entry(**limits, env={"A": "1"}, model_dir="/m")}) == {
        "generators": {"dummy-generator": {"container": {"env": {"A": "1"}, "model_dir": "/m"}, "voice": "v"}},
        "detectors": {},
    }
    # Limits only (or unset env and model_dir) is the same protocol as no container block at all.
    assert protocol_view({"generators": entry(**limits, env={}, model_dir=None)}) == {
        "generators": {"dummy-generator": {"voice": "v"}},
        "detectors": {},
    }
    assert protocol_view({"scorer": {"image": "acme/s:2", "container": None, "metrics": []}}) == {
        "generators": {},
        "detectors": {},
        "scorer": {"metrics": []},
    }


def test_config_differences_are_dotted_sorted_and_include_added_and_removed_keys():
    old = {"b": {"y": 1, "x": [1, 2], "gone": 0}, "a": 1, "same": {"k": "v"}}
    new = {"b": {"y": 2, "x": [1, 2], "new": {"deep": 1}}, "a": {"now": "a dict"}, "same": {"k": "v"}}
    assert config_differences(old, new) == ["a", "b.gone", "b.new", "b.y"]
    assert config_differences(old, old) == []
    assert config_differences(1, 2, "x.y.") == ["x.y"] and config_differences(1, 1, "x.") == []


# ------------------------------------------------------------------------------------ the services
def service(name: str = "gen", version: str = "1.0.0", weights: str = "a" * 64, model: str = "m") -> Service:
    info = generator_pb2.GeneratorInfo(
        model=common_pb2.ModelInfo(name=model, version=version, weights_sha256=weights, licence="MIT")
    )
    return Service(name, "generator", None, info=info)  # type: ignore[arg-type]


def record(version: str = "1.0.0", weights: str = "a" * 64, model: str = "m") -> dict:
    return {"role": "generator", "info": {"model": {"name": model, "version": version, "weights_sha256": weights}}}


class Image:
    """What the fleet keeps of an image entry's container, as far as run.json is concerned."""

    def __init__(self, image_id: str, ref: str = "acme/gen:1.0") -> None:
        self.image_id, self.ref = image_id, ref

    def record(self) -> dict:
        return {"ref": self.ref, "id": self.image_id, "repo_digests": []}


@pytest.fixture
def fleet(dataset, tmp_path) -> ServiceFleet:
    fleet = ServiceFleet(config(dataset), tmp_path / "logs")
    fleet.services["gen"] = service()
    return fleet


def test_the_same_models_resume(fleet):
    fleet.check_unchanged(None)
    fleet.check_unchanged({})
    # The same identity; a licence is no part of it; a service no longer in the config is not compared.
    fleet.check_unchanged({"services": {"gen": record(), "retired": record(version="0.1")}})


@pytest.mark.parametrize(
    "previous, key, old, new",
    [
        (record(version="0.9.0"), "version", "0.9.0", "1.0.0"),
        (record(weights="b" * 64), "weights_sha256", "b" * 64, "a" * 64),
        (record(model="other"), "name", "other", "m"),
        ({"info": {}}, "name", None, "m"),
        # A refitted calibration changes every score the detector serves, not its weights.
        (
            {"info": {"model": {**record()["info"]["model"], "metadata": {"calibration": '{"a": 0.2}'}}}},
            "calibration",
            '{"a": 0.2}',
            None,
        ),
    ],
)
def test_a_changed_model_is_refused_naming_the_key(fleet, previous, key, old, new):
    with pytest.raises(
        RunError, match=re.escape(f"gen: {key} changed since this run started ({old!r} -> {new!r}); results would mix")
    ):
        fleet.check_unchanged({"services": {"gen": previous}})
    with pytest.raises(RunError, match=f"gen: {key} changed"):  # after a service no longer in the config
        fleet.check_unchanged({"services": {"retired": record(), "gen": previous}})


def test_an_image_entry_must_run_the_same_image_id(fleet):
    fleet.services["gen"].container = Image("sha256:" + "1" * 64)  # type: ignore[assignment]
    before = {**record(), "image": {"ref": "acme/gen:1.0", "id": "sha256:" + "1" * 64}}
    fleet.check_unchanged({"services": {"gen": before}})
    fleet.check_unchanged(
        {"services": {"gen": {**before, "image": {"ref": "acme/gen:latest", "id": before["image"]["id"]}}}}
    )
    fleet.check_unchanged({"services": {"gen": record()}})  # not launched from an image before: GetInfo decides
    fleet.services["gen"].container = Image("sha256:" + "2" * 64)  # type: ignore[assignment]
    with pytest.raises(
        RunError,
        match=re.escape(f"gen: image id changed since this run started ('sha256:{'1' * 64}' -> 'sha256:{'2' * 64}')"),
    ):
        fleet.check_unchanged({"services": {"gen": before}})
    # A changed model is named before a changed image.
    with pytest.raises(RunError, match="gen: version changed"):
        fleet.check_unchanged({"services": {"gen": {**record(version="0.1"), "image": before["image"]}}})
    fleet.services["gen"].container = None
    fleet.check_unchanged({"services": {"gen": before}})  # not launched from an image now

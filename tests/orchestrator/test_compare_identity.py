"""compare-check on hand-made run directories (a ``run.json`` and ``metrics/fingerprint.json`` each):
every part of a protocol's identity, changed one at a time, is a named difference; what is not part of
it (a condition or a service only one run has) is not.

test_compare.py checks the same through real runs and the CLI; these need no services and run in a
fraction of a second, the mutation target's selection (tests/mutation/run.py, ``protocol``). The
expected messages are written out here.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from voxarena.orchestrator.metrics.compare import IncomparableRuns, check_comparable, protocol_differences

MODEL = {"name": "gen", "version": "1.0.0", "weights_sha256": "w" * 64}
RECORD = {
    "manifest": {"sha256": "a" * 64, "items": 4},
    "seeds": {"run_seed": 1},
    "config": {
        "protocol": {"tasks": ["TTS"], "i2d": {"iterations": 3}},
        "conditions": {"mp3": [{"codec": "mp3"}], "noise": [{"snr_db": 10}]},
    },
    "services": {
        "gen": {"role": "generator", "info": {"model": MODEL}},
        "det": {"role": "detector", "info": {"model": {"name": "det", "version": "2"}}},
    },
}
FINGERPRINT = {"whisper": "h1", "normaliser": "basic", "resampler": "soxr-vhq"}


def run(root: Path, name: str, changes: dict | None = None, fingerprint: dict | None = FINGERPRINT) -> Path:
    """A run directory: RECORD with ``changes`` (dotted keys; None deletes), and a fingerprint unless None."""
    record = copy.deepcopy(RECORD)
    for key, value in (changes or {}).items():
        node = record
        *parents, last = key.split(".")
        for p in parents:
            node = node[p]
        if value is None:
            del node[last]
        else:
            node[last] = value
    d = root / name
    (d / "metrics").mkdir(parents=True)
    (d / "run.json").write_text(json.dumps(record))
    if fingerprint is not None:
        (d / "metrics" / "fingerprint.json").write_text(json.dumps({"fingerprint": fingerprint, "other": 1}))
    return d


def test_the_same_protocol_is_comparable(tmp_path):
    a = run(tmp_path, "a")
    # Not identity: a condition or a service only one run has, a licence, the run's name.
    b = run(
        tmp_path,
        "b",
        {
            "config.conditions.opus": [{"codec": "opus"}],
            "services.extra": {"info": {"model": {"name": "x"}}},
            "services.gen.info.model": {**MODEL, "licence": "MIT"},
            "name": "another",
        },
    )
    assert protocol_differences(a, b) == [] == protocol_differences(b, a)
    check_comparable(a, b)
    c = run(tmp_path, "c", {"config.conditions": None})  # no conditions at all
    assert protocol_differences(a, c) == []


@pytest.mark.parametrize(
    "changes, difference",
    [
        (
            {"manifest": {"sha256": "b" * 64, "items": 5}},
            f"manifest differs ({'a' * 12}, 4 items vs {'b' * 12}, 5 items)",
        ),
        ({"seeds.run_seed": 2}, "run seed differs (1 vs 2)"),
        ({"config.protocol.tasks": ["TTS", "CLONE"]}, "tasks differ (['TTS'] vs ['TTS', 'CLONE'])"),
        (
            {"config.conditions.noise": [{"snr_db": 5}]},
            "channel condition 'noise' differs ([{'snr_db': 10}] vs [{'snr_db': 5}])",
        ),
        ({"config.protocol.i2d": None}, "I2D protocol differs ({'iterations': 3} vs None)"),
        ({"config.protocol.i2d": {"iterations": 4}}, "I2D protocol differs ({'iterations': 3} vs {'iterations': 4})"),
        ({"services.gen.info.model.version": "1.1.0"}, "gen: version differs ('1.0.0' vs '1.1.0')"),
        ({"services.gen.info.model.name": "gen2"}, "gen: name differs ('gen' vs 'gen2')"),
        (
            {"services.gen.info.model.weights_sha256": "v" * 64},
            f"gen: weights_sha256 differs ({'w' * 64!r} vs {'v' * 64!r})",
        ),
        (  # a refitted calibration: the same weights, other LLRs
            {"services.gen.info.model.metadata": {"calibration": '{"a": 0.2, "b": -0.9}'}},
            """gen: calibration differs (None vs '{"a": 0.2, "b": -0.9}')""",
        ),
    ],
)
def test_each_part_of_the_identity_is_a_named_difference(tmp_path, changes, difference):
    a, b = run(tmp_path, "a"), run(tmp_path, "b", changes)
    assert protocol_differences(a, b) == [difference]
    assert len(protocol_differences(b, a)) == 1  # either way round
    with pytest.raises(IncomparableRuns) as e:
        check_comparable(a, b)
    assert e.value.differences == [difference] and str(e.value) == difference


def test_every_difference_is_listed_in_order(tmp_path):
    a = run(tmp_path, "a")
    b = run(
        tmp_path,
        "b",
        {
            "seeds.run_seed": 3,
            "config.conditions.mp3": [{"codec": "mp3", "bitrate_kbps": 32}],
            "config.conditions.noise": [],
            "services.det.info.model.version": "3",
            "services.det.info.model.weights_sha256": "x",
            "services.gen.info.model.version": "0",
        },
        fingerprint={**FINGERPRINT, "resampler": "linear"},
    )
    expected = [
        "run seed differs (1 vs 3)",
        "channel condition 'mp3' differs ([{'codec': 'mp3'}] vs [{'codec': 'mp3', 'bitrate_kbps': 32}])",
        "channel condition 'noise' differs ([{'snr_db': 10}] vs [])",
        "scorer fingerprint differs: resampler ('soxr-vhq' vs 'linear')",
        "det: version differs ('2' vs '3')",
        "det: weights_sha256 differs (None vs 'x')",
        "gen: version differs ('1.0.0' vs '0')",
    ]
    assert protocol_differences(a, b) == expected
    with pytest.raises(IncomparableRuns) as e:
        check_comparable(a, b)
    assert e.value.differences == expected and str(e.value) == "; ".join(expected)


def test_a_service_without_model_info_differs_in_every_key_it_had(tmp_path):
    a, b = run(tmp_path, "a"), run(tmp_path, "b", {"services.det.info": {}})
    assert protocol_differences(a, b) == ["det: name differs ('det' vs None)", "det: version differs ('2' vs None)"]


def test_the_scorer_fingerprint(tmp_path):
    a = run(tmp_path, "a")
    no_print = run(tmp_path, "none", fingerprint=None)
    assert protocol_differences(a, no_print) == [f"scorer fingerprint missing in {no_print}"]
    assert protocol_differences(no_print, a) == [f"scorer fingerprint missing in {no_print}"]
    other = run(tmp_path, "other", fingerprint=None)
    assert protocol_differences(no_print, other) == [f"scorer fingerprint missing in {no_print}, {other}"]
    # Changed, added and removed keys, sorted, at most eight named.
    changed = {"normaliser": "none", "resampler": "soxr-vhq", "added": 1, **{f"k{n}": n for n in range(7)}}
    b = run(tmp_path, "b", fingerprint=changed)
    assert protocol_differences(a, b) == [
        "scorer fingerprint differs: added (None vs 1), k0 (None vs 0), k1 (None vs 1), k2 (None vs 2), "
        "k3 (None vs 3), k4 (None vs 4), k5 (None vs 5), k6 (None vs 6)"
    ]
    c = run(tmp_path, "c", fingerprint={"normaliser": "none", "resampler": "soxr-vhq"})
    assert protocol_differences(a, c) == [
        "scorer fingerprint differs: normaliser ('basic' vs 'none'), whisper ('h1' vs None)"
    ]


def test_a_directory_without_run_json_is_not_a_run(tmp_path):
    a = run(tmp_path, "a")
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"empty: not a run directory \(no run.json\)"):
        protocol_differences(a, tmp_path / "empty")


def test_an_image_entry_in_both_runs_must_be_the_same_image_id(tmp_path):
    image = {"ref": "acme/gen:1.0", "id": "sha256:" + "1" * 64, "repo_digests": []}
    a = run(tmp_path, "a", {"services.gen.image": image})
    retagged = run(tmp_path, "retagged", {"services.gen.image": {**image, "ref": "acme/gen:latest"}})
    local = run(tmp_path, "local")
    assert protocol_differences(a, retagged) == [] == protocol_differences(a, local) == protocol_differences(local, a)
    rebuilt = run(tmp_path, "rebuilt", {"services.gen.image": {**image, "id": "sha256:" + "2" * 64}})
    expected = f"gen: image differs (acme/gen:1.0 sha256:{'1' * 64} vs acme/gen:1.0 sha256:{'2' * 64})"
    assert protocol_differences(a, rebuilt) == [expected]
    assert protocol_differences(rebuilt, a) == [
        f"gen: image differs (acme/gen:1.0 sha256:{'2' * 64} vs acme/gen:1.0 sha256:{'1' * 64})"
    ]
    both = run(tmp_path, "both", {"services.gen.image": {"id": "sha256:3"}, "services.gen.info.model.version": "2"})
    assert protocol_differences(a, both) == [
        "gen: version differs ('1.0.0' vs '2')",
        f"gen: image differs (acme/gen:1.0 sha256:{'1' * 64} vs None sha256:3)",
    ]

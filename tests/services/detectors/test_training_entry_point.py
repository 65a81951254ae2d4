"""The training pipeline's entry point, as a race uses it: the catalogue names it for exactly the detectors it
trains, with the weights variable each service reads; run as a command it trains into --out with the folds
and the recorded command it is given, and ``--keep-current`` keeps weights already trained on the same data."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from voxarena.catalogue import SERVICES, WEIGHTS_METADATA
from voxarena.services.detectors.trained import METADATA_FILE
from voxarena.services.detectors.training.api import TRAINERS, current_training, model_class

TRAINABLE = {s.name: s for s in SERVICES if s.trainer}


def test_the_catalogue_names_a_trainer_for_exactly_the_trainable_detectors():
    assert set(TRAINABLE) == set(TRAINERS)
    assert all(s.role == "detector" and s.trainer == "voxarena.services.detectors.training" for s in TRAINABLE.values())


@pytest.mark.parametrize("detector", sorted(TRAINERS))
def test_each_trained_detector_reads_the_weights_variable_and_record_the_catalogue_states(detector):
    service = TRAINABLE[detector]
    cls = model_class(detector)
    assert cls.__module__.startswith(service.module + "."), (cls.__module__, service.module)
    assert cls.weights_env == service.weights_env
    assert METADATA_FILE == WEIGHTS_METADATA


def train(data: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    args = ["--detector", "lfcc-gmm", "--data", str(data), "--out", str(out), "--seed", "5", "--dev-fraction", "0.34"]
    return subprocess.run(
        [sys.executable, "-m", "voxarena.services.detectors.training", *args, "--quiet", *extra],
        capture_output=True,
        text=True,
        timeout=900,
    )


@pytest.mark.slow
def test_the_command_trains_once_and_keeps_weights_trained_on_the_same_data(tiny_training_run, tmp_path):
    out, loao = tmp_path / "weights", tmp_path / "folds"
    done = train(tmp_path, out, "--loao-dir", str(loao), "--as-command", "orchestrator race r.yaml", "--keep-current")
    assert done.returncode == 0, done.stderr[-3000:]
    assert not done.stdout.lstrip().startswith("{")  # --quiet: the metadata is in --out only
    first = (out / WEIGHTS_METADATA).read_bytes()
    meta = json.loads(first)
    assert meta["command"] == "orchestrator race r.yaml" and meta["seed"] == 5
    assert sorted(p.name for p in loao.iterdir()) == ["clipped", "tone"]  # one fold per held-out generator
    assert current_training("lfcc-gmm", tmp_path, out, seed=5, dev_fraction=0.34) == meta
    assert current_training("lfcc-gmm", tmp_path, out, seed=6, dev_fraction=0.34) is None  # another split

    again = train(tmp_path, out, "--keep-current")
    assert again.returncode == 0, again.stderr[-3000:]
    assert "trained on this data, kept" in again.stderr
    assert (out / WEIGHTS_METADATA).read_bytes() == first  # not retrained: the timings would differ

    (out / next(iter(meta["files"]))).write_bytes(b"cut")  # weights that are not the recorded ones
    assert current_training("lfcc-gmm", tmp_path, out, seed=5, dev_fraction=0.34) is None


def test_an_unknown_detector_is_refused_naming_the_trainable_ones(tmp_path):
    with pytest.raises(SystemExit, match="unknown detector 'nope'; trainable: lfcc-gmm"):
        current_training("nope", tmp_path, tmp_path)

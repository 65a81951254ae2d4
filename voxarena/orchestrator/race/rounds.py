"""``orchestrator race RACE.yaml``: the arms race as rounds of evaluation and retraining (issue 16 item 4).

A race file names two run configs and what the race changes between rounds::

    name: race
    training: race-train.yaml     # data run: bona fide training speakers + the seen generators
    evaluation: race-eval.yaml    # what every round evaluates: generators, detectors, conditions
    rounds: 3                     # round 0, then 2 rounds of retraining
    retrain: [lfcc-gmm]           # evaluation detectors retrained every round; the others stay as they are

Round 0 trains the ``retrain`` detectors on the training config's data (its generators are the *seen*
ones) with the detectors' own training entry point, the catalogue's ``trainer`` (``python -m
voxarena.services.detectors.training``: speaker-disjoint train/dev split, leave-one-attack-out
calibration), run as a subprocess that dies with the race: the orchestrator imports no model code, so
any detector whose catalogue entry names a trainer taking those arguments can race. The evaluation
config then runs with the new weights (the service's ``weights_env``).
After round k, the **most evasive** evaluation generator not trained on yet (the highest EER on
``pick_condition``, averaged over the retrained detectors; ties by name) is added: its clips of the
training manifest are made in a data run of their own, and round k+1 retrains on the seen and every
added generator, then evaluates again. Evaluation speakers never enter training (the configs'
datasets must be disjoint, as configs/train-detectors.yaml and the evaluation configs are).

Everything lives in ``OUT``: ``data/seen`` and ``data/GEN`` (data runs), ``round-K/weights/DET``
(weights, metadata and LOAO folds), ``round-K/run`` (the evaluation run, a normal run directory with
its report), ``race.json`` (the record), ``race_metrics.csv`` and ``race.html`` (``race_report``).
Each step is skipped when its result is there and complete, so a killed race resumes where it was:
runs resume like any run, weights are kept when their metadata matches the data they were trained
on, the picks are recomputed from the stored runs. Training is deterministic (seeded, fixed threads),
so a resumed race gives the uninterrupted one's numbers.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import Field
from rich.console import Console

from voxarena.catalogue import SERVICES, WEIGHTS_METADATA, Service
from voxarena.lifecycle import PARENT_ENV
from voxarena.orchestrator.errors import RunError
from voxarena.orchestrator.fleet.service_config import Strict
from voxarena.orchestrator.race.report import generator_eers, most_evasive, write_race_outputs
from voxarena.orchestrator.run.config import RunConfig, ServiceConfig, load_config, read_yaml_mapping, validated
from voxarena.orchestrator.run.pipeline import Arena, now_utc
from voxarena.orchestrator.run.status import run_status
from voxarena.orchestrator.store import dir_lock

RACE_FORMAT = "voxarena.race/1"
DEFAULT_TRAINING_SEED = 20260101  # the committed detectors' seed (the training entry point's default)


class RaceError(RunError):
    """The race cannot start or go on (bad race file, a run that ended incomplete, nothing left to add)."""


class RaceIncomplete(RaceError):
    """A round's run ended incomplete: a rerun of the race retries it (exit 3, like a run)."""


class RaceConfig(Strict):
    name: str = "race"
    training: str = Field(description="data run config (bona fide training speakers, the seen generators)")
    evaluation: str = Field(description="run config every round evaluates")
    rounds: int = Field(3, ge=1, le=20, description="round 0 and rounds-1 rounds of retraining")
    retrain: list[str] = Field(min_length=1, description="evaluation detectors retrained every round")
    pick_condition: str = Field("clean", description="the condition whose EER picks the most evasive generator")
    seed: int = Field(DEFAULT_TRAINING_SEED, description="training seed (dev split, initialisation)")
    dev_fraction: float = Field(0.1, gt=0, lt=1, description="share of training speakers held out as dev")
    max_epochs: int | None = Field(None, ge=1, description="epoch budget of neural detectors (default: theirs)")


def trainable() -> dict[str, Service]:
    """The catalogue's detectors that name a training entry point."""
    return {s.name: s for s in SERVICES if s.role == "detector" and s.trainer}


class LoadedRace:
    def __init__(self, cfg: RaceConfig, path: Path, training: RunConfig, evaluation: RunConfig) -> None:
        self.cfg, self.path, self.training, self.evaluation = cfg, path, training, evaluation
        self.seen = sorted(training.generators)
        self.candidates = sorted(set(evaluation.generators) - set(self.seen))


def load_race(path: Path) -> LoadedRace:
    """Read and check a race file and the two run configs it names (paths relative to it)."""
    cfg = validated(RaceConfig, read_yaml_mapping(path, "race file", RaceError), path, RaceError)
    base = path.resolve().parent
    training = load_config(base / cfg.training)
    evaluation = load_config(base / cfg.evaluation)
    race = LoadedRace(cfg, path, training, evaluation)
    detectors = evaluation.detector_services()
    for name in cfg.retrain:
        where = f"{path}: retrain: {name!r}"
        if name not in detectors:
            raise RaceError(f"{where} is not a detector service of {cfg.evaluation}")
        if name not in trainable():
            raise RaceError(f"{where} has no training pipeline (trainable: {', '.join(sorted(trainable()))})")
        svc = detectors[name]
        if svc.address is not None or svc.image is not None:
            raise RaceError(
                f"{where} is reached at an address or launched from an image; a race retrains and "
                "starts the detectors it retrains itself (leave address and image out)"
            )
    if len(race.seen) < 2:
        raise RaceError(
            f"{path}: training: {cfg.training} has {len(race.seen)} generator(s); the calibration's "
            "leave-one-attack-out folds need at least two seen generators"
        )
    if len(race.candidates) < cfg.rounds - 1:
        raise RaceError(
            f"{path}: rounds: {cfg.rounds} rounds add {cfg.rounds - 1} generators, but {cfg.evaluation} has "
            f"{len(race.candidates)} not seen in training ({', '.join(race.candidates) or 'none'})"
        )
    conditions = {"clean", *evaluation.conditions}
    if cfg.pick_condition not in conditions:
        raise RaceError(f"{path}: pick_condition: {cfg.pick_condition!r} is not a condition of {cfg.evaluation}")
    return race


@contextlib.contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """``values`` set in os.environ for the block (the local services started in it inherit them)."""
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class Race:
    def __init__(
        self,
        race: LoadedRace,
        out: Path,
        console: Console | None = None,
        progress: bool = True,
        progress_every: float = 30.0,
        log_format: str = "text",
    ) -> None:
        self.race, self.cfg, self.out = race, race.cfg, out
        self.console = console or Console(stderr=True)
        self.progress = progress
        self.progress_every, self.log_format = progress_every, log_format

    # ------------------------------------------------------------------ record
    def _identity(self) -> dict[str, Any]:
        return {
            "race": self.cfg.model_dump(mode="json"),
            "training": self.race.training.model_dump(mode="json"),
            "evaluation": self.race.evaluation.model_dump(mode="json"),
        }

    def _begin(self) -> dict[str, Any]:
        path = self.out / "race.json"
        identity = self._identity()
        if path.exists():
            previous = json.loads(path.read_text())
            if previous.get("format") != RACE_FORMAT:
                raise RaceError(f"{self.out}: not a race directory ({path} is not a race record)")
            changed = [k for k in identity if previous.get("config", {}).get(k) != identity[k]]
            if changed:
                raise RaceError(
                    f"{self.out}: was raced with a different {', '.join(changed)} configuration (see its race.json); "
                    "resume with the same files or use a new --out"
                )
            return previous
        if self.out.exists() and any(p.name != dir_lock.LOCK_FILE for p in self.out.iterdir()):
            raise RaceError(f"{self.out}: exists and is not a race directory; use a new --out")
        self.out.mkdir(parents=True, exist_ok=True)
        return {"format": RACE_FORMAT, "name": self.cfg.name, "config": identity, "started_at": now_utc(), "rounds": []}

    def _save(self, record: dict[str, Any]) -> None:
        tmp = self.out / "race.json.tmp"
        tmp.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n")
        tmp.replace(self.out / "race.json")

    # ------------------------------------------------------------------ steps
    def _complete_run(self, cfg: RunConfig, run_dir: Path, what: str) -> Path:
        """Run (or resume) ``cfg`` into ``run_dir`` unless it is already complete; it must end complete."""
        if (run_dir / "run.json").exists() and run_status(run_dir)["outcome"]["exit_code"] == 0:
            self.console.print(f"{what}: {run_dir} complete, kept", highlight=False)
            return run_dir
        self.console.print(f"{what}: running {run_dir}", highlight=False)
        Arena(
            cfg,
            run_dir,
            console=self.console,
            progress=self.progress,
            progress_every=self.progress_every,
            log_format=self.log_format,
        ).run()
        outcome = run_status(run_dir)["outcome"]
        if outcome["exit_code"]:
            raise RaceIncomplete(
                f"{what}: {run_dir} ended incomplete ({outcome['summary']}); "
                f"see `orchestrator status {run_dir}`, then rerun the race to resume"
            )
        return run_dir

    def _data(self, generator: str | None) -> Path:
        """The seen generators' data run (``None``) or ``generator``'s clips of the same training manifest."""
        base = self.race.training
        if generator is None:
            return self._complete_run(base, self.out / "data" / "seen", "training data (seen generators)")
        cfg = base.model_copy(
            update={"name": f"{base.name}-{generator}", "generators": {generator: self._entry(generator)}}
        )
        run_dir = self._complete_run(cfg, self.out / "data" / generator, f"training data ({generator})")
        rows = [json.loads(x) for x in (run_dir / "generations.jsonl").read_text().splitlines() if x.strip()]
        if not any(r["status"] == "ok" for r in rows):
            raise RaceError(
                f"{generator}: made no clips of the training manifest (tasks {', '.join(base.protocol.tasks)}); "
                "a race adds generators that do the training config's tasks"
            )
        return run_dir

    def _entry(self, generator: str) -> ServiceConfig:
        return self.race.evaluation.generators[generator]

    def _train(self, k: int, detector: str, data: list[Path]) -> dict[str, Any]:
        """``detector`` trained on ``data`` into round k's weights by its training entry point in a subprocess
        (which keeps weights already trained on that data); returns their metadata."""
        out = self.out / f"round-{k}" / "weights" / detector
        command = [
            sys.executable,
            "-m",
            str(trainable()[detector].trainer),
            "--detector",
            detector,
            "--data",
            *(str(p) for p in data),
            "--out",
            str(out),
            "--seed",
            str(self.cfg.seed),
            "--dev-fraction",
            repr(self.cfg.dev_fraction),
            *(["--max-epochs", str(self.cfg.max_epochs)] if self.cfg.max_epochs is not None else []),
            "--loao-dir",
            str(self.out / f"round-{k}" / "loao" / detector),
            "--as-command",
            f"orchestrator race {self.race.path} --out {self.out}",
            "--keep-current",
            "--quiet",
        ]
        names = ", ".join(p.name for p in data)
        self.console.print(f"round {k}: training {detector} on {names} (kept if trained on them)", highlight=False)
        # the trainer dies with us (voxarena.lifecycle): a killed race leaves no training behind
        done = subprocess.run(command, env={**os.environ, PARENT_ENV: str(os.getpid())})
        if done.returncode:
            raise RaceError(f"round {k}: training {detector} failed (exit {done.returncode}): {shlex.join(command)}")
        meta: dict[str, Any] = json.loads((out / WEIGHTS_METADATA).read_text())
        return meta

    def _evaluate(self, k: int) -> Path:
        services = trainable()
        weights = {
            services[d].weights_env: str((self.out / f"round-{k}" / "weights" / d).resolve()) for d in self.cfg.retrain
        }
        cfg = self.race.evaluation.model_copy(update={"name": f"{self.race.evaluation.name}-round-{k}"})
        with _environment(weights):
            return self._complete_run(cfg, self.out / f"round-{k}" / "run", f"round {k}: evaluation")

    # ------------------------------------------------------------------ the race
    def run(self) -> dict[str, Any]:
        record = self._begin()
        lock = dir_lock.acquire(self.out, "race")  # one race per directory (each run has its own lock too)
        try:
            return self._run(record)
        finally:
            dir_lock.release(lock)

    def _run(self, record: dict[str, Any]) -> dict[str, Any]:
        self._save(record)
        added: list[str] = []
        rounds = []
        data = [self._data(None)]
        for k in range(self.cfg.rounds):
            if k > 0:
                data.append(self._data(added[-1]))
            weights = {d: self._train(k, d, data) for d in self.cfg.retrain}
            run_dir = self._evaluate(k)
            eers = generator_eers(run_dir / "metrics" / "detection_metrics.csv")
            pick = None
            if k + 1 < self.cfg.rounds:
                left = [g for g in self.race.candidates if g not in added]
                pick = most_evasive(eers, self.cfg.retrain, left, self.cfg.pick_condition)
                if pick is None:
                    raise RaceError(
                        f"round {k}: no evaluation generator left to add has an EER for "
                        f"{', '.join(self.cfg.retrain)} on {self.cfg.pick_condition!r} (see {run_dir}/metrics)"
                    )
            rounds.append(
                {
                    "round": k,
                    "trained_on": self.race.seen + added,
                    "added": added[-1] if k > 0 else None,
                    # the weight files' sha256, as their metadata records them and the service checks on load
                    "weights": {d: {"dir": f"round-{k}/weights/{d}", "files": m["files"]} for d, m in weights.items()},
                    "dev_eer": {d: m.get("dev_eer") for d, m in weights.items()},
                    "dev_cllr": {d: m.get("dev_cllr") for d, m in weights.items()},
                    "run": f"round-{k}/run",
                    "next": pick,
                }
            )
            record["rounds"] = rounds
            self._save(record)
            if pick is not None:
                added.append(pick)
        record["ended_at"] = now_utc()
        self._save(record)
        write_race_outputs(self.out, record, self.race.seen, self.cfg.retrain)
        return record

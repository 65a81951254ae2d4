"""A leaderboard over time: many runs of one protocol, the latest matrix with ranks, each cell's history.

``orchestrator leaderboard RUN... --out SITE/`` (``leaderboard_site`` writes the pages). The runs are read
as their run directories keep them (run.json, manifest, the clean rows of ``metrics/detection_metrics.csv``):

- **Series.** The newest run (by ``started_at``) and every run with no ``design_differences`` from it (same
  manifest, seed, tasks, conditions, I2D protocol and scorer fingerprint) form the series; a service's
  version, weights, calibration or image may change between them: that is what the history shows. Every
  other run is listed apart with its differences.
- **Coverage.** A cell (detector x generator, clean condition) is measured when every one-shot clip the
  generator was planned to make (``Plan``) and every bona fide item was scored: ``n_spoof`` of
  ``expected_spoof`` and ``n_bonafide`` of ``expected_bonafide``, no failed detection. Only measured cells
  are ranked; the others show their coverage.
- **Ranks.** In each generator's column the measured cells are ranked by EER (1 = the lowest; ties share a
  rank). A detector's overall rank is by its mean EER over the latest run's generators, and only when all
  its cells are measured; a generator's (how hard it is) by its mean EER over the detectors, likewise.
- **History.** Per cell, its EER with the 95% speaker-bootstrap CI in each run of the series, with what
  changed in the detector's or the generator's service since the previous run (``identity_changes``, image
  id, and the run config's ``parameters``, ``voice`` and ``watermark`` of it). A change is **confirmed** when
  both runs measured the cell and their CIs do not overlap (the pooled row only between runs of the same
  generators: another pool is another measurement).
- **Half-life.** Per detector, its EER in the newest run on each generator, placed at the date the
  generator joined the arena (its first run in the series).
"""

from __future__ import annotations

import csv
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from voxarena.orchestrator.metrics.compare import design_differences, identity_changes
from voxarena.orchestrator.run.manifest import ManifestSet, spoof_key
from voxarena.orchestrator.run.partial import is_partial
from voxarena.orchestrator.run.plan import Plan
from voxarena.orchestrator.store.run_store import CLEAN

POOLED = "pooled"
CONFIG_KEYS = ("parameters", "voice", "watermark")  # a service's config entries that change what it makes


class LeaderboardError(ValueError):
    """The runs cannot make a leaderboard (none, or not a run directory); names the path and why."""


def _float(v: str | None) -> float:
    try:
        return float(v) if v not in (None, "") else math.nan
    except ValueError:
        return math.nan


@dataclass(frozen=True)
class Cell:
    eer: float
    low: float
    high: float
    n_spoof: int
    expected_spoof: int
    n_bonafide: int
    expected_bonafide: int
    n_failed: int

    @property
    def measured(self) -> bool:
        return (
            self.n_spoof == self.expected_spoof > 0
            and self.n_bonafide == self.expected_bonafide > 0
            and self.n_failed == 0
            and not math.isnan(self.eer)
        )

    @property
    def coverage(self) -> str:
        return f"{self.n_spoof}/{self.expected_spoof} spoof, {self.n_bonafide}/{self.expected_bonafide} bona fide"


@dataclass
class RunEntry:
    path: Path
    name: str
    started: str
    record: dict
    generators: list[str]
    detectors: list[str]
    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)

    def identity(self, service: str) -> dict:
        return self.record.get("services", {}).get(service, {})

    def service_config(self, service: str) -> dict:
        """The run config's entry of ``service`` (generators or detectors)."""
        cfg = self.record.get("config", {})
        return cfg.get("generators", {}).get(service) or cfg.get("detectors", {}).get(service) or {}


def _detection_rows(path: Path) -> list[dict]:
    csv_path = path / "metrics" / "detection_metrics.csv"
    if not csv_path.exists():
        return []
    with open(csv_path, newline="") as f:
        return [r for r in csv.DictReader(f) if r.get("condition", CLEAN) in ("", CLEAN)]


def load_run(path: Path) -> RunEntry:
    """One run directory's cells, with the coverage its plan expected."""
    record_path = path / "run.json"
    if not record_path.exists() or not (path / "manifest.jsonl").exists():
        raise LeaderboardError(f"{path}: not a run directory (no run.json and manifest.jsonl)")
    record = json.loads(record_path.read_text())
    manifest = ManifestSet.from_file(path / "manifest.jsonl")
    plan = Plan.of_record(record, manifest)
    expected = {g: sum(1 for j in plan.jobs if j.generator == g and not is_partial(j.task)) for g in plan.generators}
    bonafide = sum(1 for it in manifest if not spoof_key(it.labels))
    generators = [g for g in plan.generators if expected[g] > 0]
    entry = RunEntry(path, record.get("name", path.name), record.get("started_at", ""), record, generators, [])
    entry.detectors = list(plan.reported_detectors)
    rows = {(r["detector"], r["generator"]): r for r in _detection_rows(path)}
    for d in entry.detectors:
        for g in [*generators, POOLED]:
            r = rows.get((d, g), {})
            entry.cells[(d, g)] = Cell(
                eer=_float(r.get("eer")),
                low=_float(r.get("eer_ci_low")),
                high=_float(r.get("eer_ci_high")),
                n_spoof=int(_float(r.get("n_spoof")) if r else 0),
                expected_spoof=sum(expected.values()) if g == POOLED else expected[g],
                n_bonafide=int(_float(r.get("n_bonafide")) if r else 0),
                expected_bonafide=bonafide,
                n_failed=int(_float(r.get("n_failed")) or 0) if r else 0,
            )
    return entry


def ranks(values: dict[str, float]) -> dict[str, int]:
    """Competition ranks of ``values`` (lowest first; equal values share a rank)."""
    ordered = sorted(values.values())
    return {k: 1 + ordered.index(v) for k, v in values.items()}


def confirmed(a: Cell, b: Cell) -> bool:
    """Both measured, and their 95% CIs do not overlap."""
    return a.measured and b.measured and (a.high < b.low or b.high < a.low)


def short(value: object) -> str:
    """An identity value as a change line shows it: a hash's first 12 characters, a calibration's map."""
    if isinstance(value, str) and value.startswith("{"):
        try:
            value = json.loads(value)
        except ValueError:
            pass
    if isinstance(value, dict) and "a" in value and "b" in value:
        return f"a={float(value['a']):.3g}, b={float(value['b']):.3g}"
    if isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value):
        return value[:12]
    return str(value)


def service_changes(old: RunEntry, new: RunEntry, service: str) -> list[str]:
    """What changed in ``service`` from ``old`` to ``new``: model identity parts and the image id."""
    a, b = old.identity(service), new.identity(service)
    if not a or not b:
        return []
    changes = identity_changes(a["info"], b["info"])
    out = [f"{service} {key}: {short(was)} -> {short(now)}" for key, was, now in changes]
    for key in CONFIG_KEYS:  # what the run asked of it: another voice or parameters is another system
        was, now = old.service_config(service).get(key), new.service_config(service).get(key)
        if was != now:
            out.append(f"{service} {key}: {was} -> {now}")
    ia, ib = (a.get("image") or {}).get("id"), (b.get("image") or {}).get("id")
    if ia and ib and ia != ib:
        out.append(f"{service} image: {ia[:19]} -> {ib[:19]}")
    return out


@dataclass
class Leaderboard:
    series: list[RunEntry]  # oldest first; the last is the newest run
    apart: list[tuple[RunEntry, list[str]]]

    @property
    def latest(self) -> RunEntry:
        return self.series[-1]

    def column_ranks(self, generator: str) -> dict[str, int]:
        latest = self.latest
        cells = {d: latest.cells[(d, generator)] for d in latest.detectors}
        return ranks({d: c.eer for d, c in cells.items() if c.measured})

    def _means(self, rows: dict[str, list[Cell]]) -> tuple[dict[str, float], dict[str, str]]:
        """Mean EER of each row whose every cell is measured; why the others are not ranked."""
        means, refused = {}, {}
        for name, cells in rows.items():
            missing = sum(not c.measured for c in cells)
            if missing:
                refused[name] = f"not ranked: {missing} of {len(cells)} cells not fully measured"
            else:
                means[name] = sum(c.eer for c in cells) / len(cells)
        return means, refused

    def detector_ranks(self) -> tuple[dict[str, int], dict[str, float], dict[str, str]]:
        """(rank, mean EER) of the detectors whose every cell is measured, lowest first; why the others are not."""
        latest = self.latest
        means, refused = self._means({d: [latest.cells[(d, g)] for g in latest.generators] for d in latest.detectors})
        return ranks(means), means, refused

    def generator_ranks(self) -> tuple[dict[str, int], dict[str, float], dict[str, str]]:
        """Generators by mean EER over the detectors, hardest (highest) first; refused when a cell is missing."""
        latest = self.latest
        means, refused = self._means({g: [latest.cells[(d, g)] for d in latest.detectors] for g in latest.generators})
        return ranks({g: -m for g, m in means.items()}), means, refused

    def history(self, detector: str, generator: str) -> list[dict]:
        """The cell in every run of the series that has it, oldest first, with the changes since the run before."""
        out: list[dict] = []
        previous: RunEntry | None = None
        for run in self.series:
            cell = run.cells.get((detector, generator))
            if cell is None:
                continue
            changes: list[str] = []
            is_confirmed = False
            if previous is not None:
                makers = run.generators if generator == POOLED else [generator]  # the pool: all of them
                changes = service_changes(previous, run, detector)
                changes += [c for g in makers for c in service_changes(previous, run, g)]
                if generator == POOLED and previous.generators != run.generators:
                    # another pool of generators: not the same measurement, so never a confirmed change
                    joined = sorted(set(run.generators) - set(previous.generators))
                    left = sorted(set(previous.generators) - set(run.generators))
                    changes.append(
                        "pooled over other generators"
                        + (f": + {', '.join(joined)}" if joined else "")
                        + (f"; - {', '.join(left)}" if left else "")
                    )
                else:
                    is_confirmed = confirmed(previous.cells[(detector, generator)], cell)
            out.append({"run": run, "cell": cell, "changes": changes, "confirmed": is_confirmed})
            previous = run
        return out

    def joined(self) -> dict[str, str]:
        """Generator -> the start of the first run of the series that has it."""
        out: dict[str, str] = {}
        for run in self.series:
            for g in run.generators:
                out.setdefault(g, run.started)
        return out


def build_leaderboard(paths: list[Path]) -> Leaderboard:
    if not paths:
        raise LeaderboardError("no run directories given")
    runs = sorted((load_run(p) for p in paths), key=lambda r: (r.started, str(r.path)))
    newest = runs[-1]
    series, apart = [], []
    for run in runs:
        differences = design_differences(run.path, newest.path) if run is not newest else []
        if differences:
            apart.append((run, differences))
        else:
            series.append(run)
    return Leaderboard(series, apart)

"""Sharded runs: which share of the frozen manifest shard K of N works on, and how a shard stands.

``orchestrator run CONFIG --shard K/N`` runs the per-item work (generation, channel conditions,
detection, measurement) of the manifest items that shard K owns, so N orchestrators (a Kubernetes
Indexed Job, N swarm tasks, N machines) work in parallel; ``orchestrator merge`` (``merge``) then
makes one run directory of the N shards and computes what spans items (fusion's calibration fit,
the metrics) once, over the union.

K is 0-based, as a Kubernetes Indexed Job numbers its pods (``$JOB_COMPLETION_INDEX``): the shards of
``N`` are ``0/N`` .. ``N-1/N``. An item belongs to shard ``int(sha256(item id)) mod N``: stable across
machines and runs, independent of the manifest's order and of the other shards, and at the item
level, so every generation (I2D iterations included), degradation, detection and measurement made
from an item lives in one shard. Every shard keeps the whole frozen manifest (same bytes, same hash):
a generation's reference speaker may be another shard's item.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from voxarena.orchestrator.run.manifest import ManifestSet
from voxarena.orchestrator.store.outcome import Outcome


class ShardError(ValueError):
    """A bad ``--shard`` or a set of shard directories that cannot be merged."""


@dataclass(frozen=True)
class Shard:
    index: int  # K, 0-based
    count: int  # N

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ShardError(f"--shard {self}: N must be 1 or more")
        if not 0 <= self.index < self.count:
            raise ShardError(f"--shard {self}: K must be in 0..N-1 (0..{self.count - 1}; K is 0-based)")

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    @classmethod
    def parse(cls, spec: str) -> Shard:
        """``"K/N"`` (``"0/4"`` .. ``"3/4"``)."""
        m = re.fullmatch(r"\s*(-?\d+)\s*/\s*(-?\d+)\s*", spec)
        if m is None:
            raise ShardError(f"--shard {spec}: expected K/N, e.g. 0/4 (K in 0..N-1)")
        return cls(int(m.group(1)), int(m.group(2)))

    @classmethod
    def of_record(cls, record: dict) -> Shard | None:
        """The shard a run directory is (its run.json's ``shard``), None for a whole run."""
        s = record.get("shard")
        return None if s is None else cls(int(s["index"]), int(s["count"]))

    def record(self, items: int) -> dict:
        return {"index": self.index, "count": self.count, "items": items, "assignment": "sha256(item id) mod count"}

    def owns(self, item_id: str) -> bool:
        return int(hashlib.sha256(item_id.encode()).hexdigest(), 16) % self.count == self.index

    def items(self, manifest: ManifestSet) -> ManifestSet:
        """The manifest items this shard works on, in manifest order."""
        return ManifestSet([it for it in manifest if self.owns(it.id)])

    def summary(self, outcome: Outcome, run_dir: Path) -> str:
        """The verdict of a shard, one line: what to do next."""
        if outcome.complete:
            dirs = " ".join([str(run_dir), *(f"DIR{k}" for k in range(self.count) if k != self.index)])
            return f"shard {self} complete: merge the {self.count} shards: `orchestrator merge {dirs} --out RUN`"
        retry = "" if outcome.retryable else " --retry-failed"
        what = "to resume and retry" if outcome.retryable else "to redo the permanent failures"
        return (
            f"shard {self} incomplete: {outcome.counts()}: rerun `orchestrator run CONFIG --shard {self} "
            f"--out {run_dir}{retry}` {what}, then merge"
        )

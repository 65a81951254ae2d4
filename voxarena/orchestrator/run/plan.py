"""The expected work of a run: the one place that knows it, read by the pipeline and by ``status``.

From the frozen manifest, the protocol and what each service declares:

- generation: generator x task (configured and declared by the generator) x bona fide item, and for
  the I2D tasks x iteration 1..N;
- detection: detector x every corpus clip (bona fide and corpus spoofs) and every generated clip,
  under every channel condition for the one-shot clips and under the clean channel only for I2D
  iterations beyond the first;
- measurement: every generated clip, when the scorer is asked for any metric;
- fusion: a fused detector has a row for every clip its members scored, under every condition,
  made from their stored rows after detection (``fusion``), never sent to a service.

A shard's plan (``shard``) is the same work for the items the shard owns: the generations of its bona
fide items and the detections of its corpus clips and of their generated clips; references still come
from the whole manifest. A shard has no fused detectors: they are fitted across items, once, at merge.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from voxarena.orchestrator.run.config import ProtocolConfig, RunConfig
from voxarena.orchestrator.run.manifest import ManifestItem, ManifestSet
from voxarena.orchestrator.run.partial import generator_task, is_partial
from voxarena.orchestrator.run.shard import Shard
from voxarena.orchestrator.store.records import GenerationRecord
from voxarena.orchestrator.store.run_store import CLEAN, detection_id, generation_id, stream_id


@dataclass(frozen=True)
class GenerationJob:
    """One generator x task x item; ``reference`` is the target speaker for the tasks that take one."""

    generator: str
    task: str
    item: ManifestItem
    reference: ManifestItem

    def id(self, iteration: int = 1) -> str:
        return generation_id(self.generator, self.task, self.item.id, iteration)


def reference_items(manifest: ManifestSet) -> dict[str, ManifestItem]:
    """Target speaker for CONVERT/CLONE: the first item of the next speaker in manifest order."""
    firsts: dict[str, ManifestItem] = {}
    for it in manifest.bonafide():
        firsts.setdefault(it.speaker, it)
    speakers = list(firsts)
    out = {}
    for it in manifest.bonafide():
        nxt = speakers[(speakers.index(it.speaker) + 1) % len(speakers)]
        out[it.id] = firsts[nxt]
    return out


class Plan:
    def __init__(
        self,
        manifest: ManifestSet,
        protocol: ProtocolConfig,
        generator_tasks: dict[str, set[str]],
        detectors: list[str],
        conditions: list[str],
        measures: bool,
        fused: dict[str, list[str]] | None = None,
        shard: Shard | None = None,
        streaming: list[str] | None = None,
    ) -> None:
        """``generator_tasks``: the tasks each generator declares (GetInfo); the plan keeps the
        configured ones, in the protocol's order. ``detectors`` are the services that score clips,
        ``fused`` the fused detectors (name -> members). ``conditions`` are the configured channel conditions.
        ``manifest`` is the whole frozen manifest (``self.frozen``); ``self.manifest`` the items this run
        works on (a shard's share, or all of them)."""
        self.shard, self.protocol, self.frozen = shard, protocol, manifest
        self.manifest = shard.items(manifest) if shard else manifest
        self.detectors = list(detectors)
        self.fused = {} if shard else dict(fused or {})
        self.conditions = [CLEAN, *conditions]
        self.measures = measures
        # The detectors that declare streaming: with protocol.streaming, each streams every clean one-shot clip.
        self.streamed = [d for d in (streaming or []) if d in self.detectors] if protocol.streaming else []
        self.tasks = {
            g: [t for t in protocol.tasks if generator_task(t, declared)] for g, declared in generator_tasks.items()
        }
        refs = reference_items(manifest)
        # Generators take bona fide inputs only; every corpus clip is scored, spoofs included.
        self.jobs = [
            GenerationJob(g, t, it, refs[it.id])
            for g, tasks in self.tasks.items()
            for t in tasks
            for it in self.manifest.bonafide()
        ]
        self._jobs = {(j.generator, j.task, j.item.id): j for j in self.jobs}

    @classmethod
    def for_run(
        cls,
        cfg: RunConfig,
        manifest: ManifestSet,
        generator_tasks: dict[str, set[str]],
        shard: Shard | None = None,
        streaming: list[str] | None = None,
    ) -> Plan:
        """``streaming``: the detectors that declare streaming (GetInfo)."""
        return cls(
            manifest,
            cfg.protocol,
            generator_tasks,
            list(cfg.detector_services()),
            list(cfg.conditions),
            bool(cfg.scorer.metrics),
            cfg.fused_detectors(),
            shard,
            streaming,
        )

    @classmethod
    def of_record(cls, record: dict, manifest: ManifestSet) -> Plan:
        """The plan of a run directory, from its run.json: resolved config, each service's GetInfo and
        the shard it is, if it is one."""
        cfg, services = record["config"], record.get("services", {})
        tasks = {g: set(services.get(g, {}).get("info", {}).get("tasks", [])) for g in cfg["generators"]}
        detectors = cfg["detectors"]
        fused = {n: list(d["fusion"]["members"]) for n, d in detectors.items() if "fusion" in d}
        return cls(
            manifest,
            ProtocolConfig.model_validate(cfg["protocol"]),
            tasks,
            [n for n in detectors if n not in fused],
            list(cfg.get("conditions", {})),
            bool(cfg["scorer"]["metrics"]),
            fused,
            Shard.of_record(record),
            [d for d in detectors if declares_streaming(services.get(d, {}).get("info", {}))],
        )

    # ---------------------------------------------------------------- generation
    @property
    def generators(self) -> list[str]:
        return list(self.tasks)

    def job(self, generator: str, task: str, item_id: str) -> GenerationJob:
        return self._jobs[(generator, task, item_id)]

    def depth(self, task: str) -> int:
        """Generations per item for ``task``: the I2D iterations for CLONE/CONVERT, else one."""
        return self.protocol.depth(task)

    def generation_ids(self, generator: str) -> list[str]:
        """Every generation the plan expects of ``generator``, I2D iterations included."""
        return [j.id(k) for j in self.jobs if j.generator == generator for k in range(1, self.depth(j.task) + 1)]

    def n_generations(self) -> int:
        return sum(self.depth(j.task) for j in self.jobs)

    # ---------------------------------------------------------------- detection
    @property
    def reported_detectors(self) -> list[str]:
        """Every detector with rows and matrices: the services, then the fused detectors."""
        return [*self.detectors, *self.fused]

    def conditions_for(self, iteration: int) -> list[str]:
        """The channel conditions a clip is scored under: all for a one-shot clip, clean for I2D iterations."""
        return self.conditions if iteration == 1 else [CLEAN]

    def detections_per_clip(self, iteration: int) -> int:
        return len(self.detectors) * len(self.conditions_for(iteration))

    def n_detections(self) -> int:
        """Every detection, were every generation to succeed (a failed one takes its detections away)."""
        generated = sum(self.detections_per_clip(k) for j in self.jobs for k in range(1, self.depth(j.task) + 1))
        return len(self.manifest) * self.detections_per_clip(1) + generated

    def detection_ids(self, detector: str, condition: str, generated: dict[str, GenerationRecord]) -> list[str]:
        """The detections expected of ``detector`` under ``condition``: every corpus clip and every clip of
        ``generated`` (id -> generation row) that is scored under it."""
        clips = [it.id for it in self.manifest] + [
            i for i, row in generated.items() if condition in self.conditions_for(row.i2d_iteration)
        ]
        return [detection_id(detector, condition, c) for c in clips]

    # ---------------------------------------------------------------- streaming
    def stream_ids(self, detector: str, generated: Mapping[str, GenerationRecord]) -> list[str]:
        """The streams expected of ``detector``: every corpus clip and every one-shot generated clip."""
        if detector not in self.streamed:
            return []
        clips = [it.id for it in self.manifest] + [i for i, row in generated.items() if row.i2d_iteration == 1]
        return [stream_id(detector, c) for c in clips]

    def n_streams(self) -> int:
        return len(self.streamed) * (len(self.manifest) + len(self.jobs))

    # ---------------------------------------------------------------- measurement
    def measured(self, task: str) -> bool:
        """Whether the scorer measures the clips of ``task``: every generated clip but the partial fakes
        (mostly bona fide speech: their figures are the localisation tables'), when it is asked for metrics."""
        return self.measures and not is_partial(task)

    def measurement_ids(self, generated: Mapping[str, GenerationRecord]) -> list[str]:
        """The measurements expected: one per measured generated clip (``generated``: id -> row)."""
        return [i for i, row in generated.items() if self.measured(row.task)]

    def n_measurements(self) -> int:
        return sum(self.depth(j.task) for j in self.jobs if self.measured(j.task))

    # ---------------------------------------------------------------- all of it
    def service_rows(self, generations: dict[str, GenerationRecord]) -> dict[str, set[str]]:
        """The ids of every row the services make, by table, given the recorded ``generations`` (id -> row;
        a failed generation has no detections or measurement): fused rows are made from these."""
        planned = {i for g in self.generators for i in self.generation_ids(g)}
        generated = {i: r for i, r in sorted(generations.items()) if r.ok and i in planned}
        detections = {i for d in self.detectors for c in self.conditions for i in self.detection_ids(d, c, generated)}
        streams = {i for d in self.streamed for i in self.stream_ids(d, generated)}
        return {
            "generations": planned,
            "detections": detections,
            "measurements": set(self.measurement_ids(generated)),
            "streams": streams,
        }


def declares_streaming(info: Mapping) -> bool:
    """Whether a detector's GetInfo (as run.json keeps it) declares streaming."""
    return info.get("streaming", {}).get("mode", "STREAMING_MODE_UNSPECIFIED") != "STREAMING_MODE_UNSPECIFIED"

"""What a run sent for one of its rows, rebuilt from the run directory (frozen manifest, rows, run.json's
resolved config) by the builders the stages send with (``stages.synthesize_request``, ``score_request``,
``measure_request``), so ``orchestrator explain`` shows the request as it went, not a copy of its rules.

Audio is shown by its format, length and the sha256 of its bytes, beside the files it was read from (with
their recorded sha256); rebuilding reads those files and checks their hashes as the run did, so an input
that changed or vanished since says so here. A degradation is no single request: its condition's steps,
seed, source clip and the ids its transform services were sent are shown instead.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from voxarena.codec import AudioFormatError
from voxarena.orchestrator.run.channel import condition_seed
from voxarena.orchestrator.run.config import GeneratorConfig, ServiceConfig
from voxarena.orchestrator.run.manifest import ManifestItem, ManifestSet
from voxarena.orchestrator.run.partial import is_partial
from voxarena.orchestrator.run.plan import GenerationJob, reference_items
from voxarena.orchestrator.run.stages import measure_request, score_request, synthesize_request
from voxarena.orchestrator.store.clips import Clip, read_clip
from voxarena.orchestrator.store.records import GenerationRecord
from voxarena.orchestrator.store.run_store import CLEAN, condition_of
from voxarena.orchestrator.store.triage import RunRow, RunTables
from voxarena.tasks import task_inputs
from voxarena.v1 import common_pb2, detector_pb2, generator_pb2, scorer_pb2, transform_pb2


def _method(module: Any, service: str, method: str) -> str:
    """The full method name as gRPC calls it: ``/voxarena.v1.Service/Method``."""
    return f"/{module.DESCRIPTOR.services_by_name[service].full_name}/{method}"


SYNTHESIZE = _method(generator_pb2, "GeneratorService", "Synthesize")
SCORE_BATCH = _method(detector_pb2, "DetectorService", "ScoreBatch")
MEASURE_CLIPS = _method(scorer_pb2, "ScorerService", "MeasureClips")
TRANSFORM = _method(transform_pb2, "TransformService", "Transform")


@dataclass
class Sent:
    """What a row's service was sent: the method, the request (audio summarised), the files its audio
    came from, and a note when there is no request to show (or only part of one)."""

    service: str
    method: str
    request: dict[str, Any] | None = None
    inputs: dict[str, dict[str, str]] = field(default_factory=dict)  # field -> {what, path, sha256}
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "service": self.service,
            "method": self.method,
            "request": self.request,
            "inputs": self.inputs,
            "note": self.note,
        }


def describe_audio(audio: common_pb2.Audio) -> dict[str, Any]:
    """An Audio message without its samples: format, length and the sha256 of its bytes."""
    width = 2 if audio.encoding == common_pb2.PCM_S16LE else 4
    samples = len(audio.data) // (width * max(audio.channels, 1))
    return {
        "encoding": common_pb2.AudioEncoding.Name(audio.encoding),
        "sample_rate": audio.sample_rate,
        "channels": audio.channels,
        "seconds": round(samples / audio.sample_rate, 6) if audio.sample_rate else None,
        "bytes": len(audio.data),
        "sha256": hashlib.sha256(audio.data).hexdigest(),
    }


def describe_request(request: Message) -> dict[str, Any]:
    """The request as JSON (proto field names), each audio field summarised by ``describe_audio``."""
    out = json_format.MessageToDict(request, preserving_proto_field_name=True)
    for f in request.DESCRIPTOR.fields:
        if f.message_type is not None and f.message_type.full_name == common_pb2.Audio.DESCRIPTOR.full_name:
            if request.HasField(f.name):
                out[f.name] = describe_audio(getattr(request, f.name))
    return out


def _file(what: str, path: Path | str, sha: str) -> dict[str, str]:
    return {"what": what, "path": str(path), "sha256": sha}


def _item_file(item: ManifestItem, what: str) -> dict[str, str]:
    return _file(f"{what} (item {item.id})", item.audio_path, item.audio_sha256)


class SentRequests:
    """Rebuilds the request of any row of one run directory."""

    def __init__(self, run_dir: Path, record: dict[str, Any], manifest: ManifestSet, tables: RunTables) -> None:
        self.run_dir, self.record, self.tables = run_dir, record, tables
        self.config: dict[str, Any] = record.get("config", {})
        self.items = manifest.by_id()
        self.references = reference_items(manifest)

    def of(self, run_row: RunRow) -> list[Sent]:
        """What was sent for ``run_row``: one request, or for a degradation one per transform step."""
        build = {
            "generation": self._generation,
            "detection": self._detection,
            "measurement": self._measurement,
            "degradation": self._degradation,
        }[run_row.stage]
        try:
            return build(run_row.row)
        except (AudioFormatError, OSError, KeyError, ValueError) as e:  # MissingInput is a ValueError
            service = run_row.services[0] if run_row.services else ""
            return [Sent(service, "", note=f"the request cannot be rebuilt: {type(e).__name__}: {e}")]

    def _service_config(self, section: str, name: str) -> ServiceConfig:
        model = GeneratorConfig if section == "generators" else ServiceConfig
        return model.model_validate(self.config[section][name])

    def _generation(self, row: dict[str, Any]) -> list[Sent]:
        gen, task, item = row["generator"], row["task"], self.items[row["item"]]
        if is_partial(task):
            how = row.get("partial") or {}
            note = (
                f"a partial fake of item {item.id}: the scorer aligned its transcript (Align), {gen} was asked "
                f"for {how.get('via', 'the fake speech')}, and the answer was spliced in; its spans are the "
                "row's `partial` (orchestrator export-labels)"
            )
            return [Sent(gen, SYNTHESIZE, note=note)]
        job = GenerationJob(gen, task, item, self.references[item.id])
        previous = self.tables.tables["generation"].get(row.get("reference_clip") or "")
        sent = Sent(gen, SYNTHESIZE)
        needs = task_inputs(task)
        if needs.reference:
            sent.inputs["reference_audio"] = (
                _file(f"I2D iteration {previous['id']}", self.run_dir / previous["audio"], previous["audio_sha256"])
                if previous is not None
                else _item_file(job.reference, "target speaker")
            )
        if needs.source:
            sent.inputs["source_audio"] = _item_file(item, "source")
        request = synthesize_request(
            job,
            self._service_config("generators", gen),
            self.run_dir,
            GenerationRecord.from_dict(row),
            GenerationRecord.from_dict(previous) if previous is not None else None,
        )
        sent.request = describe_request(request)
        return [sent]

    def _clip(self, clip_id: str) -> Clip:
        """A clip detectors are sent: a corpus item or a generated clip."""
        if clip_id in self.items:
            return Clip.of_item(self.items[clip_id])
        g = self.tables.tables["generation"][clip_id]
        return Clip.of_generation(GenerationRecord.from_dict(g), self.items[g["item"]], self.run_dir)

    def _detection(self, row: dict[str, Any]) -> list[Sent]:
        detector, condition = row["detector"], condition_of(row)
        entry = self.config["detectors"][detector]
        if "fusion" in entry:
            members = ", ".join(entry["fusion"]["members"])
            return [Sent(detector, "", note=f"a fused detector: no service was sent anything; made from {members}")]
        sent = Sent(detector, SCORE_BATCH, note="one item of a ScoreBatch request")
        clip = self._clip(row["clip"])
        source = _file(f"{clip.kind} clip {clip.id}", clip.path, clip.sha256)
        if condition == CLEAN:
            sent.inputs["audio"] = source
            audio = read_clip(clip.path, clip.sha256, clip.id)
        else:
            key = f"{condition}|{clip.id}"
            degraded = self.tables.tables["degradation"].get(key)
            sent.inputs["audio"] = {**source, "what": f"{source['what']}, under condition {condition!r}"}
            if degraded is None or degraded.get("status") != "ok":
                why = "not recorded" if degraded is None else degraded.get("reason", "failed")
                sent.note = f"nothing was sent: the clip was not delivered under condition {condition!r} ({key}: {why})"
                return [sent]
            sent.inputs["audio"] = _file(
                f"{key} (degraded)", self.run_dir / degraded["audio"], degraded["audio_sha256"]
            )
            audio = read_clip(self.run_dir / degraded["audio"], degraded["audio_sha256"], key)
        request = score_request(row["id"], audio, self._service_config("detectors", detector))
        sent.request = describe_request(request)
        return [sent]

    def _measurement(self, row: dict[str, Any]) -> list[Sent]:
        clip = self._clip(row["id"])
        g = clip.generation()
        sent = Sent("scorer", MEASURE_CLIPS, note="one item of a MeasureClips request")
        sent.inputs["audio"] = _file(f"generated clip {clip.id}", clip.path, clip.sha256)
        sent.inputs["speaker_reference"] = _item_file(self.items[str(g.speaker_reference)], "speaker reference")
        request = measure_request(clip, list(self.config["scorer"]["metrics"]), self.items)
        if request.HasField("source_reference"):
            sent.inputs["source_reference"] = _item_file(clip.item, "source")
        sent.request = describe_request(request)
        return [sent]

    def _degradation(self, row: dict[str, Any]) -> list[Sent]:
        condition, clip = row["condition"], self._clip(row["clip"])
        steps = self.config.get("conditions", {}).get(condition, [])
        seed = condition_seed(int(self.config["protocol"]["seed"]), condition, clip.id)
        source = _file(f"{clip.kind} clip {clip.id}", clip.path, row.get("source_sha256") or clip.sha256)
        summary = {"condition": condition, "steps": steps, "seed": seed}
        out = []
        for service, request_id in self.tables.condition_services(condition).items():
            request_id = request_id.format(id=row["id"])
            if request_id:
                request = {**summary, "request_id": request_id}
                out.append(Sent(service, TRANSFORM, request, {"audio": source}, "the audio of the steps before it"))
            else:
                note = "attack queries are ScoreBatch calls with ids attack-N that name no clip; see attacks/"
                out.append(Sent(service, SCORE_BATCH, summary, {"audio": source}, note))
        if not out:  # every step ran in the orchestrator (resample, codec, noise, gain)
            out.append(Sent("", "", summary, {"audio": source}, "every step ran in the orchestrator: no service"))
        return out

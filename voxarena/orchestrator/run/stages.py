"""The four stages of a run, each one call that does its work and appends its rows to the run store.

- ``Generate``: one generation (a ``GenerationJob`` at an I2D iteration) -> a generations row.
- ``Degrade`` (``degrade``): a clip as a condition delivers it, computed once and stored (degradations).
- ``Detect``: a batch of clips, one detector, one condition -> detections rows.
- ``Measure``: a batch of generated clips -> the scorer's raw measurements rows.

The clips they pass along (``clips.Clip``) are read through ``clips.read_clip``, which checks each
file against its recorded sha256.

A response is validated before anything is stored, and every failure becomes a row with its reason
(``failures.failed_row``); the run goes on. Audio is appended to the store before the row that
points to it, so a run killed at any moment resumes to the same results.
"""

from __future__ import annotations

from pathlib import Path

from google.protobuf import json_format

from voxarena.codec import AudioClip, AudioFormatError, clip_to_wav_bytes, encode_audio
from voxarena.orchestrator.errors import CallFailed
from voxarena.orchestrator.fleet.fleet import Service, ServiceFleet
from voxarena.orchestrator.run.attribution import checked_attribution, traces
from voxarena.orchestrator.run.config import ProtocolConfig, ServiceConfig
from voxarena.orchestrator.run.degrade import ConditionFailed, Degrade
from voxarena.orchestrator.run.manifest import ManifestItem
from voxarena.orchestrator.run.partial import PartialConfig, PartialError, is_partial
from voxarena.orchestrator.run.partial_stage import MakePartial
from voxarena.orchestrator.run.plan import GenerationJob
from voxarena.orchestrator.run.segments import checked_native, derived, native_hop, wanted
from voxarena.orchestrator.run.validation import ResponseInvalid, validate_generation, validate_score
from voxarena.orchestrator.run.watermark import Watermark
from voxarena.orchestrator.store.clips import Clip, item_audio, read_clip
from voxarena.orchestrator.store.failures import Failure, call_failed_row, failed_row, item_error_row
from voxarena.orchestrator.store.records import OK, DetectionRecord, GenerationRecord, MeasurementRecord
from voxarena.orchestrator.store.run_store import CLEAN, RunStore, detection_id
from voxarena.tasks import task_inputs
from voxarena.v1 import detector_pb2, generator_pb2, scorer_pb2


def takes_reference(task: str) -> bool:
    """Whether ``task``'s clip speaks as another speaker (a reference): a partial fake keeps its own speaker."""
    return not is_partial(task) and task_inputs(task).reference


class MissingInput(ValueError):
    """The item lacks an input its task needs (e.g. no text for TTS)."""


def synthesize_request(
    job: GenerationJob, cfg: ServiceConfig, run_dir: Path, row: GenerationRecord, previous: GenerationRecord | None
) -> generator_pb2.SynthesizeRequest:
    """The request for ``job`` to a generator configured as ``cfg``, from the inputs its task takes; fills
    the row's ``text``. I2D iteration k > 1 takes iteration k-1's clip (``previous``, stored under
    ``run_dir``) as its reference audio and, for CLONE, the target text as its reference text. The one
    builder: the run sends it, ``orchestrator explain`` shows it."""
    item, needs = job.item, task_inputs(job.task)
    req = generator_pb2.SynthesizeRequest(
        request_id=row.id,
        seed=item.seed,
        task=generator_pb2.Task.Value(job.task),
        voice=cfg.voice,
        parameters=cfg.parameters,
    )
    if needs.text:
        if not item.text:
            raise MissingInput(f"{row.id}: item has no text (no transcript and no prompts configured)")
        req.text = item.text
        row.text = item.text
    if needs.reference:
        if previous is not None:
            reference = read_clip(run_dir / str(previous.audio), str(previous.audio_sha256), previous.id)
        else:
            reference = item_audio(job.reference)
        req.reference_audio.CopyFrom(encode_audio(reference))
    if needs.reference_text:
        req.reference_text = item.text if previous is not None else job.reference.text
    if needs.source:
        req.source_audio.CopyFrom(encode_audio(item_audio(item)))
        # The words the clip should say, for WER: known for a transcript, not for a prompt.
        row.text = item.text if item.text_source == "transcript" else ""
    return req


def score_request(request_id: str, audio: AudioClip, cfg: ServiceConfig) -> detector_pb2.ScoreRequest:
    """One clip as a detector configured as ``cfg`` is sent it (in a ScoreBatch)."""
    return detector_pb2.ScoreRequest(request_id=request_id, audio=encode_audio(audio), parameters=cfg.parameters)


def measure_request(c: Clip, metrics: list[str], items: dict[str, ManifestItem]) -> scorer_pb2.ClipRequest:
    """A generated clip as the scorer is sent it (in a MeasureClips batch), with its references from ``items``."""
    g = c.generation()
    ref = items[str(g.speaker_reference)]
    req = scorer_pb2.ClipRequest(
        request_id=c.id,
        metrics=metrics,
        text=g.text or "",
        audio=encode_audio(read_clip(c.path, c.sha256, c.id)),
        speaker_reference=encode_audio(item_audio(ref)),
    )
    # An aligned reference: the source of a reconstruction/conversion, or the original
    # recording of the very words a TTS clip says (transcripts, not prompts).
    from_source = task_inputs(c.task).source
    if from_source or (c.task == "TTS" and c.item.text_source == "transcript"):
        req.source_reference.CopyFrom(encode_audio(item_audio(c.item)))
        req.reference_aligned = from_source
    json_format.ParseDict(g.timing, req.generation_timing)
    return req


class Generate:
    def __init__(self, store: RunStore, fleet: ServiceFleet, protocol: ProtocolConfig) -> None:
        self.store, self.fleet, self.protocol = store, fleet, protocol
        self.watermark = Watermark(store, fleet)
        self.partial = MakePartial(fleet, protocol, self.watermark)

    @staticmethod
    def _base(job: GenerationJob, iteration: int, previous: GenerationRecord | None) -> GenerationRecord:
        return GenerationRecord(
            id=job.id(iteration),
            status="pending",  # until the call's outcome is known
            generator=job.generator,
            task=job.task,
            item=job.item.id,
            seed=job.item.seed,
            iteration=iteration,
            # Whose voice SIM compares with: the target speaker where the task takes one (every I2D iteration).
            speaker_reference=job.reference.id if takes_reference(job.task) else job.item.id,
            reference_clip=previous.id if previous is not None else None,
        )

    def __call__(
        self, job: GenerationJob, iteration: int = 1, previous: GenerationRecord | None = None
    ) -> GenerationRecord:
        svc = self.fleet[job.generator]
        row = self._base(job, iteration, previous)
        try:
            mark = getattr(svc.cfg, "watermark", None)
            if is_partial(job.task):
                clip, resp = self.partial(job, svc, row)  # marks the generator's output before the splice
            else:
                clip, resp = self._synthesize(job, svc, row, previous)
                if mark is not None:
                    clip = self.watermark(row, clip, mark)
            rel, sha = self.store.put_audio(clip_to_wav_bytes(clip))
            row.status = OK
            row.audio, row.audio_sha256 = rel, sha
            row.sample_rate, row.duration = clip.sample_rate, round(clip.duration, 6)
            row.voice = resp.voice
            row.timing = json_format.MessageToDict(resp.timing, preserving_proto_field_name=True)
        except CallFailed as e:
            row = call_failed_row(row, e, attempts=e.attempts)
        except ResponseInvalid as e:
            row = failed_row(row, Failure.INVALID_RESPONSE, str(e))
        except (MissingInput, AudioFormatError, PartialError) as e:
            row = failed_row(row, Failure.INPUT, str(e))
        self.store.generations.append(row)
        return row

    def _synthesize(
        self, job: GenerationJob, svc: Service, row: GenerationRecord, previous: GenerationRecord | None
    ) -> tuple[AudioClip, generator_pb2.SynthesizeResponse]:
        """One Synthesize call for ``job`` and its validated clip; fills the row's text and attempts."""
        req = synthesize_request(job, svc.cfg, self.store.dir, row, previous)
        resp, attempts = svc.call("Synthesize", req)
        row.attempts = attempts
        p = self.protocol
        timing_scope = svc.role_info(generator_pb2.GeneratorInfo).model.timing_scope
        clip = validate_generation(row.id, req, resp, svc.declared_rate(), timing_scope, p.min_duration, p.max_duration)
        return clip, resp

    def upstream_failed(self, job: GenerationJob, iteration: int, previous: GenerationRecord) -> GenerationRecord:
        """Iteration ``iteration`` of an I2D chain whose previous one failed: nothing to iterate on."""
        base = self._base(job, iteration, previous)
        base.speaker_reference = previous.speaker_reference or ""
        row = failed_row(
            base, Failure.UPSTREAM_FAILED, f"{base.id}: I2D iteration {iteration - 1} ({previous.id}) failed"
        )
        self.store.generations.append(row)
        return row


class Detect:
    def __init__(
        self, store: RunStore, fleet: ServiceFleet, degrade: Degrade, partial: PartialConfig | None = None
    ) -> None:
        """``partial``: the run's partial-fake settings when it makes partial fakes (segment scores are then
        asked of every detector for them and the bona fide clips: ``segments``)."""
        self.store, self.fleet, self.degrade, self.partial = store, fleet, degrade, partial

    def __call__(self, detector: str, clips: list[Clip], condition: str = CLEAN) -> list[DetectionRecord]:
        svc = self.fleet[detector]
        rows: list[DetectionRecord] = []
        items, sent, audios = [], [], []
        for c in clips:
            base = DetectionRecord(
                id=detection_id(detector, condition, c.id),
                status="pending",  # until the detector's answer is known
                detector=detector,
                condition=condition,
                clip=c.id,
                kind=c.kind,
                **c.origin(),
            )
            try:
                audio = self.degrade(c, condition)
                request = score_request(base.id, audio, svc.cfg)
                request.want_segments = wanted(self.partial, c.kind, c.task) and native_hop(svc) > 0
                request.want_attribution = traces(svc)
            except ConditionFailed as e:
                rows.append(failed_row(base, e.failure, str(e), e.code))
                continue
            except (AudioFormatError, OSError) as e:
                rows.append(failed_row(base, Failure.INPUT, str(e)))
                continue
            items.append(request)
            sent.append(base)
            audios.append(audio)
        if items:
            rows.extend(self._score(detector, svc, items, sent, audios))
        for r in rows:
            self.store.detections.append(r)
        return rows

    def _score(
        self, detector: str, svc: Service, items: list, sent: list[DetectionRecord], audios: list[AudioClip]
    ) -> list[DetectionRecord]:
        try:
            resp, _ = svc.call("ScoreBatch", detector_pb2.ScoreBatchRequest(items=items))
            if len(resp.items) != len(items):
                raise ResponseInvalid(f"{detector}: batch answered {len(resp.items)} items for {len(items)} sent")
        except CallFailed as e:
            return [call_failed_row(b, e) for b in sent]
        except ResponseInvalid as e:
            return [failed_row(b, Failure.INVALID_RESPONSE, str(e)) for b in sent]
        rows = []
        for base, out, request, audio in zip(sent, resp.items, items, audios):
            if out.HasField("error"):
                rows.append(item_error_row(base, out.error.code, out.error.message))
                continue
            try:
                score = validate_score(base.clip, base.id, out.result)
                if request.want_attribution:
                    base.attribution = checked_attribution(base.clip, out.result, svc)
                if request.want_segments:
                    base.segments = checked_native(base.clip, out.result, audio, native_hop(svc))
                elif self.partial is not None and wanted(self.partial, base.kind, base.task):
                    base.segments = derived(base.clip, svc, request, audio, self.partial)
            except ResponseInvalid as e:
                rows.append(failed_row(base, Failure.INVALID_RESPONSE, str(e)))
                continue
            except CallFailed as e:  # a window batch of derived segment scores
                rows.append(call_failed_row(base, e))
                continue
            base.status, base.score, base.is_llr = OK, score, out.result.is_llr
            base.wall_seconds = out.result.timing.wall_seconds
            rows.append(base)
        return rows


class Measure:
    def __init__(
        self, store: RunStore, fleet: ServiceFleet, metrics: list[str], items: dict[str, ManifestItem]
    ) -> None:
        self.store, self.fleet, self.metrics, self.items = store, fleet, list(metrics), items

    def __call__(self, clips: list[Clip]) -> list[MeasurementRecord]:
        rows: list[MeasurementRecord] = []
        reqs, sent = [], []
        for c in clips:
            base = MeasurementRecord(
                id=c.id,
                status="pending",  # until the scorer's answer is known
                **c.origin(),
            )
            try:
                reqs.append(measure_request(c, self.metrics, self.items))
            except (AudioFormatError, OSError) as e:
                rows.append(failed_row(base, Failure.INPUT, str(e)))
                continue
            sent.append(base)
        if reqs:
            try:
                resp, _ = self.fleet.scorer.call("MeasureClips", scorer_pb2.MeasureClipsRequest(items=reqs))
                for base, m in zip(sent, resp.items):
                    base.status, base.values = OK, dict(m.values)
                    base.notes, base.errors = dict(m.notes), dict(m.errors)
                    rows.append(base)
            except CallFailed as e:
                rows.extend(call_failed_row(b, e) for b in sent)
        for r in rows:
            self.store.measurements.append(r)
        return rows

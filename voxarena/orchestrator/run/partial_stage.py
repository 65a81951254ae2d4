"""The generation of a PARTIAL_* job (``Generate`` hands it here): the item aligned by the scorer (once per
item and run), its spans chosen, one generator call for the fake speech, the splice (``partial``).

Any reason the item cannot become a partial fake (its transcript does not align, too few words, a span the
clip cannot hold, a reconstruction of another length) is a ``PartialError``: the row fails naming the item
and the reason, nothing else is lost, and a resume with ``--retry-failed`` tries it again.
"""

from __future__ import annotations

import threading

import numpy as np

from voxarena.codec import AudioClip, encode_audio
from voxarena.orchestrator.errors import CallFailed
from voxarena.orchestrator.fleet.fleet import Service, ServiceFleet
from voxarena.orchestrator.run.config import ProtocolConfig
from voxarena.orchestrator.run.manifest import ManifestItem
from voxarena.orchestrator.run.partial import (
    METHODS,
    PartialError,
    choose_spans,
    generator_task,
    make_partial,
    substitutes,
)
from voxarena.orchestrator.run.plan import GenerationJob
from voxarena.orchestrator.run.validation import validate_generation
from voxarena.orchestrator.store.clips import item_audio
from voxarena.orchestrator.store.records import GenerationRecord
from voxarena.v1 import generator_pb2, scorer_pb2

MIN_WORDS_SECONDS = 0.05  # new words said: a generated clip this short at least


class MakePartial:
    def __init__(self, fleet: ServiceFleet, protocol: ProtocolConfig, watermark=None) -> None:
        """``watermark``: ``run.watermark.Watermark``, for a generator that marks its outputs."""
        self.watermark = watermark
        self.fleet, self.protocol, self.cfg = fleet, protocol, protocol.partial_config
        self._alignments: dict[str, tuple[list[tuple[str, float, float]], str] | PartialError] = {}
        self._lock = threading.Lock()

    def alignment(self, item: ManifestItem, audio: AudioClip) -> tuple[list[tuple[str, float, float]], str]:
        """(words with their start and end seconds, the aligner) of ``item``, asked of the scorer once."""
        with self._lock:
            known = self._alignments.get(item.id)
        if known is None:
            if item.text_source != "transcript":
                known = PartialError(f"item {item.id} has no transcript to align (its text is {item.text_source!r})")
            else:
                request = scorer_pb2.AlignRequest(
                    request_id=f"align|{item.id}", audio=encode_audio(audio), text=item.text
                )
                try:
                    resp, _ = self.fleet.scorer.call("Align", request)
                    known = ([(w.word, w.start_seconds, w.end_seconds) for w in resp.words], resp.aligner)
                except CallFailed as e:
                    known = PartialError(f"the scorer could not align item {item.id}: {e}")
            with self._lock:
                self._alignments[item.id] = known
        if isinstance(known, PartialError):
            raise known
        return known

    def __call__(
        self, job: GenerationJob, svc: Service, row: GenerationRecord
    ) -> tuple[AudioClip, generator_pb2.SynthesizeResponse]:
        """The spliced clip and the generator's response; fills the row's text, attempts and ``partial``."""
        info = svc.role_info(generator_pb2.GeneratorInfo)
        via = generator_task(job.task, {generator_pb2.Task.Name(t) for t in info.tasks})
        if via is None:
            raise PartialError(f"{row.id}: {job.generator} declares none of the tasks {job.task} needs")
        item = job.item
        original = item_audio(item)
        try:
            words, aligner = self.alignment(item, original)
            spans = choose_spans(len(words), item.seed, job.task, self.cfg)
        except PartialError as e:
            raise PartialError(f"{row.id}: {e}") from None
        req = generator_pb2.SynthesizeRequest(
            request_id=row.id,
            seed=item.seed,
            task=generator_pb2.Task.Value(via),
            voice=svc.cfg.voice,
            parameters=svc.cfg.parameters,
        )
        said: list[str] = []
        if via == "RECONSTRUCT":
            req.source_audio.CopyFrom(encode_audio(original))
            row.text = item.text
        else:
            first, last = spans[0]
            said = substitutes(item.seed, [w for w, _, _ in words[first : last + 1]])
            req.text = " ".join(said)
            if via == "CLONE":  # the speaker's own voice: the clip itself is the reference
                req.reference_audio.CopyFrom(encode_audio(original))
                req.reference_text = item.text
            row.text = " ".join([w for w, _, _ in words[:first]] + said + [w for w, _, _ in words[last + 1 :]])
        resp, attempts = svc.call("Synthesize", req)
        row.attempts = attempts
        low = self.protocol.min_duration if via == "RECONSTRUCT" else MIN_WORDS_SECONDS
        scope = info.model.timing_scope
        generated = validate_generation(row.id, req, resp, svc.declared_rate(), scope, low, self.protocol.max_duration)
        mark = getattr(svc.cfg, "watermark", None)
        if mark is not None and self.watermark is not None:  # the vendor marks its output; the forger splices it
            generated = same_length(self.watermark(row, generated, mark), generated)
        try:
            clip, records = make_partial(job.task, original, words, spans, generated, self.cfg.crossfade_ms)
        except PartialError as e:
            raise PartialError(f"{row.id}: {e}") from None
        if said:
            records[0]["said"] = " ".join(said)
        fake = sum(r["end"] - r["start"] for r in records)
        row.partial = {
            "method": METHODS[job.task],
            "via": via,
            "aligner": aligner,
            "crossfade_ms": self.cfg.crossfade_ms,
            "spans": records,
            "fake_fraction": round(fake / clip.samples.size, 6),
        }
        return clip, resp


def same_length(marked: AudioClip, original: AudioClip) -> AudioClip:
    """``marked`` cut or completed to ``original``'s length: a watermark may drop the last few milliseconds
    (Perth-Net's inverse STFT), which the splice's sample positions cannot lose; the completion is the
    original's own tail, unmarked."""
    n, m = original.samples.size, marked.samples.size
    if m >= n:
        return AudioClip(marked.samples[:n], marked.sample_rate)
    tail = original.as_float32()[m:]
    return AudioClip(np.concatenate([marked.as_float32(), tail]).astype(np.float32), marked.sample_rate)

"""The servicers of the model roles (KServe's shape: servicer, interceptor, server): each is thin.

A servicer validates and converts the request, calls the model, converts the answer back, echoes
``request_id`` and ``seed`` and fills the timing. Logging, latency and the mapping of errors to status
codes live in ``interceptors``; building and running the gRPC server in ``server``. The transform role's
servicer is in ``transform_servicer``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import grpc
import numpy as np
from google.protobuf import timestamp_pb2

from voxarena.attribution import answer_problems, spec_problems
from voxarena.codec import AudioClip, AudioFormatError, decode_audio, encode_audio
from voxarena.segments import segment_count, valid_hop
from voxarena.streaming import declaration_problems
from voxarena.tasks import task_inputs
from voxarena.v1 import common_pb2, detector_pb2, detector_pb2_grpc, generator_pb2, generator_pb2_grpc

from .errors import InternalError, InvalidArgument, NotReady, ServiceError, Unimplemented
from .model import DetectorModel, GeneratorModel, SynthesisRequest, _ModelBase
from .stream_servicer import StreamSession

DEFAULT_MAX_MESSAGE_MB = 64
RESPONSE_HEADROOM_BYTES = 64 * 1024  # a response's fields beside its audio (ids, timing, voice)


def _timestamp(t: float) -> timestamp_pb2.Timestamp:
    ts = timestamp_pb2.Timestamp()
    ts.FromNanoseconds(int(t * 1e9))
    return ts


class Stopwatch:
    """Times a native call: wall (monotonic), start/end timestamps, process CPU seconds.

    ``with Stopwatch(scope) as sw: ...`` then ``sw.to_proto()`` is the ``voxarena.v1.Timing`` of a
    response; public for servicers that fill timings without the model base classes (the scorer)."""

    def __init__(self, scope: str) -> None:
        self.scope = scope

    def __enter__(self) -> Stopwatch:
        self._start, self._t0, self._cpu0 = time.time(), time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall = time.perf_counter() - self._t0
        self.cpu = time.process_time() - self._cpu0
        self._end = self._start + self.wall

    def to_proto(self) -> common_pb2.Timing:
        return common_pb2.Timing(
            wall_seconds=self.wall,
            start=_timestamp(self._start),
            end=_timestamp(self._end),
            scope=self.scope,
            cpu_seconds=self.cpu,
        )


def model_info(model: _ModelBase) -> common_pb2.ModelInfo:
    info = common_pb2.ModelInfo(
        name=model.name,
        version=model.version,
        licence=model.licence,
        weights_sha256=model.weights_sha256(),
        native_sample_rate=model.native_sample_rate,
        deterministic=model.deterministic,
        timing_scope=model.timing_scope,
        metadata=model.metadata(),
    )
    count = model.parameter_count()
    if count is not None:
        info.parameter_count = int(count)
    return info


def _options(model: _ModelBase) -> list[common_pb2.OptionSpec]:
    return [
        common_pb2.OptionSpec(name=o.name, description=o.description, default_value=o.default) for o in model.options
    ]


def _decode(msg: common_pb2.Audio, what: str, max_seconds: float) -> AudioClip:
    """The clip, or INVALID_ARGUMENT naming what is wrong; a clip over ``max_seconds`` is refused from
    its byte count, before any decoding work."""
    try:
        return decode_audio(msg, what, max_seconds=max_seconds)
    except AudioFormatError as e:
        raise InvalidArgument(str(e)) from None


class _ModelServicer:
    """What both roles' servicers share: the model, and UNAVAILABLE until it has loaded."""

    def __init__(self, model: _ModelBase) -> None:
        self.model = model

    def _require_ready(self) -> None:
        if not self.model.ready:
            raise NotReady(f"{self.model.name} is still loading")


class GeneratorServicer(_ModelServicer, generator_pb2_grpc.GeneratorServiceServicer):
    """Thin: validate and convert, call the model, convert back, echo ids and seed, fill timing.

    Audio that would not fit a response (``max_message_mb``) is INVALID_ARGUMENT saying how long it is:
    options inside their ranges can still ask for too much together (espeak-ng at 80 words per minute
    with a 1 s gap between words made 55 minutes, 138 MiB, of 5000 characters), and grpc would otherwise
    fail the send with RESOURCE_EXHAUSTED, which the orchestrator takes for a busy service and retries.
    """

    model: GeneratorModel

    def __init__(self, model: GeneratorModel, max_message_mb: float = DEFAULT_MAX_MESSAGE_MB) -> None:
        super().__init__(model)
        self.max_audio_bytes = int(max_message_mb * 1024 * 1024) - RESPONSE_HEADROOM_BYTES

    def GetInfo(self, request: common_pb2.GetInfoRequest, context: grpc.ServicerContext) -> generator_pb2.GeneratorInfo:
        self._require_ready()
        m = self.model
        return generator_pb2.GeneratorInfo(
            model=model_info(m),
            family=generator_pb2.GeneratorFamily.Value(m.family),
            tasks=[generator_pb2.Task.Value(t) for t in m.tasks],
            voices=[
                generator_pb2.VoiceSpec(
                    name=v.name, language=v.language, description=v.description, sample_rate=v.sample_rate
                )
                for v in m.voices
            ],
            options=_options(m),
            max_text_chars=m.max_text_chars,
            max_source_seconds=m.max_source_seconds,
            min_source_seconds=m.min_source_seconds,
        )

    def _to_request(self, req: generator_pb2.SynthesizeRequest) -> SynthesisRequest:
        m = self.model
        if not req.request_id:
            raise InvalidArgument("request_id is empty")
        task = generator_pb2.Task.Name(req.task) if req.task in generator_pb2.Task.values() else str(req.task)
        if task not in m.tasks:
            raise Unimplemented(f"task {task} is not supported by {m.name}; supported: {', '.join(m.tasks)}")
        needs = task_inputs(task)
        if needs.text:
            if not req.text.strip():
                raise InvalidArgument(f"{task} needs text, got empty text")
            if len(req.text) > m.max_text_chars:
                raise InvalidArgument(
                    f"text has {len(req.text)} characters; {m.name} accepts at most {m.max_text_chars}"
                )
        voice_names = [v.name for v in m.voices]
        if req.voice and voice_names and req.voice not in voice_names:
            raise Unimplemented(f"voice {req.voice!r} is not offered by {m.name}; voices: {', '.join(voice_names)}")
        out = SynthesisRequest(
            request_id=req.request_id,
            seed=req.seed,
            task=task,
            text=req.text,
            language=req.language,
            voice=req.voice or (voice_names[0] if voice_names else ""),
            reference_text=req.reference_text,
            parameters=m.resolve_options(dict(req.parameters)),
        )
        if needs.reference:
            out.reference_audio = self._source(req, task, "reference_audio")
        if needs.source:
            out.source_audio = self._source(req, task, "source_audio")
        return out

    def _source(self, req: generator_pb2.SynthesizeRequest, task: str, field: str) -> AudioClip:
        """A reference or source audio the task needs, decoded and within the declared durations."""
        m = self.model
        if not req.HasField(field):
            raise InvalidArgument(f"{task} needs {field}")
        clip = _decode(getattr(req, field), field, m.max_source_seconds)
        if clip.duration < m.min_source_seconds:
            raise InvalidArgument(
                f"{field} is {clip.duration:.2f} s; {m.name} needs at least {m.min_source_seconds:g} s"
            )
        return clip

    def Synthesize(
        self, request: generator_pb2.SynthesizeRequest, context: grpc.ServicerContext
    ) -> generator_pb2.SynthesizeResponse:
        self._require_ready()
        req = self._to_request(request)
        with Stopwatch(self.model.timing_scope) as sw:
            result = self.model.synthesize(req)
        audio = encode_audio(result.audio)
        if audio.ByteSize() > self.max_audio_bytes:
            raise InvalidArgument(
                f"the audio made is {result.audio.duration:.0f} s ({audio.ByteSize() / 2**20:.1f} MiB), more than a "
                f"response carries ({self.max_audio_bytes / 2**20:.1f} MiB): ask for less (shorter text, faster "
                "speech, shorter pauses)"
            )
        return generator_pb2.SynthesizeResponse(
            request_id=request.request_id,
            seed=request.seed if result.seed is None else result.seed,
            audio=audio,
            timing=sw.to_proto(),
            voice=result.voice or req.voice,
        )


class DetectorServicer(_ModelServicer, detector_pb2_grpc.DetectorServiceServicer):
    model: DetectorModel

    def __init__(self, model: DetectorModel) -> None:
        if not valid_hop(model.segment_hop_seconds):
            raise ValueError(
                f"{model.name}: segment_hop_seconds {model.segment_hop_seconds} is not 0 or in [0.001, 10]"
            )
        problems = [f"attribution: {p}" for p in spec_problems(model.attribution)] + [
            f"streaming: {p}" for p in stream_declaration_problems(model)
        ]
        if problems:
            raise ValueError(f"{model.name}: {'; '.join(problems)}")
        super().__init__(model)

    def _attribution(
        self, clips: list[AudioClip], options: list[dict[str, str]], wanted: list[bool]
    ) -> list[list[detector_pb2.Attribution]]:
        """The attribution of the clips whose request set want_attribution, when the model declares it (checked:
        every declared level and label, probabilities in [0, 1] summing to 1); empty for the others."""
        m = self.model
        out: list[list[detector_pb2.Attribution]] = [[] for _ in clips]
        chosen = [i for i, want in enumerate(wanted) if want] if m.attribution else []
        if not chosen:
            return out
        answers = m.attribute_batch([clips[i] for i in chosen], [options[i] for i in chosen])
        if len(answers) != len(chosen):
            raise InternalError(f"{m.name}: attribute_batch answered {len(answers)} clips for {len(chosen)}")
        for i, answer in zip(chosen, answers):
            declared = [level for level, _ in m.attribution]
            order = declared if set(answer) == set(declared) else list(answer)  # a model's dict in any order
            pairs = [(level, answer[level]) for level in order]
            problems = answer_problems(m.attribution, pairs)
            if problems:
                raise InternalError(f"{m.name}: attribution: {'; '.join(problems)}")
            out[i] = [
                detector_pb2.Attribution(level=level, probabilities={k: float(v) for k, v in probabilities.items()})
                for level, probabilities in pairs
            ]
        return out

    def GetInfo(self, request: common_pb2.GetInfoRequest, context: grpc.ServicerContext) -> detector_pb2.DetectorInfo:
        self._require_ready()
        m = self.model
        return detector_pb2.DetectorInfo(
            model=model_info(m),
            family=detector_pb2.DetectorFamily.Value(m.family),
            calibrated=m.serves_llr,
            max_batch_size=m.max_batch_size,
            options=_options(m),
            min_seconds=m.min_seconds,
            max_seconds=m.max_seconds,
            sample_rates=sorted(m.sample_rates),
            segment_hop_seconds=m.segment_hop_seconds,
            attribution=[detector_pb2.AttributionSpec(level=lv, labels=list(labels)) for lv, labels in m.attribution],
            streaming=streaming_info(m),
        )

    def _clip(self, item: detector_pb2.ScoreRequest) -> tuple[AudioClip, dict[str, str]]:
        """The item's validated clip and its options (every declared one, the request's over the defaults)."""
        if not item.request_id:
            raise InvalidArgument("request_id is empty")
        m = self.model
        options = m.resolve_options(dict(item.parameters))
        if m.sample_rates and item.audio.sample_rate not in m.sample_rates:
            raise InvalidArgument(
                f"audio at {item.audio.sample_rate} Hz; {m.name} accepts "
                f"{', '.join(str(r) for r in sorted(m.sample_rates))} Hz"
            )
        clip = _decode(item.audio, "audio", m.max_seconds)
        if clip.duration < m.min_seconds:
            raise InvalidArgument(
                f"audio is {clip.duration:.4f} s ({clip.samples.size} samples at {clip.sample_rate} Hz); "
                f"{m.name} needs at least {m.min_seconds:g} s"
            )
        return clip, options

    def _segments(
        self, clips: list[AudioClip], options: list[dict[str, str]], wanted: list[bool]
    ) -> list[detector_pb2.SegmentScores | None]:
        """The segment scores of the clips whose request set want_segments, when the model has them (checked:
        the contract's count, all finite); None for the others."""
        m = self.model
        out: list[detector_pb2.SegmentScores | None] = [None] * len(clips)
        chosen = [i for i, want in enumerate(wanted) if want] if m.segment_hop_seconds > 0 else []
        if not chosen:
            return out
        answers = m.segment_batch([clips[i] for i in chosen], [options[i] for i in chosen])
        if len(answers) != len(chosen):
            raise InternalError(f"{m.name}: segment_batch answered {len(answers)} clips for {len(chosen)}")
        for i, scores in zip(chosen, answers):
            values = np.asarray(scores, dtype=np.float32)
            n = segment_count(clips[i].samples.size, clips[i].sample_rate, m.segment_hop_seconds)
            if values.shape != (n,) or not np.all(np.isfinite(values)):
                raise InternalError(
                    f"{m.name}: {values.size} segment scores for a clip of {clips[i].samples.size} samples at "
                    f"{clips[i].sample_rate} Hz; the contract asks {n} finite ones at {m.segment_hop_seconds:g} s"
                )
            out[i] = detector_pb2.SegmentScores(hop_seconds=m.segment_hop_seconds, scores=values.tolist())
        return out

    def Score(self, request: detector_pb2.ScoreRequest, context: grpc.ServicerContext) -> detector_pb2.ScoreResponse:
        self._require_ready()
        clip, options = self._clip(request)
        with Stopwatch(self.model.timing_scope) as sw:
            (score,) = self.model.llr_scores([clip], [options])
            (segments,) = self._segments([clip], [options], [request.want_segments])
            (attribution,) = self._attribution([clip], [options], [request.want_attribution])
        return detector_pb2.ScoreResponse(
            request_id=request.request_id,
            score=float(score),
            is_llr=self.model.serves_llr,
            timing=sw.to_proto(),
            segments=segments,
            attribution=attribution,
        )

    def ScoreBatch(
        self, request: detector_pb2.ScoreBatchRequest, context: grpc.ServicerContext
    ) -> detector_pb2.ScoreBatchResponse:
        self._require_ready()
        m = self.model
        if len(request.items) > m.max_batch_size:
            raise InvalidArgument(f"batch of {len(request.items)} clips exceeds max_batch_size {m.max_batch_size}")
        outcomes: list[detector_pb2.ScoreBatchItem] = []
        good: list[tuple[int, tuple[AudioClip, dict[str, str]]]] = []
        for item in request.items:
            try:
                good.append((len(outcomes), self._clip(item)))
                outcomes.append(detector_pb2.ScoreBatchItem(request_id=item.request_id))
            except ServiceError as e:
                outcomes.append(
                    detector_pb2.ScoreBatchItem(
                        request_id=item.request_id,
                        error=detector_pb2.ItemError(code=e.code.value[0], message=f"{item.request_id}: {e}"),
                    )
                )
        with Stopwatch(m.timing_scope) as sw:
            clips = [clip for _, (clip, _) in good]
            per_options = [options for _, (_, options) in good]
            scores = m.llr_scores(clips, per_options) if good else []
            segments = self._segments(clips, per_options, [request.items[i].want_segments for i, _ in good])
            attributions = self._attribution(clips, per_options, [request.items[i].want_attribution for i, _ in good])
        per_clip = sw.wall / max(len(good), 1)
        for (index, _), score, segment_scores, attribution in zip(good, scores, segments, attributions):
            timing = sw.to_proto()
            timing.wall_seconds = per_clip
            timing.cpu_seconds = sw.cpu / max(len(good), 1)
            outcomes[index].result.CopyFrom(
                detector_pb2.ScoreResponse(
                    request_id=outcomes[index].request_id,
                    score=float(score),
                    is_llr=m.serves_llr,
                    timing=timing,
                    segments=segment_scores,
                    attribution=attribution,
                )
            )
        return detector_pb2.ScoreBatchResponse(items=outcomes, timing=sw.to_proto())

    def ScoreStream(
        self, request_iterator: Iterator[detector_pb2.ScoreStreamRequest], context: grpc.ServicerContext
    ) -> Iterator[detector_pb2.StreamScore]:
        self._require_ready()
        if not self.model.stream_mode:
            raise Unimplemented(f"{self.model.name} does not stream (DetectorInfo.streaming is unset)")
        yield from StreamSession(self.model, Stopwatch).scores(request_iterator)


def stream_declaration_problems(m: DetectorModel) -> list[str]:
    return declaration_problems(m.stream_mode, *m.stream_bounds(), m.min_seconds, m.max_seconds)


def streaming_info(m: DetectorModel) -> detector_pb2.StreamingInfo | None:
    """DetectorInfo.streaming of the model; None when it does not stream."""
    if not m.stream_mode:
        return None
    window, hop, max_chunk = m.stream_bounds()
    return detector_pb2.StreamingInfo(
        mode=detector_pb2.StreamingMode.Value(f"STREAMING_{m.stream_mode}"),
        window_seconds=window if m.stream_mode == "WINDOWED" else 0.0,
        hop_seconds=hop,
        max_chunk_seconds=max_chunk,
        target_latency_seconds=m.stream_target_latency_seconds,
        final_scope=detector_pb2.STREAM_FINAL_WHOLE_CLIP,
    )

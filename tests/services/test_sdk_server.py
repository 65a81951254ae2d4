"""The SDK at the gRPC level: a real server on port 0, echo, timing, and every error path."""

from __future__ import annotations

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from voxarena.codec import decode_audio, encode_audio
from voxarena.sdk import AudioClip, DetectorModel, GeneratorModel, InvalidArgument, Option, SynthesisResult, Voice
from voxarena.sdk.testing import serve_in_process
from voxarena.v1 import common_pb2, detector_pb2, generator_pb2


class EchoGenerator(GeneratorModel):
    name = "echo"
    family = "VOCODER_DSP"
    tasks = ("TTS", "RECONSTRUCT", "CLONE")
    native_sample_rate = 8000
    timing_scope = "synthesis: test"
    voices = (Voice("a"), Voice("b"))
    options = (Option("gain", "output gain", "0.5"),)

    def load(self):
        pass

    def synthesize(self, request):
        if request.text == "crash":
            raise RuntimeError("kaboom")
        if request.text == "refuse":
            raise InvalidArgument("cannot say that")
        if request.text == "read source":  # a model bug: TTS carries no source audio
            request.source_clip()
        if request.text == "no voice":  # a model that leaves the voice to the SDK
            return SynthesisResult(AudioClip(np.zeros(800, np.int16), 8000))
        gain = self.float_option(request.parameters, "gain", 0, 1)
        if request.task == "RECONSTRUCT":
            return SynthesisResult(request.source_audio, voice=request.voice)
        rng = np.random.default_rng(request.seed)
        return SynthesisResult(
            AudioClip((gain * rng.uniform(-1, 1, 800)).astype(np.float32), 8000), voice=request.voice
        )


class MeanDetector(DetectorModel):
    name = "mean"
    family = "HANDCRAFTED_FRONT_END"
    timing_scope = "score: test"
    max_batch_size = 3
    max_seconds = 2.0

    def load(self):
        pass

    def score_batch(self, clips):
        return [float(np.mean(c.as_float32())) for c in clips]


@pytest.fixture
def generator():
    model = EchoGenerator()
    with serve_in_process(model, "[::]:0", ready=False, max_message_mb=1) as served:  # loaded by ready()
        yield model, served.running, served.stub(), served.channel


def ready(model, running):
    model.load()
    model.mark_ready()
    running.set_serving(True)


def tts(**kw):
    base = dict(request_id="r-1", seed=42, task=generator_pb2.TTS, text="hello")
    base.update(kw)
    return generator_pb2.SynthesizeRequest(**base)


def code_of(call, *args):
    with pytest.raises(grpc.RpcError) as e:
        call(*args)
    return e.value.code(), e.value.details()


def test_health_and_unavailable_while_loading(generator):
    model, running, stub, ch = generator
    health = health_pb2_grpc.HealthStub(ch)
    assert health.Check(health_pb2.HealthCheckRequest()).status == health_pb2.HealthCheckResponse.NOT_SERVING
    code, details = code_of(stub.Synthesize, tts())
    assert code == grpc.StatusCode.UNAVAILABLE and details.startswith("r-1:")
    ready(model, running)
    assert health.Check(health_pb2.HealthCheckRequest()).status == health_pb2.HealthCheckResponse.SERVING


def test_echo_timing_and_info(generator):
    model, running, stub, _ = generator
    ready(model, running)
    resp = stub.Synthesize(tts(seed=12345, voice="b"))
    assert resp.request_id == "r-1" and resp.seed == 12345 and resp.voice == "b"
    clip = decode_audio(resp.audio)
    assert clip.sample_rate == 8000 and clip.samples.size == 800
    t = resp.timing
    assert t.scope == "synthesis: test" and t.wall_seconds >= 0
    assert t.end.ToNanoseconds() >= t.start.ToNanoseconds()
    # same seed, same bytes; another seed, other bytes
    assert stub.Synthesize(tts(seed=12345)).audio.data == resp.audio.data
    assert stub.Synthesize(tts(seed=1)).audio.data != resp.audio.data
    info = stub.GetInfo(common_pb2.GetInfoRequest())
    assert info.model.name == "echo" and info.family == generator_pb2.VOCODER_DSP
    assert [v.name for v in info.voices] == ["a", "b"] and info.options[0].name == "gain"
    assert not info.model.HasField("parameter_count")


def test_reconstruct_roundtrip(generator):
    model, running, stub, _ = generator
    ready(model, running)
    src = AudioClip(np.arange(-100, 100, dtype=np.int16), 8000)
    resp = stub.Synthesize(
        generator_pb2.SynthesizeRequest(
            request_id="x", seed=1, task=generator_pb2.RECONSTRUCT, source_audio=encode_audio(src)
        )
    )
    np.testing.assert_array_equal(decode_audio(resp.audio).samples, src.samples)


@pytest.mark.parametrize(
    "request_kw, code, fragment",
    [
        (dict(text=""), grpc.StatusCode.INVALID_ARGUMENT, "needs text"),
        (dict(text="x" * 6000), grpc.StatusCode.INVALID_ARGUMENT, "at most 5000"),
        (dict(parameters={"gian": "1"}), grpc.StatusCode.INVALID_ARGUMENT, "unknown option(s) gian"),
        (dict(parameters={"gain": "loud"}), grpc.StatusCode.INVALID_ARGUMENT, "not a number"),
        (dict(parameters={"gain": "7"}), grpc.StatusCode.INVALID_ARGUMENT, "outside"),
        (dict(request_id=""), grpc.StatusCode.INVALID_ARGUMENT, "request_id is empty"),
        (dict(task=generator_pb2.CONVERT), grpc.StatusCode.UNIMPLEMENTED, "task CONVERT is not supported"),
        (dict(voice="zz"), grpc.StatusCode.UNIMPLEMENTED, "voice 'zz'"),
        (dict(text="refuse"), grpc.StatusCode.INVALID_ARGUMENT, "cannot say that"),
        (dict(text="crash"), grpc.StatusCode.INTERNAL, "RuntimeError: kaboom"),
        (dict(text="read source"), grpc.StatusCode.INTERNAL, "r-1: TTS request carries no source_audio"),
        (dict(task=generator_pb2.RECONSTRUCT, text=""), grpc.StatusCode.INVALID_ARGUMENT, "needs source_audio"),
        (
            dict(
                task=generator_pb2.RECONSTRUCT,
                source_audio=common_pb2.Audio(
                    data=b"\x00", sample_rate=8000, channels=1, encoding=common_pb2.PCM_S16LE
                ),
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
            "whole number",
        ),
        (
            dict(
                task=generator_pb2.RECONSTRUCT,
                source_audio=common_pb2.Audio(
                    data=b"\x00\x00", sample_rate=8000, channels=2, encoding=common_pb2.PCM_S16LE
                ),
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
            "mono",
        ),
        (
            dict(
                task=generator_pb2.RECONSTRUCT,
                source_audio=common_pb2.Audio(data=b"", sample_rate=0, channels=1, encoding=common_pb2.PCM_S16LE),
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
            "sample_rate must be positive",
        ),
        (
            dict(
                task=generator_pb2.RECONSTRUCT,
                source_audio=encode_audio(AudioClip(np.array([np.nan], np.float32), 8000)),
            ),
            grpc.StatusCode.INVALID_ARGUMENT,
            "NaN",
        ),
    ],
)
def test_error_paths(generator, request_kw, code, fragment):
    model, running, stub, _ = generator
    ready(model, running)
    got, details = code_of(stub.Synthesize, tts(**request_kw))
    assert got == code, details
    assert fragment in details
    rid = request_kw.get("request_id", "r-1")
    if rid:
        assert details.startswith(f"{rid}:")


def test_message_size_limit(generator):
    model, running, stub, _ = generator
    ready(model, running)
    big = AudioClip(np.zeros(600_000, np.int16), 8000)  # 1.2 MB > the 1 MiB limit
    got, details = code_of(
        stub.Synthesize,
        generator_pb2.SynthesizeRequest(
            request_id="big", seed=1, task=generator_pb2.RECONSTRUCT, source_audio=encode_audio(big)
        ),
    )
    assert got == grpc.StatusCode.RESOURCE_EXHAUSTED and "larger than max" in details


def test_reflection_lists_services(generator):
    model, running, stub, ch = generator
    refl = reflection_pb2_grpc.ServerReflectionStub(ch)
    resp = next(refl.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")])))
    names = {s.name for s in resp.list_services_response.service}
    assert {"voxarena.v1.GeneratorService", "grpc.health.v1.Health"} <= names


def test_detector_batch_isolates_bad_clips():
    with serve_in_process(MeanDetector(), "[::]:0") as served:
        stub = served.stub()
        good = encode_audio(AudioClip(np.full(100, 0.25, np.float32), 16000))
        nan = encode_audio(AudioClip(np.array([np.nan], np.float32), 16000))
        long = encode_audio(AudioClip(np.zeros(16000 * 3, np.float32), 16000))
        resp = stub.ScoreBatch(
            detector_pb2.ScoreBatchRequest(
                items=[
                    detector_pb2.ScoreRequest(request_id="a", audio=good),
                    detector_pb2.ScoreRequest(request_id="b", audio=nan),
                    detector_pb2.ScoreRequest(request_id="c", audio=long),
                ]
            )
        )
        a, b, c = resp.items
        assert a.result.request_id == "a" and a.result.score == pytest.approx(0.25)
        assert b.error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0] and b.error.message.startswith("b:")
        assert "at most 2 s" in c.error.message
        single = stub.Score(detector_pb2.ScoreRequest(request_id="s", audio=good))
        assert single.request_id == "s" and single.score == pytest.approx(0.25) and not single.is_llr
        too_many = detector_pb2.ScoreBatchRequest(
            items=[detector_pb2.ScoreRequest(request_id=str(i), audio=good) for i in range(4)]
        )
        got, details = code_of(stub.ScoreBatch, too_many)
        assert got == grpc.StatusCode.INVALID_ARGUMENT and "max_batch_size 3" in details
        got, details = code_of(stub.Score, detector_pb2.ScoreRequest(request_id="e", audio=common_pb2.Audio()))
        assert got == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("e:")


@pytest.fixture
def detector():
    model = MeanDetector()
    with serve_in_process(model, "[::]:0") as served:
        yield model, served.stub()


def test_batch_timing_is_shared_out_per_good_clip(detector):
    model, stub = detector
    clips = [encode_audio(AudioClip(np.full(1600, v, np.float32), 16000)) for v in (0.1, 0.2)]
    one = stub.ScoreBatch(
        detector_pb2.ScoreBatchRequest(
            items=[
                detector_pb2.ScoreRequest(request_id="only", audio=clips[0]),
                detector_pb2.ScoreRequest(request_id="x", audio=common_pb2.Audio()),
            ]
        )
    )
    assert one.items[0].result.timing.wall_seconds == pytest.approx(one.timing.wall_seconds)  # one clip scored
    assert one.items[0].result.timing.cpu_seconds == pytest.approx(one.timing.cpu_seconds)
    bad = common_pb2.Audio()
    resp = stub.ScoreBatch(
        detector_pb2.ScoreBatchRequest(
            items=[detector_pb2.ScoreRequest(request_id=f"k{i}", audio=a) for i, a in enumerate(clips)]
            + [detector_pb2.ScoreRequest(request_id="bad", audio=bad)]
        )
    )
    assert [i.result.request_id for i in resp.items[:2]] == ["k0", "k1"] and resp.items[2].error.message
    assert [i.result.score for i in resp.items[:2]] == pytest.approx([0.1, 0.2])
    batch = resp.timing
    assert batch.scope == "score: test" and batch.wall_seconds > 0
    for item in resp.items[:2]:
        t = item.result.timing
        assert t.scope == "score: test"
        assert t.wall_seconds == pytest.approx(batch.wall_seconds / 2)  # two clips were scored, one refused
        assert t.cpu_seconds == pytest.approx(batch.cpu_seconds / 2)
    info = stub.GetInfo(common_pb2.GetInfoRequest())
    assert info.max_batch_size == 3 and not info.calibrated and info.model.timing_scope == "score: test"


def test_calibrated_detector_serves_llrs(detector):
    model, stub = detector
    model.calibration = (2.0, -1.0)
    clip = encode_audio(AudioClip(np.full(100, 0.25, np.float32), 16000))
    single = stub.Score(detector_pb2.ScoreRequest(request_id="s", audio=clip))
    assert single.score == pytest.approx(2 * 0.25 - 1) and single.is_llr
    batch = stub.ScoreBatch(
        detector_pb2.ScoreBatchRequest(items=[detector_pb2.ScoreRequest(request_id="b", audio=clip)])
    )
    assert batch.items[0].result.score == pytest.approx(-0.5) and batch.items[0].result.is_llr
    assert stub.GetInfo(common_pb2.GetInfoRequest()).calibrated


def test_limits_are_inclusive(generator, detector):
    model, running, stub, _ = generator
    ready(model, running)
    assert stub.Synthesize(tts(text="x" * 5000)).request_id == "r-1"  # exactly max_text_chars
    model.max_source_seconds = 0.01
    at_limit = encode_audio(AudioClip(np.zeros(80, np.int16), 8000))  # exactly 0.01 s
    over = encode_audio(AudioClip(np.zeros(81, np.int16), 8000))
    ok = stub.Synthesize(
        generator_pb2.SynthesizeRequest(request_id="x", seed=1, task=generator_pb2.RECONSTRUCT, source_audio=at_limit)
    )
    assert decode_audio(ok.audio).samples.size == 80
    got, details = code_of(
        stub.Synthesize,
        generator_pb2.SynthesizeRequest(request_id="y", seed=1, task=generator_pb2.RECONSTRUCT, source_audio=over),
    )
    assert got == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("y: source_audio is") and "at most" in details
    dmodel, dstub = detector
    two = encode_audio(AudioClip(np.zeros(32000, np.float32), 16000))  # exactly max_seconds (2 s)
    assert dstub.Score(detector_pb2.ScoreRequest(request_id="d", audio=two)).request_id == "d"
    too_many = detector_pb2.ScoreBatchRequest(
        items=[detector_pb2.ScoreRequest(request_id=str(i), audio=two) for i in range(4)]
    )
    got, details = code_of(dstub.ScoreBatch, too_many)
    assert got == grpc.StatusCode.INVALID_ARGUMENT and details.startswith("batch of 4:")


def test_parameter_count_and_weights_in_info():
    class Counted(MeanDetector):
        def parameter_count(self):
            return 1234

        def weights_sha256(self):
            return "ab" * 32

    model = Counted()
    with serve_in_process(model, "[::]:0", ready=False) as served:
        stub = served.stub()
        got, details = code_of(stub.GetInfo, common_pb2.GetInfoRequest())
        assert got == grpc.StatusCode.UNAVAILABLE and "still loading" in details
        model.mark_ready()
        info = stub.GetInfo(common_pb2.GetInfoRequest()).model
        assert info.parameter_count == 1234 and info.weights_sha256 == "ab" * 32 and info.name == "mean"


def test_a_batch_of_only_bad_clips_answers_each_item(detector):
    model, stub = detector
    nan = encode_audio(AudioClip(np.array([np.nan], np.float32), 16000))
    resp = stub.ScoreBatch(
        detector_pb2.ScoreBatchRequest(
            items=[
                detector_pb2.ScoreRequest(request_id="n1", audio=nan),
                detector_pb2.ScoreRequest(request_id="n2", audio=nan),
            ]
        )
    )
    assert [i.error.message.split(":")[0] for i in resp.items] == ["n1", "n2"]
    assert all(i.error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0] for i in resp.items)


def test_default_voice_and_reference_audio(generator):
    model, running, stub, _ = generator
    ready(model, running)
    assert stub.Synthesize(tts()).voice == "a"  # no voice asked: the first one
    assert stub.Synthesize(tts(text="no voice", voice="b")).voice == "b"  # the model named none: the request's
    assert stub.Synthesize(tts(text="no voice")).voice == "a"
    got, details = code_of(stub.Synthesize, tts(task=generator_pb2.CLONE))
    assert got == grpc.StatusCode.INVALID_ARGUMENT and details == "r-1: CLONE needs reference_audio"
    ref = encode_audio(AudioClip(np.zeros(800, np.int16), 8000))
    assert stub.Synthesize(tts(task=generator_pb2.CLONE, reference_audio=ref)).request_id == "r-1"

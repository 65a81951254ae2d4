"""ScoreStream as the SDK serves it: running scores where voxarena.streaming says, each the Score of what a
windowed stream covers; the final score equal to Score; errors mid-stream after the scores already sent; a
stream holds one admission slot and gives it back when cancelled; a model that does not stream is
UNIMPLEMENTED; a bad declaration refuses to start."""

from __future__ import annotations

import threading
import time

import grpc
import numpy as np
import pytest

from voxarena.codec import AudioClip, encode_audio
from voxarena.conformance.detector_stream import chunk as chunk_message
from voxarena.conformance.detector_stream import chunked, opening
from voxarena.sdk.servicers import DetectorServicer
from voxarena.sdk.testing import serve_in_process
from voxarena.services.testing.dummy_detector import DummyDetector
from voxarena.streaming import declaration_problems, score_due, window_samples
from voxarena.v1 import common_pb2, detector_pb2

RATE = 16000


def noise(seconds: float, seed: int = 0) -> AudioClip:
    x = np.random.default_rng(seed).standard_normal(round(seconds * RATE)).astype(np.float32)
    return AudioClip(0.1 * x, RATE)


def score(stub, samples: np.ndarray) -> float:
    audio = encode_audio(AudioClip(np.asarray(samples, np.float32), RATE))
    return stub.Score(detector_pb2.ScoreRequest(request_id="whole", audio=audio), timeout=30).score


class ShortWindow(DummyDetector):
    stream_window_seconds = 1.0
    stream_hop_seconds = 0.3


class NotStreaming(DummyDetector):
    stream_mode = ""


def test_score_due_counts_hop_crossings_once_min_seconds_has_come():
    assert score_due(0, 8000, RATE, 0.5, 0.005)  # exactly one hop
    assert not score_due(0, 7999, RATE, 0.5, 0.005)
    assert not score_due(8000, 15999, RATE, 0.5, 0.005)
    assert score_due(7999, 40000, RATE, 0.5, 0.005)  # several hops in one chunk: one score
    assert not score_due(0, 8000, RATE, 0.5, 1.0)  # before min_seconds: none
    assert score_due(15999, 16000, RATE, 0.5, 1.0)
    assert score_due(0, 3, 44100, 1 / 44100 * 2.5, 0.0)  # a hop between two samples: decided in real numbers
    assert window_samples(4.0, RATE) == 64000


def test_declaration_problems_name_the_bound():
    assert declaration_problems("", 0, 0, 0, 0, 0) == []
    assert declaration_problems("WINDOWED", 4, 0.5, 10, 0.005, 600) == []
    assert "hop_seconds 0.001" in declaration_problems("NATIVE", 0, 0.001, 10, 0.005, 600)[0]
    assert "max_chunk_seconds 0.1" in declaration_problems("NATIVE", 0, 0.5, 0.1, 0.005, 600)[0]
    assert "window_seconds 0" in declaration_problems("WINDOWED", 0, 0.5, 10, 0.005, 600)[0]
    assert "mode 'SOMETIMES'" in declaration_problems("SOMETIMES", 1, 1, 1, 0, 0)[0]


def test_a_windowed_stream_scores_the_last_window_and_ends_with_the_whole_clip():
    clip = noise(2.5)
    with serve_in_process(ShortWindow()) as served:
        stub = served.stub()
        messages, sizes = chunked("s-1", clip, 0.2)
        got = list(stub.ScoreStream(iter(messages), timeout=30))
        running, final = got[:-1], got[-1]
        due = [n for n, (b, a) in enumerate(zip([0, *sizes], sizes)) if score_due(b, a, RATE, 0.3, 0.005)]
        assert [r.sequence for r in running] == due and not any(r.is_final for r in running)
        for r in running:
            end = round(r.audio_seconds * RATE)
            assert r.request_id == "s-1" and r.timing.wall_seconds > 0
            assert r.score == pytest.approx(score(stub, clip.samples[max(0, end - RATE) : end]), rel=1e-9)
        assert final.is_final and final.sequence == len(sizes) - 1 and final.audio_seconds == pytest.approx(2.5)
        assert final.score == pytest.approx(score(stub, clip.samples), rel=1e-9)
        info = stub.GetInfo(common_pb2.GetInfoRequest())
        assert info.streaming.mode == detector_pb2.STREAMING_WINDOWED and info.streaming.window_seconds == 1.0


def test_an_error_mid_stream_comes_after_the_scores_already_sent_and_names_the_chunk():
    x = noise(2.0).samples
    messages = [opening("s-bad", RATE)] + [chunk_message(i, x[i * 8000 : (i + 1) * 8000], RATE) for i in range(2)]
    messages.append(chunk_message(5, x[:100], RATE))
    with serve_in_process(DummyDetector()) as served:
        call = served.stub().ScoreStream(iter(messages), timeout=30)
        first = [next(call), next(call)]
        with pytest.raises(grpc.RpcError) as caught:
            next(call)
    assert [r.sequence for r in first] == [0, 1]
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.details() == "s-bad: chunk 5: expected sequence 2 (chunks are numbered 0, 1, 2, ...)"


def test_a_stream_holds_a_slot_until_it_is_cancelled():
    x = noise(1.0).samples
    with serve_in_process(DummyDetector(), workers=1, max_queue=0) as served:
        stub = served.stub()
        held = threading_stream(stub, x)
        next(held)  # the stream is in its slot, waiting for more audio
        with pytest.raises(grpc.RpcError) as busy:
            score(stub, x)
        assert busy.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        held.cancel()
        for _ in range(50):  # the server hears of the cancellation
            try:
                assert np.isfinite(score(stub, x))
                break
            except grpc.RpcError as e:
                assert e.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
                time.sleep(0.05)
        else:
            pytest.fail("the cancelled stream kept its slot")


def threading_stream(stub, x: np.ndarray):
    stop = threading.Event()

    def messages():
        yield opening("held", RATE)
        yield chunk_message(0, x[:8000], RATE)
        stop.wait(30)

    call = stub.ScoreStream(messages(), timeout=30)
    call.add_done_callback(lambda _: stop.set())
    return call


def test_a_model_that_does_not_stream_is_unimplemented_and_declares_nothing():
    with serve_in_process(NotStreaming()) as served:
        stub = served.stub()
        assert not stub.GetInfo(common_pb2.GetInfoRequest()).HasField("streaming")
        with pytest.raises(grpc.RpcError) as caught:
            list(stub.ScoreStream(iter(chunked("s", noise(1.0), 0.5)[0]), timeout=30))
    assert caught.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_a_bad_streaming_declaration_refuses_to_start():
    class BadHop(DummyDetector):
        stream_hop_seconds = 0.0

    with pytest.raises(ValueError, match="streaming: hop_seconds 0"):
        DetectorServicer(BadHop())

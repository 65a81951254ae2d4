"""Each kind of bad generator response is rejected with a reason naming the item."""

import numpy as np
import pytest

from voxarena.codec import AudioClip, encode_audio
from voxarena.orchestrator.run.validation import ResponseInvalid, validate_generation, validate_score
from voxarena.v1 import common_pb2, detector_pb2, generator_pb2

REQ = generator_pb2.SynthesizeRequest(request_id="g|TTS|1", seed=5, task=generator_pb2.TTS, text="hi")


def good():
    return generator_pb2.SynthesizeResponse(
        request_id="g|TTS|1",
        seed=5,
        audio=encode_audio(AudioClip(np.full(8000, 100, np.int16), 16000)),
        timing=common_pb2.Timing(wall_seconds=0.1, scope="s"),
    )


def check(resp):
    return validate_generation(
        "item-1", REQ, resp, declared_rate=16000, declared_scope="s", min_duration=0.2, max_duration=10
    )


def test_good_response_passes():
    assert check(good()).duration == pytest.approx(0.5)


def mutate(fn):
    r = good()
    fn(r)
    return r


@pytest.mark.parametrize(
    "change, fragment",
    [
        (lambda r: setattr(r, "request_id", "other"), "request_id echo"),
        (lambda r: setattr(r, "seed", 6), "seed echo 6 != sent 5"),
        (lambda r: r.ClearField("audio"), "no audio"),
        (lambda r: setattr(r.audio, "data", b""), "empty audio"),
        (lambda r: setattr(r.audio, "channels", 2), "expected mono"),
        (lambda r: setattr(r.audio, "sample_rate", 0), "sample_rate must be positive"),
        (lambda r: setattr(r.audio, "sample_rate", 22050), "sample_rate 22050 != declared 16000"),
        (lambda r: setattr(r.audio, "sample_rate", 8000), "sample_rate 8000 != declared 16000"),
        (lambda r: setattr(r, "request_id", "a"), "request_id echo 'a' != sent 'g|TTS|1'"),
        (lambda r: setattr(r, "seed", 4), "seed echo 4 != sent 5"),
        (lambda r: r.audio.CopyFrom(encode_audio(AudioClip(np.array([0, np.nan] * 4000, np.float32), 16000))), "NaN"),
        (
            lambda r: r.audio.CopyFrom(encode_audio(AudioClip(np.full(8000, 3.0, np.float32), 16000))),
            "exceed full scale",
        ),
        (lambda r: r.audio.CopyFrom(encode_audio(AudioClip(np.zeros(100, np.int16), 16000))), "outside [0.2, 10]"),
        (
            lambda r: r.audio.CopyFrom(encode_audio(AudioClip(np.zeros(16000 * 11, np.int16), 16000))),
            "outside [0.2, 10]",
        ),
        (lambda r: r.ClearField("timing"), "timing"),
        (lambda r: setattr(r.timing, "scope", "other"), "timing scope"),
        (lambda r: setattr(r.timing, "scope", "a"), "timing scope 'a' != declared 's'"),
        (lambda r: setattr(r.timing, "scope", "z"), "timing scope 'z' != declared 's'"),
        (lambda r: setattr(r.timing, "wall_seconds", float("inf")), "timing"),
    ],
)
def test_each_bad_response_is_rejected(change, fragment):
    with pytest.raises(ResponseInvalid) as e:
        check(mutate(change))
    assert fragment in str(e.value)
    assert str(e.value).startswith("item-1")


def test_score_validation():
    assert validate_score("c", "d|c", detector_pb2.ScoreResponse(request_id="d|c", score=1.5)) == 1.5
    for other in ("x", "a"):  # after and before the sent id
        with pytest.raises(ResponseInvalid, match="request_id echo"):
            validate_score("c", "d|c", detector_pb2.ScoreResponse(request_id=other, score=1.5))
    with pytest.raises(ResponseInvalid, match="not finite"):
        validate_score("c", "d|c", detector_pb2.ScoreResponse(request_id="d|c", score=float("nan")))


@pytest.mark.parametrize(
    "change",
    [
        lambda r: r.audio.CopyFrom(encode_audio(AudioClip(np.zeros(3200, np.int16), 16000))),  # exactly 0.2 s
        lambda r: r.audio.CopyFrom(encode_audio(AudioClip(np.zeros(160000, np.int16), 16000))),  # exactly 10 s
        lambda r: r.audio.CopyFrom(
            encode_audio(AudioClip(np.array([1.0, -1.0] * 4000, np.float32), 16000))
        ),  # full scale
        lambda r: setattr(r.timing, "wall_seconds", 0.0),
        # float32 one ulp above 1.0: within the tolerance that full scale is given
        lambda r: r.audio.CopyFrom(
            encode_audio(AudioClip(np.array([np.nextafter(np.float32(1), np.float32(2)), 0] * 4000, np.float32), 16000))
        ),
    ],
)
def test_bounds_are_inclusive(change):
    assert check(mutate(change)).sample_rate == 16000


@pytest.mark.parametrize(
    "change, fragment",
    [
        (
            lambda r: r.audio.CopyFrom(encode_audio(AudioClip(np.zeros(3199, np.int16), 16000))),
            "duration 0.200 s outside",
        ),
        (
            lambda r: r.audio.CopyFrom(encode_audio(AudioClip(np.zeros(160001, np.int16), 16000))),
            "duration 10.000 s outside",
        ),
        (
            lambda r: r.audio.CopyFrom(encode_audio(AudioClip(np.array([1.001, 0.0] * 4000, np.float32), 16000))),
            "max |x| = 1.001",
        ),
        (lambda r: setattr(r.timing, "wall_seconds", -0.1), "missing or invalid timing"),
    ],
)
def test_just_past_the_bounds_is_rejected(change, fragment):
    with pytest.raises(ResponseInvalid, match=fragment.replace("|", r"\|")):
        check(mutate(change))


def test_infinite_scores_are_rejected():
    for bad in (float("inf"), float("-inf")):
        with pytest.raises(ResponseInvalid, match=r"c: score -?inf is not finite"):
            validate_score("c", "d|c", detector_pb2.ScoreResponse(request_id="d|c", score=bad))
    assert validate_score("c", "d|c", detector_pb2.ScoreResponse(request_id="d|c", score=-1e30)) == -1e30

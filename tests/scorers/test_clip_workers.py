"""The scorer's clip workers: one pool shared by every MeasureClips call keeps ``clip_workers`` clips in
progress at once, whatever the batching, answers in request order, warms each metric once ahead of its
clips, and drops a cancelled call's queued clips."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from voxarena.codec import AudioClip, encode_audio
from voxarena.scorers import registry
from voxarena.scorers.registry import ClipInputs, Measurement, Metric
from voxarena.scorers.server import main
from voxarena.scorers.service import ScorerServicer
from voxarena.sdk.errors import Cancelled
from voxarena.v1 import scorer_pb2


class SlowMetric(Metric):
    """Stands in for "rtf": each clip takes ``seconds``; records how many clips were in progress at once."""

    aggregation, description = "mean", "test double"

    def __init__(self, seconds: float = 0.2) -> None:
        super().__init__()
        self.seconds, self.active, self.most, self.events = seconds, 0, 0, []
        self._count = threading.Lock()

    def warm(self) -> None:
        self.events.append("warm")

    def measure(self, clip: ClipInputs) -> Measurement:
        with self._count:
            self.active += 1
            self.most = max(self.most, self.active)
        self.events.append(clip.request_id)
        time.sleep(self.seconds)
        with self._count:
            self.active -= 1
        return {"rtf.value": float(clip.request_id.split("-")[-1])}, {}

    def aggregate(self, rows):  # pragma: no cover - not used here
        return 0.0


SlowMetric.name = "rtf"


@pytest.fixture
def slow(monkeypatch):
    metric = SlowMetric()
    monkeypatch.setitem(registry._instances, "rtf", metric)
    return metric


def request(prefix: str, n: int) -> scorer_pb2.MeasureClipsRequest:
    audio = encode_audio(AudioClip(np.zeros(1600, np.float32), 16000))
    return scorer_pb2.MeasureClipsRequest(
        items=[scorer_pb2.ClipRequest(request_id=f"{prefix}-{k}", metrics=["rtf"], audio=audio) for k in range(n)]
    )


def servicer(workers: int) -> ScorerServicer:
    s = ScorerServicer(("rtf",), clip_workers=workers)
    s.load()
    return s


def test_one_call_uses_every_worker_and_answers_in_order(slow):
    t0 = time.perf_counter()
    out = servicer(2).MeasureClips(request("a", 6), None)
    took = time.perf_counter() - t0
    assert [m.request_id for m in out.items] == [f"a-{k}" for k in range(6)]
    assert [m.values["rtf.value"] for m in out.items] == [float(k) for k in range(6)]
    assert slow.most == 2
    assert took < 5 * slow.seconds  # 6 clips of 0.2 s on 2 workers: about 0.6 s, not 1.2


def test_calls_in_flight_share_the_workers(slow):
    s = servicer(2)
    with ThreadPoolExecutor(3) as pool:
        calls = [pool.submit(s.MeasureClips, request(p, 3), None) for p in "abc"]
        answers = [c.result(30) for c in calls]
    assert slow.most == 2  # three calls in flight, never more than two clips at once
    assert [len(a.items) for a in answers] == [3, 3, 3]


def test_each_metric_is_warmed_once_before_its_first_clips(slow):
    s = servicer(1)
    s.MeasureClips(request("a", 2), None)
    s.MeasureClips(request("b", 2), None)
    assert slow.events == ["warm", "a-0", "a-1", "b-0", "b-1"]


def test_a_failing_warm_up_leaves_the_error_to_the_clips(monkeypatch):
    class Unloadable(SlowMetric):
        def warm(self) -> None:
            raise RuntimeError("model file missing")

    monkeypatch.setitem(registry._instances, "rtf", Unloadable(0.0))
    out = servicer(1).MeasureClips(request("a", 1), None)
    assert out.items[0].values["rtf.value"] == 0.0


class Gone:
    def is_active(self) -> bool:
        return False


def test_a_cancelled_call_measures_nothing(slow):
    with pytest.raises(Cancelled):
        servicer(2).MeasureClips(request("a", 4), Gone())
    time.sleep(0.1)
    assert [e for e in slow.events if e != "warm"] == []


def test_clip_workers_must_not_be_negative(capsys, monkeypatch):
    monkeypatch.delenv("VOXARENA_PARENT_PID", raising=False)  # main() would bind this process to that parent
    with pytest.raises(SystemExit):
        main(["--clip-workers", "-1"])
    assert "--clip-workers must be 0" in capsys.readouterr().err


@pytest.mark.parametrize(
    "cpu_max, expected",
    [("max 100000", None), ("50000 100000", 1), ("150000 100000", 2), ("100000000 100000", None), ("junk", None)],
)
def test_usable_cores_follow_the_cgroup_quota(tmp_path, cpu_max, expected):
    import os

    from voxarena.scorers.service import usable_cores

    path = tmp_path / "cpu.max"
    path.write_text(cpu_max + "\n")
    affinity = len(os.sched_getaffinity(0))
    assert usable_cores(str(path)) == min(expected or affinity, affinity)
    assert usable_cores(str(tmp_path / "absent")) == affinity

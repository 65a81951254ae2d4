"""How many live streams one detector service keeps up with, on this machine.

    python benchmarks/streaming_capacity.py [--detectors lfcc-gmm,rawnet2] [--bound 0.5] [--seconds 8]

Each detector runs as its own process (as the orchestrator starts it locally, ``--workers 64``), on LibriSpeech
test speech at 16 kHz. First its offline throughput: ScoreBatch of whole clips, one call at a time,
as audio seconds scored per wall second, which is also the number of real-time streams the offline path
could feed in theory. Then k streams at once, each ``--seconds`` of audio in 0.5 s chunks sent in real
time (chunk n at n x 0.5 s), for k = 1, 2, 4, ... while the 95th percentile of the chunk-to-score latency
stays under ``--bound`` seconds; then a bisection between the last k that held and the first that did not.
Prints, per detector, the capacity (streams), the p95 at it, and the ratio capacity / offline streams, all
measured in one run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import soundfile as sf  # noqa: E402

from voxarena.codec import AudioClip, encode_audio  # noqa: E402
from voxarena.orchestrator.fleet.clients import channel  # noqa: E402
from voxarena.orchestrator.fleet.local_services import LocalService  # noqa: E402
from voxarena.orchestrator.run.streaming import PacedCall, chunks  # noqa: E402
from voxarena.v1 import common_pb2, detector_pb2, detector_pb2_grpc  # noqa: E402

SPEECH = Path(os.environ.get("VOXARENA_SPEECH", REPO.parent / "shared" / "data" / "speech"))
CHUNK = 0.5


def speech(seconds: float, n: int) -> list[AudioClip]:
    """``n`` clips of ``seconds`` each from LibriSpeech test-clean and test-other at 16 kHz (a shorter
    utterance repeated to the length)."""
    out = []
    for path in sorted((SPEECH / "LibriSpeech").glob("test-*/*/*/*.flac")):
        x, rate = sf.read(path, dtype="float32")
        out.append(AudioClip(np.resize(x, round(seconds * rate)), rate))
        if len(out) == n:
            return out
    raise SystemExit(f"fewer than {n} LibriSpeech test clips under {SPEECH}")


def offline_rate(stub: detector_pb2_grpc.DetectorServiceStub, clips: list[AudioClip]) -> float:
    """Audio seconds scored per wall second, whole clips, one call at a time."""
    items = [detector_pb2.ScoreRequest(request_id=f"offline-{i}", audio=encode_audio(c)) for i, c in enumerate(clips)]
    stub.ScoreBatch(detector_pb2.ScoreBatchRequest(items=items[:1]), timeout=600)  # warm
    t0 = time.perf_counter()
    for item in items:
        stub.ScoreBatch(detector_pb2.ScoreBatchRequest(items=[item]), timeout=600)
    return sum(c.duration for c in clips) / (time.perf_counter() - t0)


def streams_at_once(stub: detector_pb2_grpc.DetectorServiceStub, clips: list[AudioClip], k: int) -> tuple[float, int]:
    """(p95 latency over every running score, failed streams) of ``k`` real-time streams at once."""
    latencies: list[float] = []
    failed = [0]
    lock = threading.Lock()

    def one(i: int) -> None:
        clip = clips[i % len(clips)]
        call = PacedCall(stub.ScoreStream, "realtime", CHUNK)
        try:
            got = call(chunks(f"cap-{k}-{i}", clip, CHUNK), timeout=clip.duration + 120)
        except Exception:  # a refused or broken stream counts against this k
            with lock:
                failed[0] += 1
            return
        with lock:
            latencies.extend(latency for r, latency in got if not r.is_final)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(k)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return (float(np.quantile(latencies, 0.95)) if latencies else float("inf")), failed[0]


def capacity(stub, clips: list[AudioClip], bound: float, limit: int) -> tuple[int, float, list[str]]:
    """(most streams with p95 under ``bound`` and none failed, its p95, the trials' lines); ``limit`` when
    even that many held (the capacity is then at least that)."""
    lines, held, held_p95, k = [], 0, float("nan"), 1
    failed_at = None
    while held < limit:
        p95, failed = streams_at_once(stub, clips, k)
        lines.append(f"    {k:3d} streams: p95 {p95 * 1000:7.1f} ms, {failed} failed")
        if failed or p95 > bound:
            failed_at = k
            break
        held, held_p95, k = k, p95, min(k * 2, limit)
    lo, hi = held, failed_at
    while hi is not None and hi - lo > 1:
        mid = (lo + hi) // 2
        p95, failed = streams_at_once(stub, clips, mid)
        lines.append(f"    {mid:3d} streams: p95 {p95 * 1000:7.1f} ms, {failed} failed")
        if failed or p95 > bound:
            hi = mid
        else:
            lo, held_p95 = mid, p95
    return lo, held_p95, lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--detectors", default="lfcc-gmm,rawnet2")
    parser.add_argument("--bound", type=float, default=0.5, help="p95 chunk-to-score latency bound, seconds")
    parser.add_argument("--seconds", type=float, default=8.0, help="audio per stream")
    parser.add_argument("--limit", type=int, default=64, help="most streams tried")
    args = parser.parse_args()
    clips = speech(args.seconds, 8)
    print(
        f"{os.cpu_count()} cores; streams of {args.seconds:g} s in {CHUNK:g} s chunks, real time; "
        f"bound p95 < {args.bound:g} s"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.detectors.split(","):
            svc = LocalService(
                name, None, Path(tmp) / f"{name}.log", ["--workers", str(args.limit), "--max-queue", "0"]
            )
            svc.start()
            try:
                address = svc.wait_ready(300)
                stub = detector_pb2_grpc.DetectorServiceStub(channel(address))
                info = stub.GetInfo(common_pb2.GetInfoRequest(), timeout=30)
                mode = detector_pb2.StreamingMode.Name(info.streaming.mode)
                offline = offline_rate(stub, clips)
                k, p95, lines = capacity(stub, clips, args.bound, args.limit)
            finally:
                svc.stop()
            print(f"{name} ({mode}, hop {info.streaming.hop_seconds:g} s):")
            print("\n".join(lines))
            print(
                f"  offline: {offline:.1f} s of audio per second (= {offline:.1f} real-time streams in theory)\n"
                f"  capacity: {'at least ' if k >= args.limit else ''}{k} real-time streams with p95 "
                f"{p95 * 1000:.0f} ms < {args.bound * 1000:.0f} ms; ratio to offline {k / offline:.2f}"
            )


if __name__ == "__main__":
    main()

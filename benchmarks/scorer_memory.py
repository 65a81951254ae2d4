"""Scorer memory on the longest clip it accepts: the scorer service's resident set size (RSS) before and
at its peak during one MeasureClips call with one clip of ScorerInfo.limits.max_clip_seconds (600 s),
for each metric family.

    python benchmarks/scorer_memory.py [--metrics wer,sim,...] [--seconds 600] [--budget-mb 2048]

Each metric runs in a scorer process of its own (the models of one metric do not count against
another): the scorer starts, measures a 2 s clip (the metric's models load), then the peak RSS is
reset (/proc/PID/clear_refs) and the long clip is measured. The clip is LibriSpeech test-clean
speech repeated to the length, 16-bit PCM (three 600 s clips fit the default 64 MiB message), with
white noise at 20 dB SNR as the "generated" clip; its references (source and speaker) are the clean
speech at the same length, so reference metrics see their worst case.

Prints, per metric: RSS before, peak RSS during the call, its growth, wall seconds, and whether the
clip was measured or refused (a metric whose bound is lower than the clip says so in its error).
Exit 1 when a peak exceeds --budget-mb. ``--metrics wer+sim+...`` measures several metrics in one
request (the models of all of them loaded, the clip's shared by-products cached across them).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import grpc
import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from voxarena.codec import AudioClip, encode_audio, read_audio_file  # noqa: E402
from voxarena.orchestrator.fleet.local_services import LocalService  # noqa: E402
from voxarena.v1 import scorer_pb2, scorer_pb2_grpc  # noqa: E402

SPEECH = Path(os.environ.get("VOXARENA_SPEECH", REPO.parent / "shared" / "data" / "speech"))
FAMILIES = ["wer", "sim", "dnsmos", "mos_distill", "pesq", "stoi", "psnr", "ssim", "ls_mse", "mcd", "cloneval"]


def speech(seconds: float) -> tuple[AudioClip, str]:
    """LibriSpeech test-clean utterances concatenated and repeated to ``seconds``, with their text."""
    parts, texts = [], []
    trans = sorted((SPEECH / "LibriSpeech" / "test-clean").glob("*/*/*.trans.txt"))[0]
    lines = dict(line.split(" ", 1) for line in trans.read_text().splitlines() if line.strip())
    for flac in sorted(trans.parent.glob("*.flac")):
        parts.append(read_audio_file(str(flac)).as_float32())
        texts.append(lines[flac.stem])
    x = np.concatenate(parts)
    reps = int(np.ceil(seconds * 16000 / x.size))
    words = " ".join(texts).split()
    n_words = int(len(words) * seconds * 16000 / x.size)  # the words of the clip's length, roughly
    pcm = np.round(np.tile(x, reps)[: int(seconds * 16000)] * 32767).astype(np.int16)
    return AudioClip(pcm, 16000), " ".join((words * reps)[:n_words])


def noisy(clip: AudioClip, snr_db: float = 20.0) -> AudioClip:
    x = clip.as_float32().astype(np.float64)
    noise = np.random.default_rng(0).standard_normal(x.size)
    noise *= np.sqrt(np.mean(x**2) / 10 ** (snr_db / 10) / np.mean(noise**2))
    return AudioClip(np.round(np.clip(x + noise, -1, 1) * 32767).astype(np.int16), clip.sample_rate)


def request(metric: str, seconds: float, rid: str) -> scorer_pb2.MeasureClipsRequest:
    """One clip of ``seconds`` asking for ``metric`` (several joined by "+": one request for all of them)."""
    ref, text = speech(seconds)
    item = scorer_pb2.ClipRequest(
        request_id=rid,
        metrics=metric.split("+"),
        audio=encode_audio(noisy(ref)),
        text=text,
        speaker_reference=encode_audio(ref),
        source_reference=encode_audio(ref),
        reference_aligned=True,
    )
    return scorer_pb2.MeasureClipsRequest(items=[item])


def status_kb(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise KeyError(field)


def measure(metric: str, seconds: float, log_dir: Path) -> dict[str, object]:
    svc = LocalService("scorer", "voxarena.scorers", log_dir / f"scorer-{metric}.log")
    svc.start()
    try:
        channel = grpc.insecure_channel(svc.wait_ready(300), options=[("grpc.max_send_message_length", 256 << 20)])
        stub = scorer_pb2_grpc.ScorerServiceStub(channel)
        warm = stub.MeasureClips(request(metric, 2.0, "warm-up"), timeout=600)
        pid = svc.proc.pid
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # reset the peak (VmHWM) to the current RSS
        before = status_kb(pid, "VmRSS")
        big = request(metric, seconds, "long")
        t0 = time.perf_counter()
        out = stub.MeasureClips(big, timeout=3600)
        wall = time.perf_counter() - t0
        peak = status_kb(pid, "VmHWM")
        row = out.items[0]
        return {
            "metric": metric,
            "before_mb": before / 1024,
            "peak_mb": peak / 1024,
            "wall_s": wall,
            "result": "; ".join(f"{k}: {v}" for k, v in sorted(row.errors.items()))
            or ", ".join(f"{k}={v:.4g}" for k, v in sorted(row.values.items())),
            "warm_up": "; ".join(warm.items[0].errors.values()) or "ok",
        }
    finally:
        svc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--metrics",
        default=",".join(FAMILIES),
        help='comma-separated; "a+b" measures a and b in one request (one scorer process for both)',
    )
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--budget-mb", type=float, default=2048.0)
    args = parser.parse_args()
    over = []
    with tempfile.TemporaryDirectory() as tmp:
        print(f"one {args.seconds:g} s clip per call; RSS of the scorer process (MB)", flush=True)
        print(f"{'metric':12} {'before':>8} {'peak':>8} {'growth':>8} {'wall s':>8}  result", flush=True)
        for metric in args.metrics.split(","):
            r = measure(metric, args.seconds, Path(tmp))
            growth = float(r["peak_mb"]) - float(r["before_mb"])  # type: ignore[arg-type]
            print(
                f"{metric:12} {r['before_mb']:8.0f} {r['peak_mb']:8.0f} {growth:8.0f} {r['wall_s']:8.1f}  "
                f"{str(r['result'])[:110]}",
                flush=True,
            )
            if float(r["peak_mb"]) > args.budget_mb:  # type: ignore[arg-type]
                over.append(metric)
    if over:
        print(f"over the {args.budget_mb:g} MB budget: {', '.join(over)}")
        raise SystemExit(1)


if __name__ == "__main__":
    main()

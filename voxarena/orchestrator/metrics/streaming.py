"""``metrics/streaming.csv``: how soon each detector knows, streamed (``protocol.streaming``).

One row per detector x generator on the clean channel: each generator's whole fakes against every bona
fide stream, ``pooled`` (every whole fake), and ``partial`` (the partial fakes, their time to detect counted
from the first fake sample) when the run made them. Definitions in ``voxarena.stats.streaming``:

- ``eer_<ms>``: EER after 500, 1000, 2000 and 4000 ms of audio, and ``eer_final`` after the whole clip;
- ``threshold``: the detector's EER threshold on whole clips (the final scores of the bona fide and the
  pooled whole fakes), which time to detect and false alarms use;
- ``detected_<ms>`` and ``detected_final``: the fraction of fakes flagged within that much audio from their
  onset, and ever; ``median_ttd_seconds``: the median time to detect of those flagged;
- ``false_alarm_<ms>``: the fraction of bona fide streams flagged by then;
- ``latency_p50/p95/p99_seconds``: per running score, chunk sent to score arrived (real-time pacing only;
  nan when the run streamed as fast as possible); ``rtf``: the service's timings over the audio streamed.

``eer_1000ms``, ``eer_4000ms`` and ``detected_2000ms`` carry speaker-cluster bootstrap intervals (the
run's resamples, seed and confidence).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from voxarena.orchestrator.metrics.scorer_client import add_intervals, bootstrap_settings
from voxarena.orchestrator.run.partial import is_partial
from voxarena.orchestrator.store.records import StreamRecord
from voxarena.orchestrator.store.run_store import RunStore
from voxarena.stats.detection import eer
from voxarena.stats.streaming import (
    HORIZONS,
    StreamedClip,
    detected_within,
    detection_delays,
    eer_after,
    false_alarms_after,
    latency_percentiles,
    median_delay,
)

POOLED, PARTIAL = "pooled", "partial"
MS = [f"{round(t * 1000)}ms" for t in HORIZONS]
WITH_CI = ("eer_1000ms", "eer_4000ms", "detected_2000ms")
STREAMING_COLUMNS = (
    ["detector", "generator", "pacing", "chunk_seconds", "n_bonafide", "n_spoof"]
    + [f"eer_{m}" for m in MS]
    + ["eer_final", "threshold"]
    + [f"detected_{m}" for m in MS]
    + ["detected_final", "median_ttd_seconds"]
    + [f"false_alarm_{m}" for m in MS]
    + ["latency_p50_seconds", "latency_p95_seconds", "latency_p99_seconds", "rtf"]
    + [f"{c}_ci_{side}" for c in WITH_CI for side in ("low", "high")]
)


class _Stream:
    def __init__(self, row: StreamRecord, onset: float) -> None:
        scores = row.scores or []
        self.row, self.speaker = row, row.speaker
        self.clip = StreamedClip(
            tuple((float(s["audio_seconds"]), float(s["score"])) for s in scores),
            float(row.final_score or 0.0),
            float(row.audio_seconds or 0.0),
            row.kind == "bonafide",
            onset,
        )
        self.latencies = [float(s["latency_seconds"]) for s in scores]


def _onset(store: RunStore, row: StreamRecord) -> float:
    """Where a stream's fake part starts: its first spliced span for a partial fake, else 0."""
    if not is_partial(row.task):
        return 0.0
    gen = store.generations.get(row.clip)
    spans = (gen.partial or {}).get("spans", []) if gen is not None else []
    return float(min(s["start_seconds"] for s in spans)) if spans else 0.0


def _threshold(streams: list[_Stream]) -> float:
    bona = np.array([s.clip.final for s in streams if s.clip.bonafide])
    whole = np.array([s.clip.final for s in streams if not s.clip.bonafide and not is_partial(s.row.task)])
    if bona.size == 0 or whole.size == 0:
        raise ValueError("needs bona fide streams and whole fakes")
    return eer(bona, whole)[1]


def _headline(streams: list[_Stream], threshold: float) -> dict[str, float]:
    clips = [s.clip for s in streams]
    out = {f"eer_{m}": _eer_or_nan(clips, t) for m, t in zip(MS, HORIZONS)}
    out["detected_2000ms"] = detected_within(detection_delays(clips, threshold), 2.0)
    return out


def _eer_or_nan(clips: list[StreamedClip], t: float) -> float:
    try:
        return eer_after(clips, t)[0]
    except ValueError:
        return math.nan


def streaming_rows(store: RunStore, cfg) -> list[dict[str, Any]]:
    """The table's rows; none when the run streamed nothing."""
    rows = [r for r in store.streams.sorted_rows() if r.ok]
    if not rows:
        return []
    boot = bootstrap_settings(cfg)
    out = []
    for detector in sorted({r.detector for r in rows}):
        mine = [_Stream(r, _onset(store, r)) for r in rows if r.detector == detector]
        try:
            threshold = _threshold(mine)
        except ValueError:
            continue
        bona = [s for s in mine if s.clip.bonafide]
        groups: dict[str, list[_Stream]] = {}
        for s in mine:
            if not s.clip.bonafide:
                key = PARTIAL if is_partial(s.row.task) else s.row.generator
                groups.setdefault(key, []).append(s)
                if key != PARTIAL:
                    groups.setdefault(POOLED, []).append(s)
        for generator in sorted(groups, key=lambda g: (g in (POOLED, PARTIAL), g)):
            out.append(_row(detector, generator, bona + groups[generator], threshold, boot))
    return out


def _row(detector: str, generator: str, streams: list[_Stream], threshold: float, boot) -> dict[str, Any]:
    clips = [s.clip for s in streams]
    fakes = [s for s in streams if not s.clip.bonafide]
    first = streams[0].row
    row: dict[str, Any] = {
        "detector": detector,
        "generator": generator,
        "pacing": first.pacing,
        "chunk_seconds": first.chunk_seconds,
        "n_bonafide": len(streams) - len(fakes),
        "n_spoof": len(fakes),
        "threshold": threshold,
    }
    row.update(_headline(streams, threshold))
    row["eer_final"] = _eer_or_nan(clips, math.inf)
    delays = detection_delays(clips, threshold)
    for m, t in zip(MS, HORIZONS):
        row[f"detected_{m}"] = detected_within(delays, t)
        row[f"false_alarm_{m}"] = false_alarms_after(clips, threshold, t)
    row["detected_final"] = float(np.mean(np.isfinite(delays))) if delays.size else math.nan
    row["median_ttd_seconds"] = median_delay(delays)
    realtime = [x for s in streams if s.row.pacing == "realtime" for x in s.latencies]
    for name, value in latency_percentiles(realtime).items():
        row[f"latency_{name}_seconds"] = value
    audio = sum(s.clip.duration for s in streams)
    row["rtf"] = sum(float(s.row.wall_seconds or 0.0) for s in streams) / audio if audio else math.nan
    speakers = [s.speaker for s in streams]
    add_intervals(row, speakers, lambda idx: _headline([streams[i] for i in idx], threshold), boot, WITH_CI)
    return row

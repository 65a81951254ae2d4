"""The exact truth of a run's clips, exported (``orchestrator export-labels``): which samples are fake.

Every clip the run scored: a bona fide corpus item (no fake sample), a generated clip (every sample fake)
and a partial fake (its spans, from the generation row's ``partial``). Two formats:

- ``rttm``: ``labels.rttm``, NIST RTTM, one ``SPEAKER`` line per stretch of one kind:
  ``SPEAKER <clip id> 1 <onset s> <duration s> <NA> <NA> <bonafide|spoof> <NA> <NA>``, times to the
  microsecond (so that samples at up to 48 kHz round-trip exactly), covering the whole clip; with
  ``clips.tsv`` (clip id, audio path relative to the run, sample rate, samples).
- ``partialspoof``: PartialSpoof's segment labels at 20, 40, 80, 160, 320 and 640 ms:
  ``seglab_<resolution>.npy`` (``numpy.save`` of a dict clip id -> int8 array, 1 = bona fide, 0 = spoof,
  PartialSpoof's convention, read with ``numpy.load(path, allow_pickle=True).item()``) and the same as text
  (``seglab_<resolution>.txt``: ``<clip id> 1 1 0 0 ...``). A clip of N samples at rate r has
  ``ceil(N / (resolution x r))`` segments (the last one short) and a segment is spoof if any of its samples
  is, as in PartialSpoof; ``clips.tsv`` as above.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf

from voxarena.orchestrator.store.records import GenerationRecord
from voxarena.orchestrator.store.run_store import read_records
from voxarena.stats.localisation import RESOLUTIONS, segment_labels

FORMATS = ("rttm", "partialspoof")


@dataclass(frozen=True)
class ClipTruth:
    id: str
    audio: str  # relative to the run directory, or the corpus file's path
    rate: int
    samples: int
    fake: tuple[tuple[int, int], ...]  # [start, end) sample intervals, sorted, disjoint


def clip_truths(run_dir: Path) -> list[ClipTruth]:
    """The truth of every clip of the run: its corpus items, then its ok generated clips, in id order."""
    from voxarena.orchestrator.run.manifest import ManifestSet, is_corpus_spoof

    out = []
    for item in ManifestSet.from_file(run_dir / "manifest.jsonl"):
        info = sf.info(item.audio_path)
        fake = ((0, info.frames),) if is_corpus_spoof(item) else ()
        out.append(ClipTruth(item.id, item.audio_path, info.samplerate, info.frames, fake))
    for _, row in sorted(read_records(run_dir / "generations.jsonl", GenerationRecord).items()):
        if row.ok:
            out.append(_generated_truth(run_dir, row))
    return out


def _generated_truth(run_dir: Path, row: GenerationRecord) -> ClipTruth:
    info = sf.info(run_dir / str(row.audio))
    if row.partial:
        fake = tuple((int(s["start"]), int(s["end"])) for s in row.partial["spans"])
    else:
        fake = ((0, info.frames),)
    return ClipTruth(row.id, str(row.audio), info.samplerate, info.frames, fake)


def _stretches(truth: ClipTruth) -> list[tuple[int, int, str]]:
    """(start, end, kind) covering the clip: the fake intervals and the bona fide stretches between them."""
    out, at = [], 0
    for start, end in truth.fake:
        if start > at:
            out.append((at, start, "bonafide"))
        out.append((start, end, "spoof"))
        at = end
    if at < truth.samples:
        out.append((at, truth.samples, "bonafide"))
    return out


def write_clips_tsv(truths: list[ClipTruth], out: Path) -> Path:
    path = out / "clips.tsv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f, delimiter="\t", lineterminator="\n")
        w.writerow(["clip", "audio", "sample_rate", "samples"])
        w.writerows([t.id, t.audio, t.rate, t.samples] for t in truths)
    return path


def write_rttm(truths: list[ClipTruth], out: Path) -> Path:
    path = out / "labels.rttm"
    lines = [
        f"SPEAKER {t.id} 1 {a / t.rate:.6f} {(b - a) / t.rate:.6f} <NA> <NA> {kind} <NA> <NA>"
        for t in truths
        for a, b, kind in _stretches(t)
    ]
    path.write_text("".join(line + "\n" for line in lines))
    return path


def read_rttm(path: Path, rates: dict[str, int]) -> dict[str, tuple[tuple[int, int], ...]]:
    """Clip id -> its spoof intervals in samples (``rates``: clip id -> sample rate), from ``labels.rttm``."""
    fake: dict[str, list[tuple[int, int]]] = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        parts = line.split()
        if len(parts) != 10 or parts[0] != "SPEAKER" or parts[7] not in ("bonafide", "spoof"):
            raise ValueError(f"{path}:{n}: not an RTTM line of this export: {line!r}")
        clip, rate = parts[1], rates[parts[1]]
        start = int(round(float(parts[3]) * rate))
        end = start + int(round(float(parts[4]) * rate))
        spans = fake.setdefault(clip, [])
        if parts[7] == "spoof":
            spans.append((start, end))
    return {clip: tuple(spans) for clip, spans in fake.items()}


def write_partialspoof(truths: list[ClipTruth], out: Path) -> list[Path]:
    written = []
    for resolution in RESOLUTIONS:
        labels = {t.id: (~segment_labels(t.samples, t.rate, t.fake, resolution)).astype(np.int8) for t in truths}
        name = f"seglab_{resolution:g}"
        np.save(out / f"{name}.npy", np.array(labels, dtype=object), allow_pickle=True)
        (out / f"{name}.txt").write_text("".join(f"{k} {' '.join(map(str, v))}\n" for k, v in labels.items()))
        written += [out / f"{name}.npy", out / f"{name}.txt"]
    return written


def export_labels(run_dir: Path, fmt: str, out: Path) -> list[Path]:
    """Write the run's labels in ``fmt`` (``FORMATS``) under ``out``; the files written."""
    if fmt not in FORMATS:
        raise ValueError(f"format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if not (run_dir / "manifest.jsonl").exists():
        raise FileNotFoundError(f"{run_dir}: no manifest.jsonl (not a run directory?)")
    truths = clip_truths(run_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = write_rttm(truths, out) if fmt == "rttm" else write_partialspoof(truths, out)
    return [write_clips_tsv(truths, out), *([written] if isinstance(written, Path) else written)]

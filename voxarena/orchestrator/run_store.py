"""The run directory: append-only JSONL tables keyed by id, and content-addressed audio.

A record is appended only after the audio it points to is completely on disk (written to a temp
file and renamed), so a run killed at any moment leaves a consistent store; a torn last line is cut
off on the next open. A rerun skips ids already recorded (resume): a failure is a row with its
reason, never a missing row.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import threading
from pathlib import Path

CLEAN = "clean"


def generation_id(generator: str, task: str, item_id: str, iteration: int = 1) -> str:
    """Iteration 1 is the one-shot clip; I2D iteration k > 1 gets a suffix."""
    base = f"{generator}|{task}|{item_id}"
    return base if iteration == 1 else f"{base}|i2d{iteration}"


def detector_label(detector: str, condition: str) -> str:
    """``detector`` on the clean channel, ``detector@condition`` under a channel condition."""
    return detector if condition == CLEAN else f"{detector}@{condition}"


def detection_id(detector: str, condition: str, clip_id: str) -> str:
    """A detector's score of a clip under a channel condition."""
    return f"{detector_label(detector, condition)}|{clip_id}"


def condition_of(row: dict) -> str:
    """A detection row's (or metrics row's) channel condition; rows from before conditions are clean."""
    return row.get("condition") or CLEAN


def iteration_of(row: dict) -> int:
    """A generation's (or its detection's) I2D iteration; 1 is the one-shot clip."""
    return int(row.get("iteration") or 1)


def read_jsonl(path: Path) -> dict[str, dict]:
    """A table read-only, as the run sees it: the latest row per id; a torn last line (a run killed
    mid-write) is left out, not cut off (JsonlTable, the writer, does that); no file, no rows."""
    if not path.exists():
        return {}
    text = path.read_text()
    lines = text.splitlines() if text.endswith("\n") else text.splitlines()[:-1]
    out = {}
    for line in lines:
        if line.strip():
            row = json.loads(line)
            out[row["id"]] = row
    return out


def read_csv(path: Path) -> list[dict]:
    """A metrics table as dicts of strings; no file, no rows."""
    if not path.exists():
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


class JsonlTable:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self.rows: dict[str, dict] = {}
        if path.exists():
            self._load()

    def _load(self) -> None:
        data = self.path.read_bytes()
        end = data.rfind(b"\n") + 1
        if end < len(data):  # a torn write from a killed run: drop it
            with open(self.path, "r+b") as f:
                f.truncate(end)
            data = data[:end]
        for line in data.decode().splitlines():
            if line.strip():
                row = json.loads(line)
                self.rows[row["id"]] = row  # the latest row for an id wins

    def __contains__(self, row_id: str) -> bool:
        return row_id in self.rows

    def get(self, row_id: str) -> dict | None:
        return self.rows.get(row_id)

    def append(self, row: dict) -> None:
        line = (json.dumps(row, sort_keys=True) + "\n").encode()
        with self._lock:
            with open(self.path, "ab") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
            self.rows[row["id"]] = row

    def sorted_rows(self) -> list[dict]:
        return [self.rows[k] for k in sorted(self.rows)]


class RunStore:
    def __init__(self, run_dir: Path) -> None:
        self.dir = run_dir
        self.audio_dir = run_dir / "audio"
        self.metrics_dir = run_dir / "metrics"
        self.logs_dir = run_dir / "logs"
        for d in (self.dir, self.audio_dir, self.metrics_dir, self.logs_dir):
            d.mkdir(parents=True, exist_ok=True)
        self.generations = JsonlTable(run_dir / "generations.jsonl")
        self.detections = JsonlTable(run_dir / "detections.jsonl")
        self.measurements = JsonlTable(run_dir / "measurements.jsonl")
        # Channel conditions: one row per (condition, clip) with the degraded audio's path and hash.
        self.degradations = JsonlTable(run_dir / "degradations.jsonl")

    @property
    def manifest_path(self) -> Path:
        return self.dir / "manifest.jsonl"

    @property
    def run_json(self) -> Path:
        return self.dir / "run.json"

    def put_audio(self, wav: bytes) -> tuple[str, str]:
        """Store WAV bytes under audio/<sha[:2]>/<sha>.wav; returns (path relative to the run, sha256)."""
        sha = hashlib.sha256(wav).hexdigest()
        rel = Path("audio") / sha[:2] / f"{sha}.wav"
        path = self.dir / rel
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(f".{sha}.{threading.get_ident()}.tmp")
            tmp.write_bytes(wav)
            os.replace(tmp, path)
        return str(rel), sha

    def read_json(self) -> dict | None:
        return json.loads(self.run_json.read_text()) if self.run_json.exists() else None

    def write_json(self, data: dict) -> None:
        tmp = self.run_json.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        tmp.replace(self.run_json)

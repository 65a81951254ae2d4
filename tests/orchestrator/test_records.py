"""Typed run records: every row kind, ok and failed, old and new, goes through ``from_dict``/``to_dict`` and
is written back byte for byte (keys, omitted vs null, numbers), unknown keys included."""

from __future__ import annotations

import json

import pytest

from voxarena.orchestrator.store.records import (
    DegradationRecord,
    DetectionRecord,
    GenerationRecord,
    MeasurementRecord,
    RecordError,
    Row,
)
from voxarena.orchestrator.store.run_store import RunStore

TIMING = {"wall_seconds": 0.012345678901234567, "scope": "MODEL_ONLY", "first_call": True}
GENERATION_OK = {
    "id": "g|CLONE|u1|i2d2",
    "generator": "g",
    "task": "CLONE",
    "item": "u1",
    "seed": 20260102,
    "iteration": 2,
    "speaker_reference": "u0",
    "reference_clip": "g|CLONE|u1",
    "text": "",
    "attempts": 1,
    "status": "ok",
    "audio": "audio/ab/ab12.wav",
    "audio_sha256": "ab12",
    "sample_rate": 16000,
    "duration": 1.0,
    "voice": "default",
    "timing": TIMING,
}
ROWS = {
    "generation ok, I2D iteration": (GenerationRecord, GENERATION_OK),
    "generation failed before the call (no attempts, no text)": (
        GenerationRecord,
        {
            "id": "g|TTS|u2",
            "generator": "g",
            "task": "TTS",
            "item": "u2",
            "seed": 3,
            "iteration": 1,
            "speaker_reference": "u2",
            "status": "failed",
            "failure": "input",
            "code": "BAD_INPUT",
            "reason": "g|TTS|u2: item has no text (no transcript and no prompts configured)",
        },
    ),
    "generation failed call with attempts": (
        GenerationRecord,
        {
            "id": "g|TTS|u3",
            "generator": "g",
            "task": "TTS",
            "item": "u3",
            "seed": 4,
            "iteration": 1,
            "speaker_reference": "u3",
            "text": "hello",
            "attempts": 3,
            "status": "failed",
            "failure": "transient",
            "code": "UNAVAILABLE",
            "reason": "g|TTS|u3: UNAVAILABLE: connection refused",
        },
    ),
    "generation from before I2D and kinds": (
        GenerationRecord,
        {"id": "g|TTS|u4", "generator": "g", "task": "TTS", "item": "u4", "seed": 5, "status": "failed", "code": "X"},
    ),
    "detection ok": (
        DetectionRecord,
        {
            "id": "d@mp3|u1",
            "detector": "d",
            "condition": "mp3",
            "clip": "u1",
            "kind": "bonafide",
            "generator": "bonafide",
            "task": "",
            "iteration": 1,
            "item": "u1",
            "speaker": "s1",
            "status": "ok",
            "score": -1.2345678901234567e-07,
            "is_llr": False,
            "wall_seconds": 0.1,
        },
    ),
    "detection failed item error": (
        DetectionRecord,
        {
            "id": "d|g|TTS|u1",
            "detector": "d",
            "condition": "clean",
            "clip": "g|TTS|u1",
            "kind": "spoof",
            "generator": "g",
            "task": "TTS",
            "iteration": 1,
            "item": "u1",
            "speaker": "s1",
            "status": "failed",
            "failure": "input",
            "code": "ITEM_3",
            "reason": "g|TTS|u1: audio is 700.0 s",
        },
    ),
    "fused detection (no wall_seconds)": (
        DetectionRecord,
        {
            "id": "f|u1",
            "detector": "f",
            "condition": "clean",
            "clip": "u1",
            "kind": "bonafide",
            "generator": "bonafide",
            "task": "",
            "iteration": 1,
            "item": "u1",
            "speaker": "s1",
            "status": "ok",
            "score": 3.0000000000000004,
            "is_llr": True,
        },
    ),
    "detection from before conditions and I2D": (
        DetectionRecord,
        {
            "id": "d|u1",
            "detector": "d",
            "clip": "u1",
            "kind": "bonafide",
            "generator": "bonafide",
            "task": "",
            "item": "u1",
            "speaker": "s1",
            "status": "ok",
            "score": 12,
            "is_llr": False,
        },
    ),
    "degradation ok with an attack": (
        DegradationRecord,
        {
            "id": "attacked|g|TTS|u1",
            "condition": "attacked",
            "clip": "g|TTS|u1",
            "source_sha256": "cd34",
            "status": "ok",
            "audio": "audio/ef/ef56.wav",
            "audio_sha256": "ef56",
            "sample_rate": 8000,
            "duration": 0.999875,
            "steps": [
                {"codec": "mp3", "compression": 0.5, "rate": 8000, "kbps": 24.125},
                {"attack": {"target": "d", "queries": 40, "snr_db": None, "score": 1.5, "original_score": -2.0}},
            ],
            "clipped_samples": 0,
        },
    ),
    "degradation failed": (
        DegradationRecord,
        {
            "id": "noisy|u1",
            "condition": "noisy",
            "clip": "u1",
            "source_sha256": "ab12",
            "status": "failed",
            "failure": "input",
            "code": "BAD_INPUT",
            "reason": "u1: condition 'noisy': noise at 10 dB SNR: the clip is silent (zero power)",
        },
    ),
    "measurement ok": (
        MeasurementRecord,
        {
            "id": "g|TTS|u1",
            "generator": "g",
            "task": "TTS",
            "iteration": 1,
            "item": "u1",
            "speaker": "s1",
            "status": "ok",
            "values": {"wer.errors": 1.0, "wer.ref": 7.0, "sim.cosine": 0.8123456789012345},
            "notes": {"wer.hypothesis": "hello world"},
            "errors": {},
        },
    ),
    "measurement failed": (
        MeasurementRecord,
        {
            "id": "g|TTS|u2",
            "generator": "g",
            "task": "TTS",
            "iteration": 1,
            "item": "u2",
            "speaker": "s2",
            "status": "failed",
            "failure": "service_error",
            "code": "INTERNAL",
            "reason": "g|TTS|u2: INTERNAL: boom",
        },
    ),
    "a row of a newer run: an unknown key and an explicit null": (
        GenerationRecord,
        {**GENERATION_OK, "future_field": {"nested": [1, 2.5, None]}, "voice": None},
    ),
}


def _line(row: dict) -> bytes:
    return (json.dumps(row, sort_keys=True) + "\n").encode()  # as the run store writes a row


@pytest.mark.parametrize("record,row", ROWS.values(), ids=ROWS.keys())
def test_every_row_kind_round_trips_to_the_same_bytes(record, row, tmp_path):
    rec = record.from_dict(json.loads(_line(row)))
    assert _line(rec.to_dict()) == _line(row)
    store = RunStore(tmp_path)  # and through the store: appended, reopened, read back
    table = {
        GenerationRecord: store.generations,
        DetectionRecord: store.detections,
        MeasurementRecord: store.measurements,
        DegradationRecord: store.degradations,
    }[record]
    table.append(rec)
    assert table.path.read_bytes() == _line(row)
    store.close()
    reopened = RunStore(tmp_path)
    again = getattr(reopened, table.path.stem).get(row["id"])
    assert again == rec and _line(again.to_dict()) == _line(row)
    reopened.close()


def test_fields_read_as_attributes_with_the_defaults_of_older_rows():
    old = DetectionRecord.from_dict(ROWS["detection from before conditions and I2D"][1])
    assert (old.channel, old.i2d_iteration, old.condition, old.iteration) == ("clean", 1, None, None)
    assert old.ok and old.score == 12 and isinstance(old.score, int)  # nothing converted
    new = GenerationRecord.from_dict(ROWS["a row of a newer run: an unknown key and an explicit null"][1])
    assert new.voice is None and new.extra == {"future_field": {"nested": [1, 2.5, None]}, "voice": None}
    assert new.i2d_iteration == 2 and new.timing == TIMING


def test_a_value_set_after_reading_replaces_an_explicit_null():
    rec = GenerationRecord.from_dict({**GENERATION_OK, "voice": None})
    rec.voice = "alto"
    assert rec.to_dict()["voice"] == "alto"


def test_a_row_without_a_field_every_row_of_its_table_has_is_refused_naming_it():
    with pytest.raises(RecordError, match=r"d\|u1: not a row of detections.jsonl \(no kind, speaker\)"):
        DetectionRecord.from_dict({"id": "d|u1", "status": "ok", "detector": "d", "clip": "u1", "generator": "bonafide",
                                   "task": "", "item": "u1"})  # fmt: skip
    with pytest.raises(RecordError, match=r"\(no id\): not a row of rows \(no id\)"):
        Row.from_dict({"status": "ok"})


def test_a_field_left_unset_is_not_written():
    rec = MeasurementRecord(id="m", status="failed", generator="g", task="TTS", item="u", speaker="s")
    assert rec.to_dict() == {
        "id": "m",
        "status": "failed",
        "generator": "g",
        "task": "TTS",
        "item": "u",
        "speaker": "s",
    }

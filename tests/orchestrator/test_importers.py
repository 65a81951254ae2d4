"""Dataset importers besides LibriSpeech: the VCTK layout and a plain CSV / JSONL manifest whose extra
columns become labels, and so breakdown axes (ClonEval's per-emotion table is one such axis)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import yaml

from voxarena.orchestrator.run.config import ConfigError, DatasetConfig, load_config
from voxarena.orchestrator.run.importers import build_manifest
from voxarena.orchestrator.run.manifest import DatasetError
from voxarena.orchestrator.run.pipeline import Arena


def tone(path: Path, seconds: float = 1.0, rate: int = 16000, f0: float = 150.0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(int(seconds * rate)) / rate
    sf.write(path, (0.2 * np.sin(2 * np.pi * f0 * t)).astype(np.float32), rate)
    return path


def test_vctk_092_layout(tmp_path):
    root = tmp_path / "VCTK"
    for spk in ("p225", "p226"):
        for n in ("001", "002"):
            tone(root / "wav48_silence_trimmed" / spk / f"{spk}_{n}_mic1.flac")
            tone(root / "wav48_silence_trimmed" / spk / f"{spk}_{n}_mic2.flac")
            (root / "txt" / spk).mkdir(parents=True, exist_ok=True)
            (root / "txt" / spk / f"{spk}_{n}.txt").write_text(f"Please call Stella {n}.\n")
    (root / "speaker-info.txt").write_text(
        "ID  AGE  GENDER  ACCENTS  REGION\np225  23  F    English    Southern England\n"
        "p226  22  M    English    Surrey\n"
    )
    m = build_manifest(DatasetConfig(kind="vctk", root=str(root), max_per_speaker=1), 10)
    assert [i.id for i in m] == ["p225_001", "p226_001"] and [i.seed for i in m] == [10, 11]
    assert m.items[0].text == "Please call Stella 001." and m.items[0].labels["sex"] == "F"
    assert m.items[1].labels == {
        "corpus": "vctk",
        "subset": "vctk",
        "speaker": "p226",
        "sex": "M",
        "age": "22",
        "accent": "English",
    }
    only = build_manifest(DatasetConfig(kind="vctk", root=str(root), subsets=["p226"]), 0)
    assert {i.speaker for i in only} == {"p226"} and len(only) == 2
    with pytest.raises(DatasetError, match="not a VCTK layout"):
        build_manifest(DatasetConfig(kind="vctk", root=str(tmp_path)), 0)


def write_table(path: Path, rows: list[dict]) -> Path:
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        with open(path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
    return path


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_table_manifest(tmp_path, suffix):
    rows = [
        {
            "id": f"u{i}",
            "audio": str(tone(tmp_path / "a" / f"u{i}.wav", f0=100 + 20 * i).relative_to(tmp_path)),
            "speaker": f"s{i % 2}",
            "text": f"sentence {i}",
            "emotion": ["neutral", "angry"][i % 2],
        }
        for i in range(4)
    ]
    table = write_table(tmp_path / f"clips{suffix}", rows)
    m = build_manifest(DatasetConfig(kind="table", root=str(table)), 0)
    assert [i.labels["emotion"] for i in m] == ["neutral", "angry", "neutral", "angry"]
    assert (
        m.items[0].corpus == "clips" and m.items[2].text == "sentence 2" and m.items[0].audio_path.endswith("a/u0.wav")
    )


def test_table_errors_name_the_row(tmp_path):
    good = str(tone(tmp_path / "x.wav"))
    cases = [
        ([{"id": "a", "audio": good, "speaker": ""}], "row 1 \\(a\\): missing speaker"),
        ([{"id": "a", "audio": str(tmp_path / "nope.wav"), "speaker": "s"}], "a: audio file .* does not exist"),
        (
            [{"id": "a", "audio": good, "speaker": "s"}, {"id": "a", "audio": good, "speaker": "s"}],
            "a: duplicate item id",
        ),
    ]
    for rows, message in cases:
        with pytest.raises(DatasetError, match=message):
            build_manifest(DatasetConfig(kind="table", root=str(write_table(tmp_path / "t.csv", rows))), 0)
    with pytest.raises(DatasetError, match="does not exist"):
        build_manifest(DatasetConfig(kind="table", root=str(tmp_path / "none.csv")), 0)


def test_librispeech_still_needs_subsets(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"dataset": {"root": str(tmp_path)}}))
    with pytest.raises(ConfigError, match="needs at least one subset"):
        load_config(path)


def test_a_label_column_is_a_breakdown_axis_in_the_metrics(tmp_path):
    rows = [
        {
            "id": f"u{i}",
            "audio": str(tone(tmp_path / f"u{i}.wav", seconds=1.5, f0=90 + 15 * i)),
            "speaker": f"s{i % 3}",
            "text": "hello there",
            "emotion": ["neutral", "angry", "sad"][i % 3],
        }
        for i in range(6)
    ]
    table = write_table(tmp_path / "emo.csv", rows)
    cfg = {
        "name": "emo",
        "dataset": {"kind": "table", "root": str(table)},
        "protocol": {"seed": 1, "tasks": ["RECONSTRUCT"]},
        "generators": {"dummy-generator": {}},
        "detectors": {"dummy-detector": {}},
        "scorer": {"metrics": ["rtf", "psnr"], "bootstrap_resamples": 0},
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    Arena(load_config(path), tmp_path / "run", progress=False).run()
    with open(tmp_path / "run" / "metrics" / "generator_metrics_by_label.csv", newline="") as f:
        gen = [r for r in csv.DictReader(f) if r["label"] == "emotion"]
    assert sorted(r["value"] for r in gen) == ["angry", "neutral", "sad"] and all(r["n_ok"] == "2" for r in gen)
    with open(tmp_path / "run" / "metrics" / "detection_by_label.csv", newline="") as f:
        det = [r for r in csv.DictReader(f) if r["label"] == "emotion" and r["generator"] == "pooled"]
    assert sorted(r["value"] for r in det) == ["angry", "neutral", "sad"] and all(r["n_bonafide"] == "2" for r in det)

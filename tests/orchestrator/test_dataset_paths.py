"""Dataset audio stays inside the dataset root (issue 13, item 4): a table row naming ``../x`` or an
absolute path elsewhere, an ASVspoof id with ``..`` in it, or a symlink in a corpus tree pointing out is
refused with the item and the path named, unless the config opts out with ``allow_outside_root``."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from voxarena.orchestrator.run.config import DatasetConfig
from voxarena.orchestrator.run.importers import build_manifest
from voxarena.orchestrator.run.manifest import DatasetError


def tone(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(path, (0.1 * np.sin(np.arange(8000) / 8.0)).astype(np.float32), 16000)
    return path


def table(path: Path, audio: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["id", "audio", "speaker", "text"])
        w.writeheader()
        w.writerows({"id": f"u{i}", "audio": a, "speaker": "s", "text": "hello"} for i, a in enumerate(audio))
    return path


@pytest.fixture
def outside(tmp_path) -> Path:
    return tone(tmp_path / "elsewhere" / "secret.wav")


@pytest.mark.parametrize("how", ["relative", "absolute", "symlink"])
def test_a_table_row_outside_the_root_is_refused(tmp_path, outside, how):
    inside = tone(tmp_path / "ds" / "ok.wav")
    if how == "symlink":
        (tmp_path / "ds" / "link.wav").symlink_to(outside)
        name = "link.wav"
    else:
        name = "../elsewhere/secret.wav" if how == "relative" else str(outside)
    t = table(tmp_path / "ds" / "clips.csv", [inside.name, name])
    with pytest.raises(DatasetError, match=r"u1: audio .* resolves outside the dataset root .*allow_outside_root"):
        build_manifest(DatasetConfig(kind="table", root=str(t)), 0)
    # opted out explicitly: read
    m = build_manifest(DatasetConfig(kind="table", root=str(t), allow_outside_root=True), 0)
    assert [i.id for i in m] == ["u0", "u1"] and Path(m.items[1].audio_path).resolve() == outside.resolve()


def test_paths_inside_the_root_are_read_however_they_are_written(tmp_path):
    a = tone(tmp_path / "ds" / "a" / "x.wav")
    t = table(tmp_path / "ds" / "clips.csv", ["a/x.wav", "a/../a/x.wav", str(a)])
    assert len(build_manifest(DatasetConfig(kind="table", root=str(t)), 0)) == 3


def test_an_asvspoof_id_cannot_climb_out_of_the_audio_directory(tmp_path, outside):
    root = tmp_path / "asv"
    tone(root / "flac" / "LA_E_1.flac")
    tone(tmp_path / "escape.flac")
    protocol = tmp_path / "protocol.txt"
    protocol.write_text("LA_0001 LA_E_1 - - bonafide\nLA_0002 ../../escape - A01 spoof\n")
    with pytest.raises(DatasetError, match=r"\.\./\.\./escape: audio .* resolves outside the dataset root"):
        build_manifest(DatasetConfig(kind="asvspoof", root=str(root), protocol=str(protocol)), 0)


def test_a_symlink_out_of_a_librispeech_tree_is_refused(tmp_path, outside):
    chapter = tmp_path / "LibriSpeech" / "test-clean" / "11" / "22"
    tone(chapter / "11-22-0000.flac")
    (chapter / "11-22-0001.flac").symlink_to(outside)
    (chapter / "11-22.trans.txt").write_text("11-22-0000 HELLO\n11-22-0001 WORLD\n")
    ds = {"kind": "librispeech", "root": str(tmp_path / "LibriSpeech"), "subsets": ["test-clean"]}
    with pytest.raises(DatasetError, match=r"11-22-0001: audio .* resolves outside the dataset root"):
        build_manifest(DatasetConfig(**ds), 0)
    assert len(build_manifest(DatasetConfig(**ds, allow_outside_root=True), 0)) == 2

"""Manifests from the LibriSpeech layout: ids, hashes, seeds, transcripts and prompts."""

import hashlib

import pytest

from voxarena.orchestrator.run.config import DatasetConfig
from voxarena.orchestrator.run.importers import build_librispeech_manifest
from voxarena.orchestrator.run.manifest import DatasetError, ManifestSet


def test_manifest_from_shared_data(speech_dir, tmp_path):
    ds = DatasetConfig(
        root=str(speech_dir / "LibriSpeech"),
        subsets=["test-clean", "test-other"],
        prompts=str(speech_dir / "prompts" / "librispeech-test-clean.trans.txt"),
        max_per_speaker=2,
    )
    m = build_librispeech_manifest(ds, run_seed=100)
    expected = 0
    for subset in ("test-clean", "test-other"):
        for spk in (speech_dir / "LibriSpeech" / subset).iterdir():
            expected += min(2, len(list(spk.glob("*/*.flac"))))
    assert len(m) == expected
    per_speaker = {}
    for i in m:
        per_speaker[i.speaker] = per_speaker.get(i.speaker, 0) + 1
    assert max(per_speaker.values()) == 2
    assert [i.seed for i in m] == [100 + i.index for i in m]
    first = m.items[0]
    assert first.audio_sha256 == hashlib.sha256(open(first.audio_path, "rb").read()).hexdigest()
    clean = [i for i in m if i.subset == "test-clean"]
    other = [i for i in m if i.subset == "test-other"]
    assert all(i.text_source == "transcript" and i.text for i in clean)
    assert all(i.text_source == "prompt" and i.text for i in other)
    # prompts never reuse an evaluation utterance's own transcript
    assert not {i.text for i in other} & {i.text for i in clean}
    assert {i.labels["sex"] for i in m} == {"M", "F"}
    m.to_file(tmp_path / "m.jsonl")
    again = ManifestSet.from_file(tmp_path / "m.jsonl")
    assert again.sha256 == m.sha256 and again.items == m.items


def test_missing_root_and_subset(tmp_path, speech_dir):
    with pytest.raises(DatasetError, match="is not a directory"):
        build_librispeech_manifest(DatasetConfig(root=str(tmp_path / "nope"), subsets=["x"]), 0)
    with pytest.raises(DatasetError, match="subset 'dev-clean'"):
        build_librispeech_manifest(DatasetConfig(root=str(speech_dir / "LibriSpeech"), subsets=["dev-clean"]), 0)

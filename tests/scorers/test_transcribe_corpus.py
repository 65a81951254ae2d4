"""transcribe_corpus: a LibriSpeech subset as a dataset table whose text is Whisper's, labelled as ASR, that
the orchestrator reads as a table; on test-clean (which has human transcripts) the words are mostly right."""

from __future__ import annotations

import json

import pytest

from voxarena.scorers.transcribe_corpus import clean, main


def test_clean_keeps_words_digits_and_apostrophes():
    assert clean("Mrs. Linde's house, 1 mile off—fringed!") == "Mrs Linde's house 1 mile off fringed"


@pytest.mark.slow
def test_a_subset_becomes_a_table_the_orchestrator_reads(speech_dir, tmp_path):
    import jiwer

    from voxarena.orchestrator.run.config import DatasetConfig
    from voxarena.orchestrator.run.importers import build_table_manifest

    out = tmp_path / "items.jsonl"
    assert main(["--root", str(speech_dir / "LibriSpeech"), "--subset", "test-clean", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 14 and all(r["transcript_by"].startswith("whisper tiny.en") for r in rows)
    truth = {}
    for f in (speech_dir / "LibriSpeech" / "test-clean").glob("*/*/*.trans.txt"):
        truth.update(line.split(" ", 1) for line in f.read_text().splitlines())
    refs = [truth[r["id"]].lower() for r in rows]
    hyps = [r["text"].lower() for r in rows]
    assert jiwer.wer(refs, hyps) < 0.15
    manifest = build_table_manifest(DatasetConfig(kind="table", root=str(out), allow_outside_root=True), 1)
    items = list(manifest)
    assert len(items) == 14 and all(
        i.text_source == "transcript" and i.labels["corpus"] == "librispeech" for i in items
    )
    assert items[0].labels["transcript_by"] == rows[0]["transcript_by"]


def test_a_missing_subset_is_named(tmp_path):
    with pytest.raises(SystemExit, match="not a directory"):
        main(["--root", str(tmp_path), "--subset", "nope", "--out", str(tmp_path / "x.jsonl")])

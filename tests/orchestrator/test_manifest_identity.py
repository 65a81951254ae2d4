"""Manifest identity on small generated datasets: item ids, order, limits, seeds (run seed + index),
input hashes, texts and prompts, labels, and the manifest's version (sha256 of its canonical JSONL).

Every expected value is worked out here: hashes with ``hashlib`` over the bytes written, the canonical
JSONL by hand from the item fields (the frozen ``voxarena.manifest/1`` format), seeds from the
convention. No shared corpus is read, so these run in a second and serve as the mutation target's
selection (tests/mutation/run.py, ``manifest``).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from voxarena.orchestrator.run.config import DatasetConfig
from voxarena.orchestrator.run.importers import build_manifest, read_asvspoof_protocol
from voxarena.orchestrator.run.manifest import DatasetError, ManifestItem, ManifestSet, corpus_attack

RATE = 16000


def sha(data: bytes | str) -> str:
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def write_audio(path: Path, samples: int, rate: int = RATE, channels: int = 1, f0: float = 200.0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    t = np.arange(samples) / rate
    x = (0.1 * np.sin(2 * np.pi * f0 * t)).astype(np.float32)
    sf.write(path, x if channels == 1 else np.stack([x] * channels, axis=1), rate, subtype="PCM_16")
    return path


def expected_item(audio: Path, *, id, index, seed, speaker, corpus, subset, text, source, labels, frames, rate=RATE):
    """The item as the frozen format spells it, from the file on disk and the values worked out by hand."""
    return {
        "id": id,
        "index": index,
        "seed": seed,
        "speaker": speaker,
        "corpus": corpus,
        "subset": subset,
        "audio_path": str(audio.resolve()),
        "audio_sha256": sha(audio.read_bytes()),
        "duration": frames / rate,
        "sample_rate": rate,
        "text": text,
        "text_source": source,
        "text_sha256": sha(text),
        "labels": labels,
    }


def canonical(items: list[dict]) -> bytes:
    """The canonical JSONL: one sorted-key JSON object per line, newline-terminated."""
    return "".join(json.dumps(i, sort_keys=True) + "\n" for i in items).encode()


def as_dicts(m: ManifestSet) -> list[dict]:
    return [vars(i) for i in m]


# ------------------------------------------------------------------------------------ table manifests
@pytest.fixture
def table(tmp_path, synthetic_dataset_factory) -> Path:
    """Five clips of three speakers: a1 and b1 with text, a2 without (a prompt's), two corpus spoofs."""
    rows = [
        {"id": "a1", "speaker": "s1", "seconds": 0.5, "text": "One.", "sex": "F"},
        {"id": "a2", "speaker": "s1", "seconds": 0.6, "text": "", "sex": "F"},
        {"id": "b1", "speaker": "s2", "seconds": 0.7, "text": "Three.", "sex": "M"},
        {"id": "sp1", "speaker": "s2", "seconds": 0.5, "text": "", "key": "spoof", "attack": "A07"},
        {"id": "sp2", "speaker": "s3", "seconds": 0.25, "text": "", "key": "spoof"},
    ]
    path = synthetic_dataset_factory(tmp_path / "clips", rows)
    (tmp_path / "prompts.txt").write_text("a1 NOT THIS ONE: A1 IS AN ITEM\np1 PROMPT ONE\np2\np3 PROMPT THREE\n")
    return path


def test_a_table_manifest_item_by_item_and_its_version(table, tmp_path):
    prompts = str(tmp_path / "prompts.txt")
    m = build_manifest(DatasetConfig(kind="table", root=str(table), prompts=prompts), 100)
    audio = table.parent / "audio"
    expected = [
        expected_item(
            audio / "a1.wav",
            id="a1",
            index=0,
            seed=100,
            speaker="s1",
            corpus="manifest",
            subset="",
            text="One.",
            source="transcript",
            labels={"corpus": "manifest", "speaker": "s1", "sex": "F"},
            frames=8000,
        ),
        expected_item(
            audio / "a2.wav",
            id="a2",
            index=1,
            seed=101,
            speaker="s1",
            corpus="manifest",
            subset="",
            text="PROMPT ONE",  # a1's line is an item's own text: left out; p2 has no text: skipped
            source="prompt",
            labels={"corpus": "manifest", "speaker": "s1", "sex": "F"},
            frames=9600,
        ),
        expected_item(
            audio / "b1.wav",
            id="b1",
            index=2,
            seed=102,
            speaker="s2",
            corpus="manifest",
            subset="",
            text="Three.",
            source="transcript",
            labels={"corpus": "manifest", "speaker": "s2", "sex": "M"},
            frames=11200,
        ),
        expected_item(  # a corpus spoof is never spoken anew: no prompt
            audio / "sp1.wav",
            id="sp1",
            index=3,
            seed=103,
            speaker="s2",
            corpus="manifest",
            subset="",
            text="",
            source="none",
            labels={"corpus": "manifest", "speaker": "s2", "key": "spoof", "attack": "A07"},
            frames=8000,
        ),
        expected_item(
            audio / "sp2.wav",
            id="sp2",
            index=4,
            seed=104,
            speaker="s3",
            corpus="manifest",
            subset="",
            text="",
            source="none",
            labels={"corpus": "manifest", "speaker": "s3", "key": "spoof"},
            frames=4000,
        ),
    ]
    assert as_dicts(m) == expected
    assert m.to_bytes() == canonical(expected)
    assert m.sha256 == sha(canonical(expected))
    assert [i.id for i in m.bonafide()] == ["a1", "a2", "b1"]
    assert m.corpus_attacks() == ["manifest:A07", "manifest:spoof"]
    assert [corpus_attack(i) for i in m][3:] == ["manifest:A07", "manifest:spoof"]
    assert list(m.by_id()) == ["a1", "a2", "b1", "sp1", "sp2"] and m.by_id()["b1"].seed == 102
    assert len(m) == 5

    # The version follows every input: the run seed (item seeds), the prompt offset (a text), one sample.
    assert build_manifest(DatasetConfig(kind="table", root=str(table), prompts=prompts), 100).sha256 == m.sha256
    reseeded = build_manifest(DatasetConfig(kind="table", root=str(table), prompts=prompts), 101)
    assert [i.seed for i in reseeded] == [101, 102, 103, 104, 105] and reseeded.sha256 != m.sha256
    offset = build_manifest(DatasetConfig(kind="table", root=str(table), prompts=prompts, prompt_offset=1), 100)
    assert offset.items[1].text == "PROMPT THREE" and offset.items[1].text_sha256 == sha("PROMPT THREE")
    x, rate = sf.read(audio / "b1.wav", dtype="int16")
    x[100] += 1
    sf.write(audio / "b1.wav", x, rate, subtype="PCM_16")
    changed = build_manifest(DatasetConfig(kind="table", root=str(table), prompts=prompts), 100)
    assert [a == b for a, b in zip(m, changed)] == [True, True, False, True, True]
    assert changed.items[2].audio_sha256 == sha((audio / "b1.wav").read_bytes()) != m.items[2].audio_sha256


def test_limits_keep_the_first_items_per_speaker_and_renumber(table):
    m = build_manifest(DatasetConfig(kind="table", root=str(table), max_per_speaker=1), 5)
    assert [(i.id, i.index, i.seed) for i in m] == [("a1", 0, 5), ("b1", 1, 6), ("sp2", 2, 7)]
    two = build_manifest(DatasetConfig(kind="table", root=str(table), max_per_speaker=2, max_items=4), 0)
    assert [(i.id, i.index, i.seed) for i in two] == [("a1", 0, 0), ("a2", 1, 1), ("b1", 2, 2), ("sp1", 3, 3)]
    both = build_manifest(DatasetConfig(kind="table", root=str(table), max_per_speaker=1, max_items=2), 0)
    assert [i.id for i in both] == ["a1", "b1"]
    # Without prompts a missing text stays empty.
    assert [(i.text, i.text_source) for i in two][1] == ("", "none")


def test_prompts_run_out_with_a_named_error(table, tmp_path):
    prompts = str(tmp_path / "prompts.txt")  # two usable prompts: p1 and p3
    ok = build_manifest(DatasetConfig(kind="table", root=str(table), prompts=prompts, prompt_offset=1), 0)
    assert ok.items[1].text == "PROMPT THREE"
    with pytest.raises(DatasetError, match=r"^a2: ran out of prompts \(2 in .*prompts.txt\)$"):
        build_manifest(DatasetConfig(kind="table", root=str(table), prompts=prompts, prompt_offset=2), 0)
    with pytest.raises(DatasetError, match=r"prompts file .*nope.txt does not exist"):
        build_manifest(DatasetConfig(kind="table", root=str(table), prompts=str(tmp_path / "nope.txt")), 0)


def test_each_item_without_text_takes_the_next_prompt(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(
        "".join(
            json.dumps({"id": i, "audio": str(write_audio(tmp_path / f"{i}.wav", 800)), "speaker": "s"}) + "\n"
            for i in ("a", "b", "c")
        )
    )
    (tmp_path / "p.txt").write_text("p1 ONE\np2 TWO\np3 THREE\np4 FOUR\n")
    ds = DatasetConfig(kind="table", root=str(path), prompts=str(tmp_path / "p.txt"), prompt_offset=1)
    assert [(i.text, i.text_source) for i in build_manifest(ds, 0)] == [
        ("TWO", "prompt"),
        ("THREE", "prompt"),
        ("FOUR", "prompt"),
    ]
    with pytest.raises(DatasetError, match=r"^c: ran out of prompts \(4 in .*p.txt\)$"):
        build_manifest(ds.model_copy(update={"prompt_offset": 2}), 0)
    with pytest.raises(DatasetError, match=r"^a: ran out of prompts \(4 in .*p.txt\)$"):  # past the end already
        build_manifest(ds.model_copy(update={"prompt_offset": 9}), 0)


def test_a_jsonl_table_with_absolute_paths_typed_labels_and_blank_lines(tmp_path):
    a = write_audio(tmp_path / "x" / "one.wav", 3200, rate=8000)
    b = write_audio(tmp_path / "two.flac", 2400, rate=24000)
    path = tmp_path / "set.jsonl"
    path.write_text(
        json.dumps({"id": "one", "audio": str(a), "speaker": 7, "age": 30, "subset": "dev"})
        + "\n\n"
        + json.dumps({"id": 2, "audio": "two.flac", "speaker": "s", "text": "Hi.", "emotion": "sad"})
        + "\n"
    )
    m = build_manifest(DatasetConfig(kind="table", root=str(path)), 3)
    assert as_dicts(m) == [
        expected_item(
            a,
            id="one",
            index=0,
            seed=3,
            speaker="7",
            corpus="set",
            subset="dev",
            text="",
            source="none",
            labels={"corpus": "set", "subset": "dev", "speaker": "7", "age": "30"},
            frames=3200,
            rate=8000,
        ),
        expected_item(
            b,
            id="2",
            index=1,
            seed=4,
            speaker="s",
            corpus="set",
            subset="",
            text="Hi.",
            source="transcript",
            labels={"corpus": "set", "speaker": "s", "emotion": "sad"},
            frames=2400,
            rate=24000,
        ),
    ]
    path.write_text(json.dumps({"id": "one", "audio": str(a), "speaker": "s"}) + "\n{not json\n")
    with pytest.raises(DatasetError, match=r"set.jsonl:2: not JSON"):
        build_manifest(DatasetConfig(kind="table", root=str(path)), 0)


def test_audio_that_is_not_mono_or_not_audio_is_refused(tmp_path):
    stereo = write_audio(tmp_path / "st.wav", 1600, channels=2)
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"id": "st", "audio": str(stereo), "speaker": "s"}) + "\n")
    with pytest.raises(DatasetError, match=r"^st: .*st.wav has 2 channels; audio must be mono$"):
        build_manifest(DatasetConfig(kind="table", root=str(path)), 0)
    junk = tmp_path / "junk.wav"
    junk.write_text("not audio")
    path.write_text(json.dumps({"id": "j", "audio": str(junk), "speaker": "s"}) + "\n")
    with pytest.raises(DatasetError, match=r"^j: cannot read .*junk.wav"):
        build_manifest(DatasetConfig(kind="table", root=str(path)), 0)


# ------------------------------------------------------------------------------------ the frozen file
def test_to_file_and_from_file_keep_the_canonical_bytes(table, tmp_path):
    m = build_manifest(DatasetConfig(kind="table", root=str(table)), 9)
    out = tmp_path / "manifest.jsonl"
    m.to_file(out)
    assert out.read_bytes() == canonical(as_dicts(m)) and not out.with_suffix(".tmp").exists()
    again = ManifestSet.from_file(out)
    assert again.items == m.items and again.sha256 == sha(out.read_bytes())
    out.write_text(out.read_text().replace("\n", "\n\n", 1))  # a blank line is no item
    assert ManifestSet.from_file(out).items == m.items
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:3] + ["{broken"]) + "\n")
    with pytest.raises(DatasetError, match=r"manifest.jsonl:4: not a manifest item"):
        ManifestSet.from_file(out)
    out.write_text(json.dumps({"id": "x"}) + "\n")  # fields missing
    with pytest.raises(DatasetError, match=r"manifest.jsonl:1: not a manifest item"):
        ManifestSet.from_file(out)


def test_the_version_is_the_sha256_of_the_canonical_lines():
    item = ManifestItem("u", 0, 1, "s", "c", "", "/a.wav", "0" * 64, 1.5, 16000, "t", "transcript", sha("t"))
    line = (
        '{"audio_path": "/a.wav", "audio_sha256": "' + "0" * 64 + '", "corpus": "c", "duration": 1.5, "id": "u", '
        '"index": 0, "labels": {}, "sample_rate": 16000, "seed": 1, "speaker": "s", "subset": "", "text": "t", '
        '"text_sha256": "' + sha("t") + '", "text_source": "transcript"}\n'
    )
    assert ManifestSet([item, item]).to_bytes() == (line + line).encode()
    assert ManifestSet([item]).sha256 == sha(line)
    assert ManifestSet([]).sha256 == sha(b"")


# ------------------------------------------------------------------------------------ LibriSpeech layout
@pytest.fixture
def librispeech(tmp_path) -> Path:
    """test-clean: speaker 19 (three utterances, the last without transcript), 84 (two, one without);
    test-other: 84 (one, no transcript file at all). SPEAKERS.TXT has comments and a line without bars."""
    root = tmp_path / "LibriSpeech"
    frames = {
        "test-clean/19/198/19-198-0000": 4000,
        "test-clean/19/198/19-198-0001": 4800,
        "test-clean/19/198/19-198-0002": 5600,
        "test-clean/84/121/84-121-0000": 6400,
        "test-clean/84/121/84-121-0001": 7200,
        "test-other/84/200/84-200-0000": 8000,
    }
    for rel, n in frames.items():
        write_audio(root / f"{rel}.flac", n, f0=100 + n / 100)
    (root / "test-clean/19/198/19-198.trans.txt").write_text("19-198-0000 HELLO WORLD\n\n19-198-0001  SECOND ONE \n")
    (root / "test-clean/84/121/84-121.trans.txt").write_text("84-121-0000 THIRD\n")
    (root / "SPEAKERS.TXT").write_text(
        "; ID | SEX | SUBSET | NAME\n;19 | M | x | commented out\n19 | F | test-clean | A\n84 | M | test-clean | B\n"
        "no bars here\n"
    )
    (tmp_path / "prompts.txt").write_text(
        "19-198-0000 AN ITEM'S OWN TEXT\nx1 PROMPT ONE\nx2 \nx3 PROMPT THREE\nx4 PROMPT FOUR\n"
    )
    return root


def test_a_librispeech_tree_item_by_item(librispeech, tmp_path):
    ds = DatasetConfig(
        root=str(librispeech), subsets=["test-clean", "test-other"], prompts=str(tmp_path / "prompts.txt")
    )
    m = build_manifest(ds, 7)
    rows = [
        ("test-clean", "19", "19-198-0000", 4000, "HELLO WORLD", "transcript", "F"),
        ("test-clean", "19", "19-198-0001", 4800, "SECOND ONE", "transcript", "F"),
        ("test-clean", "19", "19-198-0002", 5600, "PROMPT ONE", "prompt", "F"),
        ("test-clean", "84", "84-121-0000", 6400, "THIRD", "transcript", "M"),
        ("test-clean", "84", "84-121-0001", 7200, "PROMPT THREE", "prompt", "M"),
        ("test-other", "84", "84-200-0000", 8000, "PROMPT FOUR", "prompt", "M"),
    ]
    expected = [
        expected_item(
            next(librispeech.glob(f"{subset}/{spk}/*/{uid}.flac")),
            id=uid,
            index=n,
            seed=7 + n,
            speaker=spk,
            corpus="librispeech",
            subset=subset,
            text=text,
            source=source,
            labels={"corpus": "librispeech", "subset": subset, "speaker": spk, "sex": sex},
            frames=frames,
        )
        for n, (subset, spk, uid, frames, text, source, sex) in enumerate(rows)
    ]
    assert as_dicts(m) == expected
    assert m.sha256 == sha(canonical(expected))
    # prompt_offset 1: p3, p4, then none left for the third item without a transcript.
    with pytest.raises(DatasetError, match=r"^84-200-0000: ran out of prompts \(3 in .*prompts.txt, offset 1\)$"):
        build_manifest(ds.model_copy(update={"prompt_offset": 1}), 7)
    with pytest.raises(DatasetError, match=r"^19-198-0002: ran out of prompts \(3 in .*prompts.txt, offset 7\)$"):
        build_manifest(ds.model_copy(update={"prompt_offset": 7}), 7)
    # Without prompts, an utterance without transcript has no text.
    bare = build_manifest(ds.model_copy(update={"prompts": None}), 0)
    assert [(i.text, i.text_source) for i in bare][2] == ("", "none")


def test_librispeech_limits_and_a_speakers_file(librispeech, tmp_path):
    sexes = tmp_path / "sexes.txt"
    sexes.write_text("19 | M\n84|F|x\n")
    ds = DatasetConfig(root=str(librispeech), subsets=["test-clean"], max_per_speaker=2, speakers_file=str(sexes))
    m = build_manifest(ds, 0)
    assert [(i.id, i.index, i.seed, i.labels["sex"]) for i in m] == [
        ("19-198-0000", 0, 0, "M"),
        ("19-198-0001", 1, 1, "M"),
        ("84-121-0000", 2, 2, "F"),
        ("84-121-0001", 3, 3, "F"),
    ]
    one = build_manifest(ds.model_copy(update={"max_per_speaker": 1}), 0)
    assert [(i.id, i.index, i.seed) for i in one] == [("19-198-0000", 0, 0), ("84-121-0000", 1, 1)]
    three = build_manifest(ds.model_copy(update={"max_items": 3, "max_per_speaker": None}), 0)
    assert [i.id for i in three] == ["19-198-0000", "19-198-0001", "19-198-0002"]
    unknown = build_manifest(ds.model_copy(update={"speakers_file": str(tmp_path / "none.txt")}), 0)
    assert {i.labels["sex"] for i in unknown} == {""}


def test_librispeech_refusals(librispeech, tmp_path):
    write_audio(librispeech / "test-clean/84/121/84-121-0002.flac", 800, channels=2)
    with pytest.raises(DatasetError, match=r"^84-121-0002: .* has 2 channels; bona fide audio must be mono$"):
        build_manifest(DatasetConfig(root=str(librispeech), subsets=["test-clean"]), 0)
    (librispeech / "empty").mkdir()
    with pytest.raises(DatasetError, match=r"no .flac files under .* in subsets \['empty'\]"):
        build_manifest(DatasetConfig(root=str(librispeech), subsets=["empty"]), 0)
    with pytest.raises(DatasetError, match=r"subset 'dev-clean': .* is not a directory"):
        build_manifest(DatasetConfig(root=str(librispeech), subsets=["dev-clean"]), 0)
    with pytest.raises(DatasetError, match=r"dataset root .* is not a directory"):
        build_manifest(DatasetConfig(root=str(tmp_path / "nope"), subsets=["test-clean"]), 0)


# ------------------------------------------------------------------------------------ VCTK and ASVspoof
def test_a_vctk_080_tree_with_numeric_speaker_ids(tmp_path):
    root = tmp_path / "VCTK"
    for spk, n, frames in (("p225", "001", 1600), ("p225", "002", 3200), ("p226", "001", 4800)):
        write_audio(root / "wav48" / spk / f"{spk}_{n}.wav", frames)
    (root / "txt" / "p225").mkdir(parents=True)
    (root / "txt" / "p225" / "p225_001.txt").write_text("  Please call Stella.\n")
    (root / "speaker_info.txt").write_text("ID AGE GENDER ACCENTS\n225 23 F English\n226 22 M\n")
    m = build_manifest(DatasetConfig(kind="vctk", root=str(root)), 50)
    assert as_dicts(m) == [
        expected_item(
            root / "wav48" / "p225" / f"{uid}.wav",
            id=uid,
            index=n,
            seed=50 + n,
            speaker=spk,
            corpus="vctk",
            subset="vctk",
            text=text,
            source="transcript" if text else "none",
            labels={"corpus": "vctk", "subset": "vctk", "speaker": spk, **extra},
            frames=frames,
        )
        if spk == "p225"
        else expected_item(
            root / "wav48" / spk / f"{uid}.wav",
            id=uid,
            index=n,
            seed=50 + n,
            speaker=spk,
            corpus="vctk",
            subset="vctk",
            text=text,
            source="none",
            labels={"corpus": "vctk", "subset": "vctk", "speaker": spk},
            frames=frames,
        )
        for n, (spk, uid, frames, text, extra) in enumerate(
            [
                ("p225", "p225_001", 1600, "Please call Stella.", {"sex": "F", "age": "23", "accent": "English"}),
                ("p225", "p225_002", 3200, "", {"sex": "F", "age": "23", "accent": "English"}),
                ("p226", "p226_001", 4800, "", {}),  # its speaker-info line has no accent: no labels
            ]
        )
    ]
    with pytest.raises(DatasetError, match=r"no VCTK audio found \(microphone 'mic1'\)"):
        build_manifest(DatasetConfig(kind="vctk", root=str(root), subsets=["p999"]), 0)


def test_a_vctk_tree_is_its_own_root(tmp_path):
    # The root a VCTK clip must stay in is the corpus directory, not its parent (that is a table's rule).
    root = tmp_path / "VCTK"
    write_audio(root / "wav48" / "p225" / "p225_001.wav", 1600)
    (root / "wav48" / "p225" / "p225_002.wav").symlink_to(write_audio(tmp_path / "beside.wav", 1600))
    with pytest.raises(DatasetError, match=r"^p225_002: audio .*p225_002.wav resolves outside the dataset root"):
        build_manifest(DatasetConfig(kind="vctk", root=str(root)), 0)
    assert len(build_manifest(DatasetConfig(kind="vctk", root=str(root), allow_outside_root=True), 0)) == 2


def test_a_vctk_092_tree_picks_the_microphone(tmp_path):
    root = tmp_path / "VCTK"
    for mic, frames in (("mic1", 1600), ("mic2", 2400)):
        write_audio(root / "wav48_silence_trimmed" / "p225" / f"p225_001_{mic}.flac", frames)
    m = build_manifest(DatasetConfig(kind="vctk", root=str(root), mic="mic2"), 0)
    assert [(i.id, i.duration, i.audio_path.endswith("p225_001_mic2.flac")) for i in m] == [
        ("p225_001", 2400 / RATE, True)
    ]
    assert m.items[0].labels == {"corpus": "vctk", "subset": "vctk", "speaker": "p225"}  # no speaker-info file


@pytest.fixture
def asvspoof(tmp_path) -> tuple[Path, Path]:
    root = tmp_path / "LA_eval"
    write_audio(root / "flac" / "LA_1.flac", 1600)
    write_audio(root / "LA_1.wav", 9999)  # the flac/ copy comes first
    write_audio(root / "LA_2.wav", 2400)
    write_audio(root / "flac" / "LA_3.wav", 3200)
    protocol = tmp_path / "ASVspoof2019.LA.cm.eval.trl.txt"
    protocol.write_text(
        "SPEAKER_ID AUDIO_FILE_NAME - SYSTEM_ID KEY\n"
        "LA_0001 LA_1 - - bonafide\nLA_0002 LA_2 - A07 spoof\n\nLA_0001 LA_3 - - spoof\n"
    )
    return root, protocol


def test_an_asvspoof_tree_and_its_protocol(asvspoof, tmp_path):
    root, protocol = asvspoof
    (tmp_path / "prompts.txt").write_text("LA_1 OWN\np1 SPOKEN ANEW\n")
    ds = DatasetConfig(kind="asvspoof", root=str(root), protocol=str(protocol), prompts=str(tmp_path / "prompts.txt"))
    m = build_manifest(ds, 20)
    subset = "ASVspoof2019.LA.cm.eval.trl"
    assert as_dicts(m) == [
        expected_item(
            root / "flac" / "LA_1.flac",
            id="LA_1",
            index=0,
            seed=20,
            speaker="LA_0001",
            corpus="asvspoof",
            subset=subset,
            text="SPOKEN ANEW",
            source="prompt",
            labels={"corpus": "asvspoof", "subset": subset, "speaker": "LA_0001", "key": "bonafide"},
            frames=1600,
        ),
        expected_item(
            root / "LA_2.wav",
            id="LA_2",
            index=1,
            seed=21,
            speaker="LA_0002",
            corpus="asvspoof",
            subset=subset,
            text="",
            source="none",
            labels={"corpus": "asvspoof", "subset": subset, "speaker": "LA_0002", "key": "spoof", "attack": "A07"},
            frames=2400,
        ),
        expected_item(
            root / "flac" / "LA_3.wav",
            id="LA_3",
            index=2,
            seed=22,
            speaker="LA_0001",
            corpus="asvspoof",
            subset=subset,
            text="",
            source="none",
            labels={"corpus": "asvspoof", "subset": subset, "speaker": "LA_0001", "key": "spoof", "attack": "spoof"},
            frames=3200,
        ),
    ]
    assert [i.id for i in m.bonafide()] == ["LA_1"] and m.corpus_attacks() == ["asvspoof:A07", "asvspoof:spoof"]


def test_asvspoof_refusals(asvspoof, tmp_path):
    root, protocol = asvspoof
    protocol.write_text(protocol.read_text() + "LA_0003 LA_9 - A01 spoof\n")
    with pytest.raises(DatasetError, match=r"^LA_9: audio file .*LA_eval/flac/LA_9.flac does not exist$"):
        build_manifest(DatasetConfig(kind="asvspoof", root=str(root), protocol=str(protocol)), 0)
    protocol.write_text("LA_0001 LA_1 - - bonafide\nSPEAKER_ID AUDIO_FILE_NAME - SYSTEM_ID KEY\n")
    with pytest.raises(DatasetError, match=r"trl.txt:2: column 5 of a 2019 line is 'KEY'"):
        read_asvspoof_protocol(protocol)
    protocol.write_text("SPEAKER_ID AUDIO_FILE_NAME - SYSTEM_ID KEY\n\n")
    with pytest.raises(DatasetError, match=r"trl.txt: no trials"):
        read_asvspoof_protocol(protocol)
    with pytest.raises(DatasetError, match=r"ASVspoof protocol .*none.txt does not exist"):
        read_asvspoof_protocol(tmp_path / "none.txt")
    with pytest.raises(DatasetError, match=r"dataset root .* is not a directory"):
        build_manifest(DatasetConfig(kind="asvspoof", root=str(tmp_path / "no"), protocol=str(protocol)), 0)


def test_2019_pa_lines_keep_their_environment_bona_fide_included(tmp_path):
    protocol = tmp_path / "ASVspoof2019.PA.cm.eval.trl.txt"
    protocol.write_text("PA_0079 PA_E_1 aaa AA spoof\nPA_0079 PA_E_2 abc - bonafide\nLA_0001 LA_E_3 - - bonafide\n")
    assert [r["labels"] for r in read_asvspoof_protocol(protocol)] == [
        {"key": "spoof", "attack": "AA", "environment": "aaa"},
        {"key": "bonafide", "environment": "abc"},
        {"key": "bonafide"},
    ]

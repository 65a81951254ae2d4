"""Dataset importers, one per ``dataset.kind``: a corpus directory or table -> a ``ManifestSet``.

- ``librispeech``: a LibriSpeech/LibriTTS-layout tree, transcripts from its ``*.trans.txt`` files.
- ``vctk``: a VCTK 0.80 or 0.92 directory, with speaker-info labels (sex, age, accent).
- ``table``: a CSV or JSONL file of ``id, audio, speaker[, text]``; other columns are labels.
- ``asvspoof``: ASVspoof audio with its protocol file; spoofs are labelled with their attack ids.

Items without text take prompts from ``dataset.prompts``; ``build_manifest`` picks the importer.
"""

from __future__ import annotations

from pathlib import Path

import soundfile as sf

from voxarena.hashing import sha256_file
from voxarena.orchestrator.run.config import DatasetConfig
from voxarena.orchestrator.run.manifest import (
    DatasetError,
    ManifestItem,
    ManifestSet,
    check_inside_root,
    items_from_records,
    read_prompts,
    text_hash,
)
from voxarena.orchestrator.store.json_lines import read_json_lines


def _read_transcripts(chapter_dir: Path) -> dict[str, str]:
    out = {}
    for trans in chapter_dir.glob("*.trans.txt"):
        for line in trans.read_text().splitlines():
            if line.strip():
                uid, _, text = line.strip().partition(" ")
                out[uid] = text.strip()
    return out


def _read_speaker_sex(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    out = {}
    for line in path.read_text().splitlines():
        if line.startswith(";") or "|" not in line:
            continue
        parts = [p.strip() for p in line.split("|")]
        if len(parts) >= 2:
            out[parts[0]] = parts[1]
    return out


def build_librispeech_manifest(ds: DatasetConfig, run_seed: int) -> ManifestSet:
    """Read a LibriSpeech-layout tree: ``<root>/<subset>/<speaker>/<chapter>/<id>.flac`` (+ trans.txt)."""
    root = Path(ds.root)
    if not root.is_dir():
        raise DatasetError(f"dataset root {root} is not a directory")
    sex = _read_speaker_sex(Path(ds.speakers_file) if ds.speakers_file else root / "SPEAKERS.TXT")
    raw = []
    for subset in ds.subsets:
        sdir = root / subset
        if not sdir.is_dir():
            raise DatasetError(f"subset {subset!r}: {sdir} is not a directory")
        per_speaker: dict[str, int] = {}
        for audio in sorted(sdir.glob("*/*/*.flac"), key=lambda p: p.name):
            speaker = audio.parent.parent.name
            if ds.max_per_speaker and per_speaker.get(speaker, 0) >= ds.max_per_speaker:
                continue
            per_speaker[speaker] = per_speaker.get(speaker, 0) + 1
            raw.append((subset, speaker, audio))
    if not raw:
        raise DatasetError(f"no .flac files under {root} in subsets {ds.subsets}")
    if ds.max_items:
        raw = raw[: ds.max_items]
    ids = {a.stem for _, _, a in raw}
    prompts = [p for p in read_prompts(ds.prompts) if p[0] not in ids] if ds.prompts else []
    next_prompt = ds.prompt_offset
    transcripts: dict[Path, dict[str, str]] = {}
    items = []
    for index, (subset, speaker, audio) in enumerate(raw):
        chapter = audio.parent
        if chapter not in transcripts:
            transcripts[chapter] = _read_transcripts(chapter)
        text = transcripts[chapter].get(audio.stem, "")
        source = "transcript" if text else "none"
        if not text and prompts:
            if next_prompt >= len(prompts):
                raise DatasetError(
                    f"{audio.stem}: ran out of prompts ({len(prompts)} in {ds.prompts}, offset {ds.prompt_offset})"
                )
            text, source = prompts[next_prompt][1], "prompt"
            next_prompt += 1
        check_inside_root(audio.stem, audio, ds)
        info = sf.info(str(audio))
        if info.channels != 1:
            raise DatasetError(f"{audio.stem}: {audio} has {info.channels} channels; bona fide audio must be mono")
        items.append(
            ManifestItem(
                id=audio.stem,
                index=index,
                seed=run_seed + index,
                speaker=speaker,
                corpus="librispeech",
                subset=subset,
                audio_path=str(audio.resolve()),
                audio_sha256=sha256_file(audio),
                duration=info.frames / info.samplerate,
                sample_rate=info.samplerate,
                text=text,
                text_source=source,
                text_sha256=text_hash(text),
                labels={"corpus": "librispeech", "subset": subset, "speaker": speaker, "sex": sex.get(speaker, "")},
            )
        )
    return ManifestSet(items)


# ---------------------------------------------------------------------------------- other layouts
def _vctk_speaker_info(root: Path) -> dict[str, dict[str, str]]:
    """speaker-info.txt (ID AGE GENDER ACCENTS [REGION]) -> {"p225": {"sex": "F", "accent": "English", ...}}."""
    for name in ("speaker-info.txt", "speaker_info.txt"):
        path = root / name
        if path.exists():
            out = {}
            for line in path.read_text(errors="replace").splitlines()[1:]:
                parts = line.split()
                if len(parts) >= 4:
                    spk = parts[0] if parts[0].startswith(("p", "s")) else f"p{parts[0]}"
                    out[spk] = {"sex": parts[2], "age": parts[1], "accent": parts[3]}
            return out
    return {}


def build_vctk_manifest(ds: DatasetConfig, run_seed: int) -> ManifestSet:
    root = Path(ds.root)
    if not root.is_dir():
        raise DatasetError(f"dataset root {root} is not a directory")
    info = _vctk_speaker_info(root)
    records = []
    if (root / "wav48_silence_trimmed").is_dir():  # VCTK 0.92: <spk>_<n>_<mic>.flac
        files = sorted((root / "wav48_silence_trimmed").glob(f"*/*_{ds.mic}.flac"))
        uid = lambda p: p.stem[: -len(ds.mic) - 1]  # noqa: E731
    elif (root / "wav48").is_dir():  # VCTK 0.80: <spk>_<n>.wav
        files = sorted((root / "wav48").glob("*/*.wav"))
        uid = lambda p: p.stem  # noqa: E731
    else:
        raise DatasetError(f"{root}: no wav48_silence_trimmed/ or wav48/ directory (not a VCTK layout)")
    for audio in files:
        spk = audio.parent.name
        if ds.subsets and spk not in ds.subsets:  # subsets = speakers to keep, when given
            continue
        text_path = root / "txt" / spk / f"{uid(audio)}.txt"
        text = text_path.read_text(errors="replace").strip() if text_path.exists() else ""
        records.append(
            {
                "id": uid(audio),
                "audio": audio,
                "speaker": spk,
                "subset": "vctk",
                "text": text,
                "labels": info.get(spk, {}),
            }
        )
    if not records:
        raise DatasetError(f"{root}: no VCTK audio found (microphone {ds.mic!r})")
    return items_from_records(records, ds, run_seed, "vctk")


def build_table_manifest(ds: DatasetConfig, run_seed: int) -> ManifestSet:
    """A CSV (with a header) or JSONL file: id, audio (relative to the file), speaker, [text]; other columns
    are labels."""
    import csv

    path = Path(ds.root)
    if not path.is_file():
        raise DatasetError(f"manifest table {path} does not exist")
    if path.suffix.lower() in (".jsonl", ".ndjson"):
        rows = read_json_lines(path, DatasetError)
    else:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    records = []
    for n, row in enumerate(rows, 1):
        missing = [k for k in ("id", "audio", "speaker") if not str(row.get(k, "") or "").strip()]
        if missing:
            raise DatasetError(f"{path}: row {n} ({row.get('id', '?')}): missing {', '.join(missing)}")
        audio = Path(str(row["audio"]))
        audio = audio if audio.is_absolute() else path.parent / audio
        labels = {k: str(v) for k, v in row.items() if k not in ("id", "audio", "speaker", "text", "subset")}
        records.append(
            {
                "id": str(row["id"]),
                "audio": audio,
                "speaker": str(row["speaker"]),
                "subset": str(row.get("subset") or ""),
                "text": str(row.get("text") or ""),
                "labels": labels,
            }
        )
    return items_from_records(records, ds, run_seed, path.stem)  # a "corpus" column overrides the file name


ASVSPOOF_KEYS = ("bonafide", "spoof")


# Column count -> (layout, column of the key). The count, not the first "bonafide" word, tells the
# layout: 2021 DF writes the vocoder ("bonafide" for bona fide rows) after the key, and 2021 and
# ASVspoof 5 write "bonafide" in the attack column before it.
ASVSPOOF_LAYOUTS = {5: ("2019", 4), 8: ("2021-LA", 5), 13: ("2021-DF", 5), 10: ("ASVspoof5", 8)}


def read_asvspoof_protocol(path: Path) -> list[dict]:
    """Rows of an ASVspoof CM protocol / key file: {speaker, id, key, labels}.

    2019 LA/PA ``SPK UTT ENV|- ATTACK|- KEY`` (5 columns); 2021 LA trial_metadata ``SPK UTT CODEC
    TRANSMISSION ATTACK KEY TRIM SUBSET`` (8), DF the same plus ``VOCODER - - - -`` (13); ASVspoof 5
    ``SPK FILE SEX CODEC CODEC_Q CODEC_SEED ATTACK_TAG ATTACK_LABEL KEY -`` (10). Bona fide rows carry
    no attack label (so an attack breakdown keeps every bona fide trial); spoof rows carry ``attack``
    and, where the file has them, codec, sex, ...
    """
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        raise DatasetError(f"ASVspoof protocol {path} does not exist") from None
    rows = []
    for n, line in enumerate(lines, 1):
        parts = line.split()
        if not parts or (n == 1 and parts[0].upper().startswith("SPEAKER")):
            continue
        if len(parts) not in ASVSPOOF_LAYOUTS:
            raise DatasetError(
                f"{path}:{n}: {len(parts)} columns, not an ASVspoof protocol layout "
                f"({', '.join(f'{c} ({name})' for c, (name, _) in ASVSPOOF_LAYOUTS.items())})"
            )
        layout, key_at = ASVSPOOF_LAYOUTS[len(parts)]
        key, attack = parts[key_at], parts[key_at - 1]
        if key not in ASVSPOOF_KEYS:
            raise DatasetError(f"{path}:{n}: column {key_at + 1} of a {layout} line is {key!r}, not bonafide/spoof")
        labels = {"key": key}
        if key == "spoof":
            labels["attack"] = attack if attack not in ("-", "bonafide") else "spoof"
        if layout == "ASVspoof5":
            labels.update(sex=parts[2], codec=parts[3])
        elif layout.startswith("2021"):
            labels.update(codec=parts[2], transmission=parts[3])
        elif parts[2] != "-":  # 2019 PA: acoustic environment
            labels["environment"] = parts[2]
        labels = {k: v for k, v in labels.items() if v != "-"}
        rows.append({"speaker": parts[0], "id": parts[1], "key": key, "labels": labels})
    if not rows:
        raise DatasetError(f"{path}: no trials")
    return rows


def build_asvspoof_manifest(ds: DatasetConfig, run_seed: int) -> ManifestSet:
    """Audio under ``<root>/flac/`` or ``<root>/`` (``<id>.flac`` or ``.wav``), trials from the protocol."""
    root = Path(ds.root)
    if not root.is_dir():
        raise DatasetError(f"dataset root {root} is not a directory")
    if not ds.protocol:
        raise DatasetError(f"dataset {root}: an asvspoof dataset needs its protocol file (dataset.protocol)")
    protocol = Path(ds.protocol)
    records = []
    for row in read_asvspoof_protocol(protocol):
        audio = next(
            (
                d / f"{row['id']}{ext}"
                for d in (root / "flac", root)
                for ext in (".flac", ".wav")
                if (d / f"{row['id']}{ext}").is_file()
            ),
            root / "flac" / f"{row['id']}.flac",
        )
        records.append(
            {
                "id": row["id"],
                "audio": audio,
                "speaker": row["speaker"],
                "subset": protocol.stem,
                "text": "",
                "labels": row["labels"],
            }
        )
    return items_from_records(records, ds, run_seed, "asvspoof")


def build_manifest(ds: DatasetConfig, run_seed: int) -> ManifestSet:
    """The importer for ``ds.kind``."""
    builders = {
        "librispeech": build_librispeech_manifest,
        "vctk": build_vctk_manifest,
        "table": build_table_manifest,
        "asvspoof": build_asvspoof_manifest,
    }
    return builders[ds.kind](ds, run_seed)

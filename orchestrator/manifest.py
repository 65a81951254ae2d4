"""Frozen manifests: the items of a run, with ids, input hashes, texts, labels and seeds.

Items are dataclasses serialised as JSONL (``ManifestSet.to_file`` / ``from_file``). Item seed =
run seed + source index. A manifest's version is the sha256 of its canonical bytes.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import soundfile as sf

from voxarena.hashing import sha256_file

from .config import DatasetConfig

MANIFEST_FORMAT = "voxarena.manifest/1"


class DatasetError(ValueError):
    pass


@dataclass
class ManifestItem:
    id: str
    index: int
    seed: int
    speaker: str
    corpus: str
    subset: str
    audio_path: str
    audio_sha256: str
    duration: float
    sample_rate: int
    text: str
    text_source: str  # "transcript", "prompt" or "none"
    text_sha256: str
    labels: dict[str, str] = field(default_factory=dict)


@dataclass
class ManifestSet:
    items: list[ManifestItem]

    def __iter__(self):
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def by_id(self) -> dict[str, ManifestItem]:
        return {i.id: i for i in self.items}

    def to_bytes(self) -> bytes:
        return "".join(json.dumps(asdict(i), sort_keys=True) + "\n" for i in self.items).encode()

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.to_bytes()).hexdigest()

    def to_file(self, path: Path) -> None:
        tmp = path.with_suffix(".tmp")
        tmp.write_bytes(self.to_bytes())
        tmp.replace(path)

    @classmethod
    def from_file(cls, path: Path) -> "ManifestSet":
        items = []
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip():
                try:
                    items.append(ManifestItem(**json.loads(line)))
                except (json.JSONDecodeError, TypeError) as e:
                    raise DatasetError(f"{path}:{n}: not a manifest item: {e}") from None
        return cls(items)


def _text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _read_transcripts(chapter_dir: Path) -> dict[str, str]:
    out = {}
    for trans in chapter_dir.glob("*.trans.txt"):
        for line in trans.read_text().splitlines():
            if line.strip():
                uid, _, text = line.strip().partition(" ")
                out[uid] = text.strip()
    return out


def _read_prompts(path: str) -> list[tuple[str, str]]:
    try:
        lines = Path(path).read_text().splitlines()
    except FileNotFoundError:
        raise DatasetError(f"prompts file {path} does not exist") from None
    out = []
    for line in lines:
        uid, _, text = line.strip().partition(" ")
        if text.strip():
            out.append((uid, text.strip()))
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
    prompts = [p for p in _read_prompts(ds.prompts) if p[0] not in ids] if ds.prompts else []
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
                raise DatasetError(f"{audio.stem}: ran out of prompts ({len(prompts)} in {ds.prompts}, offset {ds.prompt_offset})")
            text, source = prompts[next_prompt][1], "prompt"
            next_prompt += 1
        info = sf.info(str(audio))
        if info.channels != 1:
            raise DatasetError(f"{audio.stem}: {audio} has {info.channels} channels; bona fide audio must be mono")
        items.append(ManifestItem(
            id=audio.stem, index=index, seed=run_seed + index, speaker=speaker, corpus="librispeech", subset=subset,
            audio_path=str(audio.resolve()), audio_sha256=sha256_file(audio), duration=info.frames / info.samplerate,
            sample_rate=info.samplerate, text=text, text_source=source, text_sha256=_text_hash(text),
            labels={"corpus": "librispeech", "subset": subset, "speaker": speaker, "sex": sex.get(speaker, "")},
        ))
    return ManifestSet(items)

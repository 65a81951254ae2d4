"""Frozen manifests: the items of a run, with ids, input hashes, texts, labels and seeds.

Items are dataclasses serialised as JSONL (``ManifestSet.to_file`` / ``from_file``). Item seed =
run seed + source index. A manifest's version is the sha256 of its canonical bytes.

The importers, one per ``dataset.kind``, are in ``importers``; a layout that yields records (id,
audio, speaker, text, labels) becomes a manifest through ``items_from_records`` here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import soundfile as sf

from voxarena.hashing import sha256_file
from voxarena.orchestrator.run.config import DatasetConfig

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


def spoof_key(labels: dict[str, str]) -> bool:
    """Labels of a clip the corpus itself marks as spoofed (``key`` = ``spoof``, as in ASVspoof keys)."""
    return labels.get("key") == "spoof"


def is_corpus_spoof(item: ManifestItem) -> bool:
    return spoof_key(item.labels)


def corpus_attack(item: ManifestItem) -> str:
    """The 'generator' of a corpus spoof in the detection matrix: ``<corpus>:<attack id>``."""
    return f"{item.corpus}:{item.labels.get('attack') or 'spoof'}"


@dataclass
class ManifestSet:
    items: list[ManifestItem]

    def __iter__(self) -> Iterator[ManifestItem]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def by_id(self) -> dict[str, ManifestItem]:
        return {i.id: i for i in self.items}

    def bonafide(self) -> list[ManifestItem]:
        """The items generators may take as input (text, reference, source): every non-spoof item."""
        return [i for i in self.items if not is_corpus_spoof(i)]

    def corpus_attacks(self) -> list[str]:
        return sorted({corpus_attack(i) for i in self.items if is_corpus_spoof(i)})

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
    def from_file(cls, path: Path) -> ManifestSet:
        items = []
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip():
                try:
                    items.append(ManifestItem(**json.loads(line)))
                except (json.JSONDecodeError, TypeError) as e:
                    raise DatasetError(f"{path}:{n}: not a manifest item: {e}") from None
        return cls(items)


def text_hash(text: str) -> str:
    """An item's ``text_sha256``: the sha256 of the text's UTF-8 bytes."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_prompts(path: str) -> list[tuple[str, str]]:
    """(id, text) of each ``<id> <text>`` line of a prompts file; lines without text are skipped."""
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


def dataset_root(ds: DatasetConfig) -> Path:
    """The directory a dataset's audio must stay in: the corpus directory, or a table file's directory."""
    root = Path(ds.root)
    return (root.parent if ds.kind == "table" else root).resolve()


def check_inside_root(item_id: str, audio: Path, ds: DatasetConfig) -> None:
    """Refuse audio that resolves (symlinks followed) outside the dataset root, unless the config opts out:
    a table row naming ``../../x`` or ``/etc/x``, or a symlink in a corpus tree, never reads other files."""
    if ds.allow_outside_root:
        return
    root = dataset_root(ds)
    if not Path(audio).resolve().is_relative_to(root):
        raise DatasetError(
            f"{item_id}: audio {audio} resolves outside the dataset root {root} "
            f"(set dataset.allow_outside_root: true to allow it)"
        )


def items_from_records(records: list[dict], ds: DatasetConfig, run_seed: int, corpus: str) -> ManifestSet:
    """Records {id, audio (Path), speaker, subset, text, labels} -> a manifest, with the same per-speaker
    and item limits, prompts for missing text, hashes and validation as the LibriSpeech importer."""
    seen: set[str] = set()
    for r in records:
        if r["id"] in seen:
            raise DatasetError(f"{r['id']}: duplicate item id in {ds.root}")
        seen.add(r["id"])
        check_inside_root(r["id"], r["audio"], ds)
        if not Path(r["audio"]).is_file():
            raise DatasetError(f"{r['id']}: audio file {r['audio']} does not exist")
    per_speaker: dict[str, int] = {}
    kept = []
    for r in records:
        if ds.max_per_speaker and per_speaker.get(r["speaker"], 0) >= ds.max_per_speaker:
            continue
        per_speaker[r["speaker"]] = per_speaker.get(r["speaker"], 0) + 1
        kept.append(r)
    if ds.max_items:
        kept = kept[: ds.max_items]
    if not kept:
        raise DatasetError(f"no items in {ds.root}")
    prompts = [p for p in read_prompts(ds.prompts) if p[0] not in seen] if ds.prompts else []
    next_prompt = ds.prompt_offset
    items = []
    for index, r in enumerate(kept):
        text, source = r.get("text") or "", "transcript" if r.get("text") else "none"
        if not text and prompts and not spoof_key(r.get("labels", {})):  # spoofs are never spoken anew
            if next_prompt >= len(prompts):
                raise DatasetError(f"{r['id']}: ran out of prompts ({len(prompts)} in {ds.prompts})")
            text, source = prompts[next_prompt][1], "prompt"
            next_prompt += 1
        try:
            info = sf.info(str(r["audio"]))
        except RuntimeError as e:
            raise DatasetError(f"{r['id']}: cannot read {r['audio']}: {e}") from None
        if info.channels != 1:
            raise DatasetError(f"{r['id']}: {r['audio']} has {info.channels} channels; audio must be mono")
        labels = {"corpus": corpus, "subset": r.get("subset", ""), "speaker": r["speaker"], **r.get("labels", {})}
        items.append(
            ManifestItem(
                id=r["id"],
                index=index,
                seed=run_seed + index,
                speaker=r["speaker"],
                corpus=corpus,
                subset=r.get("subset", ""),
                audio_path=str(Path(r["audio"]).resolve()),
                audio_sha256=sha256_file(r["audio"]),
                duration=info.frames / info.samplerate,
                sample_rate=info.samplerate,
                text=text,
                text_source=source,
                text_sha256=text_hash(text),
                labels={k: str(v) for k, v in labels.items() if v not in (None, "")},
            )
        )
    return ManifestSet(items)

"""The clips the stages pass along: a bona fide item or a generated clip (``Clip``), and the one
way to read a clip's audio (``read_clip``), refused unless its bytes still hash to what was recorded.
"""

from __future__ import annotations

import functools
import hashlib
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from voxarena.codec import AudioClip, AudioFormatError, read_audio_file
from voxarena.orchestrator.run.manifest import ManifestItem, corpus_attack, is_corpus_spoof
from voxarena.orchestrator.store.records import GenerationRecord


@functools.lru_cache(maxsize=256)
def _verified_clip(path: str, sha: str) -> AudioClip:
    """One read per file: hashed and decoded from the same bytes. Bona fide clips are sent to every
    detector and, as references, with every generator's clip to the scorer: they are read once."""
    data = Path(path).read_bytes()
    if hashlib.sha256(data).hexdigest() != sha:
        raise AudioFormatError(f"{path} no longer matches its recorded sha256")
    return read_audio_file(io.BytesIO(data), path)


def read_clip(path: Path, sha: str, what: str) -> AudioClip:
    """The audio at ``path``, refused (naming ``what``) unless its bytes still hash to ``sha``."""
    try:
        return _verified_clip(str(path), sha)
    except AudioFormatError as e:
        raise AudioFormatError(f"{what}: {e}") from None


@dataclass
class Clip:
    """A clip that detectors and the scorer consume: bona fide (an item) or generated (a generation row)."""

    id: str
    kind: str  # "bonafide" or "spoof"
    generator: str
    task: str
    item: ManifestItem
    path: Path
    sha256: str
    gen_row: GenerationRecord | None = None

    @property
    def iteration(self) -> int:
        return self.gen_row.i2d_iteration if self.gen_row is not None else 1

    def origin(self) -> dict[str, Any]:
        """What every row made of this clip records of it: generator, task, I2D iteration, item, speaker."""
        return {
            "generator": self.generator,
            "task": self.task,
            "iteration": self.iteration,
            "item": self.item.id,
            "speaker": self.item.speaker,
        }

    def generation(self) -> GenerationRecord:
        """The generations row of a generated clip."""
        if self.gen_row is None:
            raise ValueError(f"{self.id}: a corpus clip ({self.kind}) has no generations row")
        return self.gen_row

    @classmethod
    def of_item(cls, item: ManifestItem) -> Clip:
        """A corpus clip: bona fide, or a spoof where its key says so (ASVspoof: per attack id)."""
        spoof = is_corpus_spoof(item)
        return cls(
            id=item.id,
            kind="spoof" if spoof else "bonafide",
            generator=corpus_attack(item) if spoof else "bonafide",
            task="",
            item=item,
            path=Path(item.audio_path),
            sha256=item.audio_sha256,
        )

    @classmethod
    def of_generation(cls, row: GenerationRecord, item: ManifestItem, run_dir: Path) -> Clip:
        return cls(
            id=row.id,
            kind="spoof",
            generator=row.generator,
            task=row.task,
            item=item,
            path=run_dir / str(row.audio),
            sha256=str(row.audio_sha256),
            gen_row=row,
        )


def item_audio(item: ManifestItem) -> AudioClip:
    """An item's own recording (bona fide input, reference or source), verified."""
    return read_clip(Path(item.audio_path), item.audio_sha256, item.id)

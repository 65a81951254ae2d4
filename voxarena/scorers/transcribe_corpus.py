"""Transcribe a LibriSpeech subset that has no transcripts with the scorer's Whisper, into a dataset table.

    python -m voxarena.scorers.transcribe_corpus --root $VOXARENA_SPEECH/LibriSpeech \\
        --subset train-clean-100 --out runs/train-partial-items.jsonl

Partial fakes splice at word boundaries, which the scorer's ``Align`` finds from a transcript; the
training speakers' subset here (train-clean-100) comes without one. This writes a ``table`` dataset
(``dataset.kind: table``, one JSON object a line: ``id``, ``audio`` (absolute path), ``speaker``,
``subset``, ``text``, ``corpus``, ``transcript_by``) whose text is Whisper tiny.en's hypothesis, decoded exactly as the
WER metric decodes (``asr.DECODING``): an ASR transcript, not a human one, and labelled so in every row
(``transcript_by`` becomes an item label). A clip Whisper hears nothing in is left out, named on stderr.
The same audio and model give the same file.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from voxarena.codec import read_audio_file

from .asr import asr_fingerprint, transcribe
from .registry import ClipInputs


def clean(text: str) -> str:
    """Whisper's text as words for the aligner: letters, digits and apostrophes; the rest a space."""
    return " ".join(re.sub(r"[^A-Za-z0-9']+", " ", text).split())


def corpus_files(root: Path, subset: str) -> list[tuple[str, Path]]:
    """(speaker, file) of every utterance of ``<root>/<subset>/<speaker>/<chapter>/<id>.flac``, sorted."""
    base = root / subset
    if not base.is_dir():
        raise SystemExit(f"{base}: not a directory (expected <root>/<subset>/<speaker>/<chapter>/<id>.flac)")
    return sorted((p.parent.parent.name, p) for p in base.glob("*/*/*.flac"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", type=Path, required=True, help="the LibriSpeech directory")
    ap.add_argument("--subset", required=True, help="e.g. train-clean-100")
    ap.add_argument("--out", type=Path, required=True, help="the table to write (JSON Lines)")
    args = ap.parse_args(argv)
    files = corpus_files(args.root, args.subset)
    if not files:
        raise SystemExit(f"{args.root / args.subset}: no .flac files")
    by = asr_fingerprint()["asr.model"]
    rows = []
    for k, (speaker, path) in enumerate(files, 1):
        text = clean(transcribe(ClipInputs(path.stem, read_audio_file(path, path.stem))))
        if not text:
            print(f"{path.stem}: Whisper heard no words; left out", file=sys.stderr)
            continue
        rows.append(
            {"id": path.stem, "audio": str(path.resolve()), "speaker": speaker, "subset": args.subset, "text": text}
            | {"corpus": "librispeech", "transcript_by": by}
        )
        if k % 25 == 0:
            print(f"{k}/{len(files)} transcribed", file=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    tmp.replace(args.out)
    print(f"{args.out}: {len(rows)} of {len(files)} clips, transcribed by {by}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A tiny training data run for the detectors' training pipeline: 6 speakers of real speech, two synthetic
'generators' (a tone and a clipped copy), written as an orchestrator run directory into the test's tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest


@pytest.fixture
def tiny_training_run(speech_dir: Path, tmp_path: Path) -> list[dict]:
    """Writes ``manifest.jsonl``, ``generations.jsonl`` and ``audio/`` into ``tmp_path``; returns the items."""
    import soundfile as sf

    from voxarena.codec import read_audio_file
    from voxarena.hashing import sha256_file

    flacs = sorted((speech_dir / "LibriSpeech" / "test-clean").glob("*/*/*.flac"))
    by_speaker: dict[str, Path] = {}
    for p in flacs:
        by_speaker.setdefault(p.stem.split("-")[0], p)
    items, gens = [], []
    (tmp_path / "audio").mkdir()
    for k, (spk, p) in enumerate(sorted(by_speaker.items())[:6]):
        items.append({"id": p.stem, "speaker": spk, "audio_path": str(p), "audio_sha256": sha256_file(p)})
        x = read_audio_file(str(p)).samples[:32000]
        for g, make in (
            ("tone", lambda x, k=k: 0.1 * np.sin(2 * np.pi * (150 + 20 * k) * np.arange(x.size) / 16000)),
            ("clipped", lambda x: np.clip(3 * x, -0.1, 0.1)),
        ):
            path = tmp_path / "audio" / f"{g}-{spk}.wav"
            sf.write(path, make(x).astype(np.float32), 16000, subtype="PCM_16")
            gens.append(
                {
                    "id": f"{g}|T|{p.stem}",
                    "item": p.stem,
                    "generator": g,
                    "status": "ok",
                    "audio": f"audio/{path.name}",
                    "audio_sha256": sha256_file(path),
                }
            )
    (tmp_path / "manifest.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    (tmp_path / "generations.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gens))
    return items

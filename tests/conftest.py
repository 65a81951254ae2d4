"""Shared fixtures: where the shared speech data is, and a tiny tree of it for fast runs."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SPEECH = Path(os.environ.get("VOXARENA_SPEECH", REPO.parent / "shared" / "data" / "speech"))


@pytest.fixture(scope="session")
def speech_dir() -> Path:
    if not (SPEECH / "LibriSpeech").is_dir():
        pytest.fail(f"shared speech data not found at {SPEECH} (set VOXARENA_SPEECH)")
    return SPEECH

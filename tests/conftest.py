"""Shared fixtures and helpers: where the shared speech data is, a small synthetic dataset for fast
orchestrator tests, and the config / run / CSV helpers the orchestrator tests share.

Test modules never import each other: what more than one module needs lives here, as fixtures.

The synthetic dataset is generated, not copied: a few "speakers", each a harmonic tone at its own
pitch with a syllable-rate envelope, a chirp and white noise, written as 16 kHz PCM-16 WAV with a
``kind: table`` manifest (``id,audio,speaker,text,sex`` plus any extra label columns). White noise
puts half its power in 4-8 kHz, so the test double ``dummy-detector`` (log high-band energy ratio)
scores a clip at about log(noise_fraction / 2): tests choose the fraction to place a clip's score.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import yaml

REPO = Path(__file__).resolve().parents[1]
SPEECH = Path(os.environ.get("VOXARENA_SPEECH", REPO.parent / "shared" / "data" / "speech"))
RATE = 16000
SENTENCES = (
    "The birch canoe slid on the smooth planks.",
    "Glue the sheet to the dark blue background.",
    "It is easy to tell the depth of a well.",
    "These days a chicken leg is a rare dish.",
    "Rice is often served in round bowls.",
    "The juice of lemons makes fine punch.",
    "The box was thrown beside the parked truck.",
    "Four hours of steady work faced us.",
)


@pytest.fixture(scope="session")
def speech_dir() -> Path:
    if not (SPEECH / "LibriSpeech").is_dir():
        pytest.fail(f"shared speech data not found at {SPEECH} (set VOXARENA_SPEECH)")
    return SPEECH


# ------------------------------------------------------------------------------------ synthetic audio
def synthetic_clip(seed: int, f0: float = 150.0, noise_fraction: float = 0.2, seconds: float = 1.0) -> np.ndarray:
    """Float samples in [-1, 1]: harmonics of ``f0`` (4 Hz envelope) plus a 300-3000 Hz chirp, and white
    noise carrying ``noise_fraction`` of the total power (deterministic for a seed)."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * RATE)) / RATE
    voiced = sum(np.sin(2 * np.pi * f0 * h * t + rng.uniform(0, 2 * np.pi)) / h for h in range(1, 6))
    voiced *= 0.6 + 0.4 * np.sin(2 * np.pi * 4 * t)
    voiced += 0.3 * np.sin(2 * np.pi * (300 * t + (2700 / (2 * seconds)) * t**2))
    noise = rng.standard_normal(t.size)
    p_voiced, p_noise = np.mean(voiced**2), np.mean(noise**2)
    x = np.sqrt(1 - noise_fraction) * voiced / np.sqrt(p_voiced) + np.sqrt(noise_fraction) * noise / np.sqrt(p_noise)
    return 0.25 * x / np.max(np.abs(x))


def write_synthetic_dataset(
    root: Path, rows: list[dict] | None = None, speakers: int = 4, clips: int = 3, seed: int = 0
) -> Path:
    """Write WAVs and ``manifest.csv`` under ``root``; returns the manifest path.

    ``rows``: dicts with ``id`` and ``speaker`` and optionally ``f0``, ``noise_fraction``, ``seconds``,
    ``text`` and label columns (``sex``, ``key``, ``attack``, ...). Without rows: ``speakers`` x
    ``clips`` bona fide clips, speaker k at 110 + 30 k Hz, alternating sex labels.
    """
    if rows is None:
        rows = [
            {
                "id": f"syn{k}-{j}",
                "speaker": f"syn{k}",
                "f0": 110 + 30 * k,
                "seconds": 1.0 + 0.1 * j,
                "sex": "MF"[k % 2],
            }
            for k in range(speakers)
            for j in range(clips)
        ]
    root.mkdir(parents=True, exist_ok=True)
    (root / "audio").mkdir(exist_ok=True)
    labels = sorted({k for r in rows for k in r} - {"id", "speaker", "f0", "noise_fraction", "seconds", "text"})
    out = []
    for n, r in enumerate(rows):
        x = synthetic_clip(seed * 1000 + n, r.get("f0", 150.0), r.get("noise_fraction", 0.2), r.get("seconds", 1.0))
        audio = root / "audio" / f"{r['id']}.wav"
        sf.write(audio, x, RATE, subtype="PCM_16")
        out.append(
            {
                "id": r["id"],
                "audio": f"audio/{r['id']}.wav",
                "speaker": r["speaker"],
                "text": r.get("text", SENTENCES[n % len(SENTENCES)]),
                **{k: r.get(k, "") for k in labels},
            }
        )
    path = root / "manifest.csv"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, ["id", "audio", "speaker", "text", *labels])
        w.writeheader()
        w.writerows(out)
    return path


@pytest.fixture(scope="session")
def synthetic_dataset(tmp_path_factory) -> dict:
    """A ``kind: table`` dataset config of 4 synthetic speakers x 3 clips (16 kHz WAV, with texts)."""
    return {"kind": "table", "root": str(write_synthetic_dataset(tmp_path_factory.mktemp("synthetic")))}


@pytest.fixture(scope="session")
def synthetic_dataset_factory() -> Callable[..., Path]:
    """``write_synthetic_dataset(root, rows=None, speakers=4, clips=3, seed=0) -> manifest path``."""
    return write_synthetic_dataset


# ------------------------------------------------------------------------------------ run helpers
def _make_config(tmp_path: Path, dataset: Path | dict, /, **overrides) -> Path:
    """A run config with the test-double services. ``dataset``: the shared speech directory (its
    LibriSpeech tree with prompts) or a dataset config dict (e.g. ``synthetic_dataset``). Dotted
    ``overrides`` (``"protocol.seed": 3``, or ``dataset={...}`` for the whole section) set keys."""
    if isinstance(dataset, dict):
        ds = {"max_items": 8, **dataset}
    else:
        ds = {
            "root": str(dataset / "LibriSpeech"),
            "subsets": ["test-clean", "test-other"],
            "prompts": str(dataset / "prompts" / "librispeech-test-clean.trans.txt"),
            "max_items": 8,
        }
    cfg = {
        "name": "t",
        "dataset": ds,
        "protocol": {"seed": 11, "tasks": ["TTS", "RECONSTRUCT"]},
        "generators": {"dummy-generator": {}},
        "detectors": {"dummy-detector": {}},
        "scorer": {"metrics": ["rtf"]},
        "execution": {"deadline_seconds": 30, "retries": 2, "backoff_seconds": 0.05, "detector_batch_size": 4},
    }
    for key, value in overrides.items():
        node = cfg
        *parents, last = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[last] = value
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _read_csv(path: Path) -> list[dict]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def _run_arena(config: Path, out: Path, **kw) -> dict:
    from voxarena.orchestrator.run.config import load_config
    from voxarena.orchestrator.run.pipeline import Arena

    return Arena(load_config(config), out, config_file=config, progress=False, **kw).run()


@pytest.fixture(scope="session")
def make_config() -> Callable[..., Path]:
    """``make_config(tmp_path, dataset, **dotted_overrides) -> config path`` (see ``_make_config``)."""
    return _make_config


@pytest.fixture(scope="session")
def read_csv() -> Callable[[Path], list[dict]]:
    return _read_csv


@pytest.fixture(scope="session")
def run_arena() -> Callable[..., dict]:
    """``run_arena(config, out, **Arena kwargs) -> run record``: one run in local mode, no progress bars."""
    return _run_arena


# ------------------------------------------------------------------------------------ voxarena-sdk
def _build_sdk_wheel(out: Path) -> Path:
    """voxarena-sdk's wheel (what ``make sdk`` builds), from a copy of sdk/ so the checkout gets no build
    directory; with this venv's setuptools, no package index. Fixed file times (SOURCE_DATE_EPOCH): the same
    sources give the same bytes, so Docker's cache keeps the layers of images built from it."""
    import shutil
    import subprocess
    import sys

    source = out / "sdk-source"
    shutil.copytree(REPO / "sdk", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", str(out), str(source)],
        check=True,
        capture_output=True,
        timeout=300,
        env={**os.environ, "SOURCE_DATE_EPOCH": "315532800"},
    )
    (wheel,) = out.glob("voxarena_sdk-*-py3-none-any.whl")
    return wheel


@pytest.fixture(scope="session")
def sdk_wheel(tmp_path_factory) -> Path:
    """``build/sdk/voxarena_sdk-<version>-py3-none-any.whl`` as ``make sdk`` makes it, in a temporary directory."""
    return _build_sdk_wheel(tmp_path_factory.mktemp("sdk-wheel"))


@pytest.fixture
def in_process_model() -> Iterator[Callable[..., str]]:
    """``start(model) -> "127.0.0.1:PORT"``: an SDK model served in this process on a free port, loaded and
    SERVING; every server started is stopped at the end."""
    from voxarena.sdk.testing import serve_in_process

    servers = []

    def start(model) -> str:
        servers.append(serve_in_process(model))
        return servers[-1].address

    yield start
    for served in servers:
        served.stop()

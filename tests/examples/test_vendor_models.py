"""The out-of-tree vendor examples (examples/vendor-*) without Docker: their code imports nothing of
VoxArena but voxarena-sdk, each model served in process passes conformance, the generator is
deterministic and speech-like in duration, and the detector tells natural speech from the generator's.
The images are built and checked in tests/containers/test_vendor_examples.py."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import numpy as np
import pytest

from voxarena.conformance import run_conformance
from voxarena.sdk.testing import serve_in_process

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
SDK_ROOT = REPO / "sdk" / "src" / "voxarena"
# example folder -> (package, the SDK model class in package.service)
MODELS = {"vendor-generator": ("acme_formant", "AcmeFormant"), "vendor-detector": ("acme_flatness", "AcmeFlatness")}
# Checks that do not apply: a TTS-only generator takes no audio to reject, nor a source to be too short.
NOT_APPLICABLE = {
    "vendor-generator": {"bad audio rejected", "source under min_source_seconds rejected"},
    "vendor-detector": {"segment scores", "attribution"},  # it declares neither: nothing to check
}


@pytest.fixture
def example(monkeypatch):
    """Import an example's package from its folder (as its own venv would: ``pip install -e .``)."""

    def load(folder: str, module: str = "service"):
        monkeypatch.syspath_prepend(str(EXAMPLES / folder))
        return importlib.import_module(f"{MODELS[folder][0]}.{module}")

    return load


def sdk_module(name: str) -> bool:
    """Whether ``voxarena.x.y`` (or a name in it) is a module of voxarena-sdk."""
    parts = name.split(".")[1:]
    for n in (len(parts), len(parts) - 1):
        path = SDK_ROOT.joinpath(*parts[:n]) if n else SDK_ROOT
        if n and (path.with_suffix(".py").exists() or (path / "__init__.py").exists()):
            return True
    return False


def test_the_examples_import_only_the_sdk_of_voxarena():
    found = []
    for path in sorted(EXAMPLES.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
            voxarena = [n for n in names if n.split(".")[0] == "voxarena"]
            if voxarena and not any(sdk_module(n) for n in voxarena):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: {voxarena[0]}")
    assert len(list(EXAMPLES.rglob("*.py"))) >= 8  # the examples are where this test thinks they are
    assert not found, "examples import VoxArena modules outside voxarena-sdk:\n" + "\n".join(found)


@pytest.mark.parametrize("folder", list(MODELS))
def test_the_example_model_passes_conformance_in_process(example, folder):
    model = getattr(example(folder), MODELS[folder][1])()
    with serve_in_process(model) as served:
        checks = run_conformance(served.address, timeout=60)
    assert not [c for c in checks if c.status == "FAIL"], [c for c in checks if c.status == "FAIL"]
    assert {c.name for c in checks if c.status == "SKIP"} == NOT_APPLICABLE[folder]


def test_the_generator_is_seeded_and_speaks_at_a_plausible_rate(example):
    synth = example("vendor-generator", "synth")
    text = "The birch canoe slid on the smooth planks."
    a = synth.synthesize(text, synth.VoiceShape(115.0, 1.0), 1.0, seed=7)
    assert np.array_equal(a, synth.synthesize(text, synth.VoiceShape(115.0, 1.0), 1.0, seed=7))
    assert not np.array_equal(a, synth.synthesize(text, synth.VoiceShape(115.0, 1.0), 1.0, seed=8))
    assert a.dtype == np.float32 and np.isfinite(a).all() and np.max(np.abs(a)) == pytest.approx(0.5)
    seconds = len(a) / synth.RATE
    assert 2.0 < seconds < 6.0  # about 12 characters a second, as read speech
    fast = synth.synthesize(text, synth.VoiceShape(115.0, 1.0), 2.0, seed=7)
    assert len(fast) / synth.RATE == pytest.approx(seconds / 2, rel=0.05)


def test_the_detector_scores_natural_speech_above_the_example_generator(example, speech_dir):
    from voxarena.codec import read_audio_file

    cues = example("vendor-detector", "cues")
    synth = example("vendor-generator", "synth")
    real = sorted((speech_dir / "LibriSpeech" / "test-clean").glob("*/*/*.flac"))[:6]
    bona_fide = [cues.score(read_audio_file(str(p)).as_float32()) for p in real]
    texts = ["Glue the sheet to the dark blue background.", "Rice is often served in round bowls."]
    fakes = [cues.score(synth.synthesize(t, synth.VoiceShape(210.0, 1.15), 1.0, seed=1)) for t in texts]
    assert min(bona_fide) > max(fakes), (bona_fide, fakes)
    assert cues.score(np.zeros(16000, np.float32)) == -100.0  # silence: finite, and far from speech

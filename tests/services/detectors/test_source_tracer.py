"""source-tracer: its heads against scikit-learn, its committed weights (labels declared from them, a changed file
refused), real clips traced to the system that made them, and conformance with its labels in process."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from voxarena.codec import AudioClip, read_audio_file
from voxarena.conformance import run_conformance
from voxarena.sdk import SynthesisRequest
from voxarena.services.detectors.source_tracer.heads import BONAFIDE, novelty_cues
from voxarena.services.detectors.source_tracer.model import SourceTracerModel
from voxarena.services.detectors.source_tracer.train import _fit_lr, fit_level
from voxarena.services.detectors.trained import METADATA_FILE, WeightsMismatch


def _blobs(seed: int, per_class: int = 40) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    classes = [BONAFIDE, "a", "b", "c"]
    centres = rng.standard_normal((len(classes), 6)) * 3
    z = np.vstack([c + rng.standard_normal((per_class, 6)) for c in centres])
    return z, np.repeat(classes, per_class)


def test_a_head_serves_what_scikit_learn_fitted():
    z, y = _blobs(0)
    zd, yd = _blobs(0)  # the same distribution for dev
    head, record = fit_level("generator", z, y, zd + 0.1, yd)
    lr = _fit_lr(z, y, record["C"])
    expected = lr.predict_proba(zd)[:, [list(lr.classes_).index(c) for c in [BONAFIDE, "a", "b", "c"]]]
    np.testing.assert_allclose(head.posteriors(zd), expected, rtol=1e-9, atol=1e-12)
    p = head.posteriors(zd)
    np.testing.assert_allclose(head.bonafide_log_odds(zd), np.log(p[:, 0] / p[:, 1:].sum(axis=1)), rtol=1e-9)
    attribution = head.attribution(zd)
    np.testing.assert_allclose(attribution.sum(axis=1), 1.0)
    assert head.declared == ("a", "b", "c", "unknown")
    # the unknown model was learnt by leaving each system out: it must tell a fourth blob from the known ones
    novel = np.random.default_rng(9).standard_normal((40, 6)) + 12.0
    assert head.p_unknown(novel).mean() > head.p_unknown(zd[yd != BONAFIDE]).mean()
    assert record["n_unknown_examples"] == 120 and record["dev_accuracy_closed"] > 0.9


def test_the_novelty_cues_by_hand():
    p = np.array([[0.5, 0.5], [1.0, 0.0]])
    z = np.array([[0.0, 0.0], [2.0, 2.0]])
    centroids = np.array([[1.0, 1.0], [2.0, 2.0]])
    cues = novelty_cues(p, z, centroids)
    np.testing.assert_allclose(cues[0], [np.log(0.5), np.log(2), np.log(1.0)], atol=1e-9)
    assert cues[1, 0] == pytest.approx(0.0) and cues[1, 2] < -20  # on a centroid: distance ~ 0


@pytest.fixture(scope="module")
def tracer() -> SourceTracerModel:
    model = SourceTracerModel()
    model.load()
    return model


def test_the_committed_weights_declare_their_labels(tracer):
    meta = json.loads((tracer.weights_dir / METADATA_FILE).read_text())
    assert [level for level, _ in tracer.attribution] == ["generator", "family"]
    for level, labels in tracer.attribution:
        assert list(labels) == [*meta["labels"][level], "unknown"]
    assert "mlsa-vocoder" not in meta["labels"]["generator"] and "hifigan" not in meta["labels"]["generator"]
    assert "VOCODER_GAN" not in meta["labels"]["family"] and "VOCODER_DSP" in meta["labels"]["family"]


def test_changed_weights_are_refused(tracer, tmp_path):
    copy = tmp_path / "weights"
    shutil.copytree(tracer.weights_dir, copy)
    with open(copy / "tracer.npz", "r+b") as f:
        f.seek(200)
        byte = f.read(1)
        f.seek(200)
        f.write(bytes([byte[0] ^ 1]))
    with pytest.raises(WeightsMismatch, match="does not match metadata"):
        SourceTracerModel(copy).load()


def test_a_clip_of_a_known_system_is_traced_to_it(tracer, speech_dir: Path):
    from voxarena.services.generators.espeak_ng.model import EspeakNgModel

    espeak = EspeakNgModel()
    espeak.load()
    texts = ["the quick brown fox jumps over the lazy dog", "she sells sea shells by the sea shore at noon"]
    options = espeak.resolve_options({})
    clips = [
        espeak.synthesize(SynthesisRequest(f"r{i}", i, "TTS", text=t, parameters=options)).audio
        for i, t in enumerate(texts)
    ]
    bona = read_audio_file(str(next((speech_dir / "LibriSpeech" / "test-clean").glob("*/*/*.flac"))))
    answers = tracer.attribute_batch(clips, [{}, {}])
    for a in answers:
        assert max(a["generator"], key=a["generator"].get) == "espeak-ng"
        assert max(a["family"], key=a["family"].get) == "RULE_BASED_FORMANT"
    scores = tracer.score_batch([*clips, bona])
    assert scores[2] > max(scores[:2])  # bona fide scores higher than the fakes
    # int16 and float32 samples of the same clip are the same clip
    as_int16 = AudioClip((bona.as_float32() * 32768).round().clip(-32768, 32767).astype(np.int16), bona.sample_rate)
    assert tracer.score_batch([as_int16])[0] == pytest.approx(tracer.score_batch([bona])[0], abs=1e-3)


def test_the_tracer_passes_conformance_with_its_labels(in_process_model):
    checks = run_conformance(in_process_model(SourceTracerModel()), timeout=60)
    failed = [f"{c.name}: {c.detail}" for c in checks if c.status == "FAIL"]
    assert not failed, failed
    names = {c.name for c in checks if c.status == "PASS"}
    assert "attribution spec valid" in names and any(n.startswith("attribution (clip") for n in names)

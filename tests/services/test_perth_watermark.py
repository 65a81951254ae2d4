"""Perth-Net served without torch: the numpy signal path's own properties, the conversion's recorded agreement
with the package, and both services (perth-embed, perth-detect) on real LibriSpeech through gRPC, conformance
included. The converted model must exist (``make models``, part of ``make setup``)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from voxarena.codec import AudioClip, read_audio_file, resample
from voxarena.conformance import run_conformance
from voxarena.converted import PROVENANCE_FILE, models_dir
from voxarena.sdk import TransformRequest
from voxarena.services.detectors.perth_detect.model import PerthDetectModel
from voxarena.services.transforms.perth_embed.model import PerthEmbedModel
from voxarena.services.watermark import perth


def _clips(speech_dir: Path, n: int = 3) -> list[AudioClip]:
    paths = sorted((speech_dir / "LibriSpeech" / "test-other").glob("*/*/*.flac"))[:: 100 // n][:n]
    return [read_audio_file(str(p)) for p in paths]


def test_the_inverse_stft_undoes_the_stft_as_torch_istft_does():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(32000 + 123) * 0.1
    spec = perth.stft(x)
    assert spec.shape == (perth.N_FFT // 2 + 1, 1 + x.size // perth.HOP)
    y = perth.istft(spec)
    assert y.size == perth.HOP * (spec.shape[1] - 1)  # torch.istft without length
    assert np.max(np.abs(y - x[: y.size])) < 1e-12


def test_the_stretches_are_torch_interpolate():
    x = np.arange(10.0)[None]
    # align_corners=True: the ends stay put, the inside is np.interp on the stretched grid
    assert np.allclose(perth.stretch_linear(x, 12)[0], np.interp(np.linspace(0, 9, 12), np.arange(10), x[0]))
    assert perth.stretch_linear(x, 7)[0, -1] == 9.0
    # nearest: floor(i x in / out)
    assert perth.stretch_nearest(x, 5)[0].tolist() == [0, 2, 4, 6, 8]
    assert perth.stretch_nearest(x, 13)[0].tolist() == [int(i * 10 / 13) for i in range(13)]


def test_the_conversion_recorded_its_agreement_with_the_package():
    provenance = json.loads((models_dir() / perth.CONVERTED_NAME / PROVENANCE_FILE).read_text())
    check = provenance["check"]
    assert provenance["source"]["sha256"] == perth.SOURCE.sha256
    assert check["embed_min_snr_db"] >= check["tolerance"]["embed_min_snr_db"]
    assert check["detect_max_abs"] <= check["tolerance"]["detect_max_abs"]
    assert len(check["clips"]) == 4
    for clip in check["clips"].values():
        assert clip["package_rounded_marked_clean"] == [1.0, 0.0]


@pytest.fixture(scope="module")
def models():
    embed, detect = PerthEmbedModel(), PerthDetectModel()
    embed.load()
    detect.load()
    return embed, detect


def test_an_embedded_mark_is_found_and_a_clean_clip_has_none(models, speech_dir):
    embed, detect = models
    for clip in _clips(speech_dir):
        result = embed.transform(TransformRequest("r", 1, clip, {}))
        marked = result.audio
        assert marked.sample_rate == clip.sample_rate
        assert 0 <= clip.samples.size - marked.samples.size <= clip.sample_rate * perth.HOP // perth.SAMPLE_RATE
        assert np.max(np.abs(marked.samples)) <= 1.0
        again = embed.transform(TransformRequest("r", 2, clip, {})).audio
        assert np.array_equal(marked.samples, again.samples)  # deterministic, seed or not
        # the mark lives below 2 kHz and is quiet beside the speech (the package's own design)
        x = clip.as_float32()[: marked.samples.size].astype(np.float64)
        snr = 10 * np.log10(np.sum(x**2) / np.sum((marked.samples - x) ** 2))
        assert 8 < snr < 40, snr
        clean_score, marked_score = detect.score_batch([clip, marked])
        assert clean_score > 0 > marked_score, (clean_score, marked_score)
        # at another rate too: detection resamples as the package does
        at_22k = AudioClip(resample(marked.samples, marked.sample_rate, 22050), 22050)
        assert detect.score_batch([at_22k])[0] < 0


def test_a_clip_too_short_for_a_window_is_refused_by_name(models):
    from voxarena.sdk import InvalidArgument

    embed, _ = models
    with pytest.raises(InvalidArgument, match="too short"):
        embed.transform(TransformRequest("r", 1, AudioClip(np.zeros(400, np.float32), 16000), {}))


@pytest.mark.parametrize("model", [PerthEmbedModel, PerthDetectModel])
def test_both_services_pass_conformance_in_process(in_process_model, model):
    checks = run_conformance(in_process_model(model()), timeout=120)
    failed = [f"{c.name}: {c.detail}" for c in checks if c.status == "FAIL"]
    assert not failed, failed

"""The detectors that stream natively: every running score is the Score of the audio seen so far (16 kHz:
to rounding), at the cost of the new audio only; at another rate the final score still equals Score."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from voxarena.codec import AudioClip, read_audio_file, resample
from voxarena.services.detectors.lfcc_gmm.model import LfccGmmModel
from voxarena.services.detectors.rawnet2.model import RawNet2Model


@pytest.fixture(scope="module")
def speech(speech_dir: Path) -> np.ndarray:
    path = sorted((speech_dir / "LibriSpeech" / "test-clean").glob("*/*/*.flac"))[3]
    return read_audio_file(str(path)).as_float32()[: 16000 * 9]  # over two 4 s windows of RawNet2


def loaded(model_class):
    model = model_class()
    model.load()
    return model


@pytest.mark.parametrize("model_class", [LfccGmmModel, RawNet2Model])
def test_running_scores_are_the_score_of_the_prefix(model_class, speech):
    model = loaded(model_class)
    stream = model.open_stream(16000, model.resolve_options({}))
    chunk = 5000  # not a divisor of the frame shift nor of the network's window
    for start in range(0, speech.size, chunk):
        stream.push(speech[start : start + chunk])
        prefix = AudioClip(speech[: start + chunk].copy(), 16000)
        assert stream.running() == pytest.approx(model.model_scores([prefix])[0], rel=1e-9, abs=1e-9), start
    assert stream.final() == pytest.approx(model.model_scores([AudioClip(speech, 16000)])[0], rel=1e-9)


@pytest.mark.parametrize("model_class", [LfccGmmModel, RawNet2Model])
def test_at_another_rate_the_final_score_is_the_whole_clip(model_class, speech):
    model = loaded(model_class)
    x = resample(speech[: 16000 * 5], 16000, 22050)
    stream = model.open_stream(22050, model.resolve_options({}))
    for start in range(0, x.size, 4410):
        stream.push(x[start : start + 4410])
        assert np.isfinite(stream.running())
    assert stream.final() == model.model_scores([AudioClip(x, 22050)])[0]

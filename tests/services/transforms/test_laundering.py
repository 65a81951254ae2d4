"""The transform role (TransformService, issue 16 item 1): the SDK's TransformModel, its conformance checks,
and the laundering chain, the reference transform: each step does what its option says, on real speech."""

from __future__ import annotations

import numpy as np
import pytest

from voxarena.codec import AudioClip, read_audio_file
from voxarena.conformance import run_conformance
from voxarena.sdk import (
    InvalidArgument,
    Option,
    OptionRange,
    TransformRequest,
    TransformResult,
    create_model_server,
)
from voxarena.services.transforms.laundering.model import LaunderingModel, room_impulse_response


@pytest.fixture(scope="module")
def speech(speech_dir) -> AudioClip:
    path = sorted((speech_dir / "LibriSpeech" / "test-clean").glob("*/*/*.flac"))[0]
    clip = read_audio_file(str(path))
    return AudioClip(clip.as_float32()[: 4 * 16000], clip.sample_rate)


@pytest.fixture(scope="module")
def model() -> LaunderingModel:
    m = LaunderingModel()
    m.load()
    m.mark_ready()
    return m


def launder(model: LaunderingModel, clip: AudioClip, seed: int = 7, **parameters: str) -> TransformResult:
    return model.transform(TransformRequest("t", seed, clip, model.checked_options(parameters)))


def band_energy_db(x: np.ndarray, rate: int, lo: float, hi: float) -> float:
    """Energy in [lo, hi) Hz relative to the whole clip's, dB."""
    spec = np.abs(np.fft.rfft(x.astype(np.float64))) ** 2
    f = np.fft.rfftfreq(x.size, 1 / rate)
    return float(10 * np.log10(spec[(f >= lo) & (f < hi)].sum() / spec.sum()))


def test_the_laundering_service_passes_conformance(in_process_model):
    checks = run_conformance(in_process_model(LaunderingModel()), timeout=60)
    failed = [f"{c.name}: {c.detail}" for c in checks if c.status == "FAIL"]
    assert not failed, failed
    names = {c.name for c in checks}
    assert {"kind declared", "every option has a range", "deterministic as declared"} <= names
    assert sum(c.name.startswith("out of range rejected") for c in checks) == 12  # 6 numeric options x 2


class OverPromising(LaunderingModel):
    """The first version of the chain: lowpass_hz ranged to 24 kHz but refused above half the clip's rate."""

    options = tuple(
        Option(o.name, o.description, "0") if o.name == "lowpass_hz" else o for o in LaunderingModel.options
    )
    ranges = {**LaunderingModel.ranges, "lowpass_hz": OptionRange(0.0, 24000.0)}

    def transform(self, request: TransformRequest) -> TransformResult:
        lowpass = float(request.options["lowpass_hz"])
        if lowpass >= request.audio.sample_rate / 2:
            raise InvalidArgument("lowpass_hz must be below half the clip's rate")
        request.options["lowpass_hz"] = str(lowpass or 24000)  # 0 meant none
        return super().transform(request)


def test_conformance_catches_a_range_the_service_does_not_honour(in_process_model):
    checks = {c.name: c for c in run_conformance(in_process_model(OverPromising()), timeout=60)}
    assert checks["option range ends accepted (lowpass_hz)"].status == "FAIL"
    assert "24000.0: INVALID_ARGUMENT" in checks["option range ends accepted (lowpass_hz)"].detail
    assert checks["option range ends accepted (highpass_hz)"].status == "PASS"


def test_an_option_without_a_range_is_refused_at_start():
    class Unranged(LaunderingModel):
        options = (*LaunderingModel.options, Option("extra", "no range", "1"))

    with pytest.raises(TypeError, match=r"options without a range: \['extra'\]"):
        create_model_server(Unranged(), "127.0.0.1:0")


def test_no_options_change_nothing_but_the_format(model, speech):
    out = launder(model, speech)
    assert out.steps == []
    assert out.audio.sample_rate == speech.sample_rate and out.audio.samples.size == speech.samples.size
    np.testing.assert_allclose(out.audio.samples, np.clip(speech.as_float32(), -1, 1), atol=1e-7)


def test_band_limiting_removes_the_band_and_keeps_alignment(model, speech):
    out = launder(model, speech, highpass_hz="300", lowpass_hz="3400").audio.samples
    assert band_energy_db(speech.as_float32(), 16000, 4000, 8000) > -35
    assert band_energy_db(out, 16000, 4000, 8000) < -60
    assert band_energy_db(out, 16000, 0, 150) < -50
    lag = np.argmax(np.correlate(out[8000:9000], speech.as_float32()[7900:9100], "valid")) - 100
    assert lag == 0  # zero phase: no delay


def test_a_telephone_chain_is_narrowband_at_the_input_rate(model, speech):
    out = launder(model, speech, resample_hz="8000", codec="gsm")
    assert out.audio.sample_rate == 16000 and out.audio.samples.size == speech.samples.size
    assert out.steps[0] == "resample 8000 Hz" and out.steps[1].startswith("codec gsm (13.")
    assert band_energy_db(out.audio.samples, 16000, 4100, 8000) < -50


def test_noise_is_at_the_snr_asked_and_seeded(model, speech):
    clean = launder(model, speech).audio.samples.astype(np.float64)
    noisy = launder(model, speech, noise="white", noise_snr_db="10").audio.samples.astype(np.float64)
    snr = 10 * np.log10(np.mean(clean**2) / np.mean((noisy - clean) ** 2))
    assert snr == pytest.approx(10.0, abs=0.2)
    again = launder(model, speech, noise="white", noise_snr_db="10").audio.samples
    other = launder(model, speech, seed=8, noise="white", noise_snr_db="10").audio.samples
    assert np.array_equal(again, noisy.astype(np.float32)) and not np.array_equal(other, again)


def test_the_room_decays_60_db_in_rt60():
    h = room_impulse_response(0.4, 16000, np.random.default_rng(0))
    assert h.size == 6400 and np.sum(h**2) == pytest.approx(1.0)
    envelope = [np.mean(h[i : i + 400] ** 2) for i in (400, 5600)]  # 25-50 ms vs 350-375 ms
    decay_db = 10 * np.log10(envelope[0] / envelope[1])
    assert decay_db == pytest.approx(60 * (5600 - 400) / 6400, abs=6)  # -60 dB at 0.4 s: 48.75 dB apart


def test_reverb_smears_an_impulse_and_keeps_the_length(model):
    x = np.zeros(16000, np.float32)
    x[1000] = 0.5
    out = launder(model, AudioClip(x, 16000), reverb_rt60="0.3", reverb_wet="0.5")
    y = out.audio.samples
    assert y.size == x.size and out.steps == ["reverb rt60=0.3 s wet=0.5"]
    assert y[1000] > 0.25 and np.sum(np.abs(y[1100:5800]) > 1e-4) > 1000 and np.abs(y[:1000]).max() < 1e-9  # causal

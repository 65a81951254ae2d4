"""Channel conditions: each step does what it says, measured independently of the code under test."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from voxarena.codec import AudioClip, read_audio_file
from voxarena.orchestrator.run.channel import apply_condition, condition_seed
from voxarena.orchestrator.run.config import ChannelStep, ConfigError, load_config


@pytest.fixture(scope="module")
def speech(speech_dir) -> AudioClip:
    path = sorted((speech_dir / "LibriSpeech" / "test-clean").rglob("*.flac"))[0]
    return read_audio_file(path)


def steps(*dicts) -> list[ChannelStep]:
    return [ChannelStep(**d) for d in dicts]


def snr_db(clean: np.ndarray, degraded: np.ndarray) -> float:
    n = min(clean.size, degraded.size)
    c, d = clean[:n].astype(np.float64), degraded[:n].astype(np.float64)
    return 10 * np.log10(np.sum(c**2) / np.sum((d - c) ** 2))


@pytest.mark.parametrize("target,colour", [(20.0, "white"), (5.0, "white"), (10.0, "pink")])
def test_noise_is_added_at_the_declared_snr(speech, target, colour):
    out, done = apply_condition(speech, steps({"noise_snr_db": target, "noise": colour}), seed=7)
    assert out.sample_rate == speech.sample_rate and out.samples.dtype == np.int16
    assert abs(snr_db(speech.as_float32(), out.as_float32()) - target) < 0.05
    assert done["steps"] == [{"noise_snr_db": target, "noise": colour}]


def test_noise_is_seeded_by_run_condition_and_clip(speech):
    a, _ = apply_condition(speech, steps({"noise_snr_db": 10}), condition_seed(3, "noisy", "clip-1"))
    b, _ = apply_condition(speech, steps({"noise_snr_db": 10}), condition_seed(3, "noisy", "clip-1"))
    c, _ = apply_condition(speech, steps({"noise_snr_db": 10}), condition_seed(3, "noisy", "clip-2"))
    assert np.array_equal(a.samples, b.samples) and not np.array_equal(a.samples, c.samples)
    assert condition_seed(3, "noisy", "clip-1") != condition_seed(4, "noisy", "clip-1")


def test_pink_noise_has_more_low_than_high_frequency_power(speech):
    silentish = AudioClip(np.full(32000, 1000, dtype=np.int16), 16000)  # DC only: the noise is all that varies
    out, _ = apply_condition(silentish, steps({"noise_snr_db": 0, "noise": "pink"}), seed=1)
    spec = np.abs(np.fft.rfft(out.as_float32() - out.as_float32().mean())) ** 2
    f = np.fft.rfftfreq(out.samples.size, 1 / 16000)
    assert spec[(f > 50) & (f < 500)].mean() > 5 * spec[(f > 4000) & (f < 7500)].mean()


def test_gain_and_clipping(speech):
    out, done = apply_condition(speech, steps({"gain_db": -6}), seed=0)
    ratio = np.sum(out.as_float32().astype(np.float64) ** 2) / np.sum(speech.as_float32().astype(np.float64) ** 2)
    assert abs(10 * np.log10(ratio) + 6) < 0.01 and done["clipped_samples"] == 0
    loud, done = apply_condition(speech, steps({"gain_db": 30}), seed=0)
    assert done["clipped_samples"] > 0 and loud.samples.max() == 32767


def test_resample_to_8k_keeps_the_duration(speech):
    out, _ = apply_condition(speech, steps({"resample": 8000}), seed=0)
    assert out.sample_rate == 8000 and abs(out.duration - speech.duration) < 1e-3
    # Against an independent resampler (scipy's polyphase filter): the same narrowband signal.
    from scipy.signal import resample_poly

    ref = resample_poly(speech.as_float32().astype(np.float64), 1, 2)
    assert snr_db(ref, out.as_float32()) > 25


@pytest.mark.parametrize(
    "codec,rate,kbps",
    [
        ("gsm", 8000, (12.0, 14.5)),
        ("ulaw", 8000, (63.0, 65.0)),
        ("alaw", 8000, (63.0, 65.0)),
        ("mp3", 16000, (8.0, 200.0)),
        ("opus", 16000, (4.0, 200.0)),
        ("vorbis", 16000, (4.0, 300.0)),
    ],
)
def test_codecs_encode_decode_at_their_rates(speech, codec, rate, kbps):
    out, done = apply_condition(speech, steps({"codec": codec}), seed=0)
    assert out.sample_rate == rate
    assert kbps[0] <= done["steps"][0]["kbps"] <= kbps[1], done
    assert abs(out.duration - speech.duration) < 0.1  # codec delay / padding, not lost audio
    if codec in ("ulaw", "alaw"):  # waveform codecs: high SNR against the 8 kHz input
        ref, _ = apply_condition(speech, steps({"resample": 8000}), seed=0)
        assert snr_db(ref.as_float32(), out.as_float32()) > 25
    # the codec changed the audio (lossy: not the input at its rate), and the same input gives the same bytes
    plain, _ = (
        apply_condition(speech, steps({"resample": rate}), seed=0) if rate != speech.sample_rate else (speech, {})
    )
    n = min(plain.samples.size, out.samples.size)
    assert not np.array_equal(plain.samples[:n], out.samples[:n]) and snr_db(plain.as_float32(), out.as_float32()) < 60
    again, _ = apply_condition(speech, steps({"codec": codec}), seed=0)
    assert np.array_equal(out.samples, again.samples)


def test_mp3_compression_level_lowers_the_bit_rate(speech):
    _, best = apply_condition(speech, steps({"codec": "mp3", "compression": 0.0}), seed=0)
    _, worst = apply_condition(speech, steps({"codec": "mp3", "compression": 0.99}), seed=0)
    assert best["steps"][0]["kbps"] > 2 * worst["steps"][0]["kbps"]


def test_chain_runs_in_order(speech):
    out, done = apply_condition(speech, steps({"resample": 8000}, {"codec": "gsm"}, {"noise_snr_db": 30}), seed=0)
    assert out.sample_rate == 8000 and [next(iter(s)) for s in done["steps"]] == ["resample", "codec", "noise_snr_db"]


def _config(tmp_path, conditions) -> object:
    cfg = {"dataset": {"root": str(tmp_path), "subsets": ["x"]}, "generators": {"g": {}}, "conditions": conditions}
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


@pytest.mark.parametrize(
    "conditions,message",
    [
        ({"bad": [{"codec": "mp3", "gain_db": 3}]}, "exactly one of"),
        ({"bad": [{"codec": "gsm", "compression": 0.5}]}, "compression applies"),
        ({"bad": [{"codec": "flac"}]}, "conditions.bad.0.codec"),
        ({"bad": [{"codec": "mp3", "compression": 1.0}]}, "0.99 is its lowest"),
        ({"clean": [{"gain_db": 1}]}, "not 'clean'"),
        ({"empty": []}, "conditions.empty: no steps"),
        ({"bad": [{"gian_db": 1}]}, "gian_db: unknown key"),
    ],
)
def test_bad_conditions_are_refused_naming_the_key(tmp_path, conditions, message):
    with pytest.raises(ConfigError, match=message):
        load_config(_config(tmp_path, conditions))


def test_silent_clip_with_noise_is_a_named_error():
    from voxarena.dsp.channel import ChannelError

    with pytest.raises(ChannelError, match="silent"):
        apply_condition(AudioClip(np.zeros(1600, dtype=np.int16), 16000), steps({"noise_snr_db": 10}), seed=0)


def _tone(rate: int, seconds: float = 0.5, level: float = 0.3) -> AudioClip:
    t = np.arange(int(rate * seconds)) / rate
    return AudioClip((level * np.sin(2 * np.pi * 440 * t)).astype(np.float32), rate)


# MPEG audio sample rates (MPEG-1 32/44.1/48 kHz, MPEG-2 16/22.05/24, MPEG-2.5 8/11.025/12) and Opus's
# (RFC 6716: 8, 12, 16, 24, 48 kHz): a clip already at one of them is encoded at its own rate.
@pytest.mark.parametrize(
    "codec,rate",
    [("mp3", r) for r in (8000, 11025, 12000, 16000, 22050, 24000, 32000, 44100, 48000)]
    + [("opus", r) for r in (8000, 12000, 16000, 24000, 48000)],
)
def test_a_codec_keeps_a_rate_it_supports(codec, rate):
    out, done = apply_condition(_tone(rate), steps({"codec": codec}), seed=0)
    assert out.sample_rate == rate and done["steps"][0]["rate"] == rate


@pytest.mark.parametrize(
    "codec,rate,expected",
    [("opus", 22050, 24000), ("opus", 44100, 48000), ("opus", 11025, 12000), ("mp3", 6000, 8000), ("gsm", 16000, 8000)],
)
def test_an_unsupported_rate_goes_to_the_next_higher_one(codec, rate, expected):
    out, done = apply_condition(_tone(rate), steps({"codec": codec}), seed=0)
    assert out.sample_rate == expected and done["steps"][0]["rate"] == expected


def test_mp3_is_constant_bit_rate():
    # A channel's bit rate is the channel's: a near-silent tone and full-band noise cost the same bits.
    noise = AudioClip((0.3 * np.random.default_rng(0).standard_normal(16000)).astype(np.float32), 16000)
    quiet = _tone(16000, seconds=1.0, level=0.001)
    rates = [
        apply_condition(c, steps({"codec": "mp3", "compression": 0.5}), seed=0)[1]["steps"][0]["kbps"]
        for c in (noise, quiet)
    ]
    assert rates[0] == pytest.approx(rates[1], rel=0.02)


def test_full_scale_is_kept_and_only_beyond_it_is_counted_as_clipped():
    x = np.array([-32767 / 32768, -0.5, 0.0, 0.5, 32767 / 32768], np.float32)
    out, done = apply_condition(AudioClip(x, 16000), [], seed=0)
    assert out.samples.tolist() == [-32767, -16384, 0, 16384, 32767] and done["clipped_samples"] == 0
    loud, done = apply_condition(AudioClip(x, 16000), steps({"gain_db": 6.0206}), seed=0)  # x 2
    assert loud.samples.tolist() == [-32768, -32768, 0, 32767, 32767] and done["clipped_samples"] == 4
    assert apply_condition(AudioClip(np.array([-1.0], np.float32), 16000), [], seed=0)[0].samples[0] == -32768


def test_white_noise_is_flat_and_pink_noise_has_no_dc():
    from voxarena.dsp.channel import coloured_noise

    n = 1 << 16
    white = np.abs(np.fft.rfft(coloured_noise(n, "white", np.random.default_rng(3)))) ** 2
    half = white.size // 2
    assert white[1:half].mean() == pytest.approx(white[half:].mean(), rel=0.05)  # equal power per band
    pink = coloured_noise(n, "pink", np.random.default_rng(3))
    assert abs(pink.mean()) < 1e-12  # DC removed
    spec = np.abs(np.fft.rfft(pink)) ** 2
    # 1/f power: the octave [f, 2f) holds the same power as [2f, 4f)
    f = np.arange(spec.size)
    assert spec[(f >= 512) & (f < 1024)].sum() == pytest.approx(spec[(f >= 1024) & (f < 2048)].sum(), rel=0.1)
    assert spec[-1] > 0 and spec[1] > 0  # only DC is dropped
    assert spec[-1] < 0.1 * spec[1:65].mean()  # ... and the top bin is as quiet as 1/f says


def test_condition_seed_is_the_first_8_bytes_of_a_sha256():
    import hashlib

    digest = hashlib.sha256(b"3|noisy|clip-1").digest()
    assert condition_seed(3, "noisy", "clip-1") == int.from_bytes(digest[:8], "little") < 2**64


@pytest.mark.parametrize("codec", ["opus", "vorbis"])
def test_opus_and_vorbis_take_a_compression_level(codec):
    # (libsndfile refuses a constant bit-rate mode together with a compression level for these two)
    out, done = apply_condition(_tone(16000), steps({"codec": codec, "compression": 0.5}), seed=0)
    assert out.sample_rate == 16000 and done["steps"][0]["compression"] == 0.5 and done["steps"][0]["kbps"] > 0

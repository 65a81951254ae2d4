"""Reference-based and quality metrics against independent computations and known properties."""

from __future__ import annotations

import math

import numpy as np
import pytest

from voxarena.codec import AudioClip, read_audio_file, resample
from voxarena.scorers.cloneval import mean_row_cosine
from voxarena.scorers.registry import ClipInputs, MetricInputError, get_metric


@pytest.fixture(scope="module")
def speech(speech_dir):
    return read_audio_file(str(speech_dir / "LibriSpeech" / "test-clean" / "1089" / "134686" / "1089-134686-0000.flac"))


def noisy(clip: AudioClip, snr_db: float, seed: int = 0) -> AudioClip:
    x = clip.as_float32().astype(np.float64)
    noise = np.random.default_rng(seed).standard_normal(x.size)
    noise *= np.sqrt(np.mean(x**2) / (10 ** (snr_db / 10)) / np.mean(noise**2))
    return AudioClip((x + noise).astype(np.float32), clip.sample_rate)


def measure(name, gen, ref):
    return get_metric(name).measure(
        ClipInputs("c", gen, source_reference=ref, speaker_reference=ref, reference_aligned=True)
    )[0]


def test_pesq_and_stoi_match_the_reference_packages(speech):
    from pesq import pesq
    from pystoi import stoi

    deg = noisy(speech, 10)
    ref_x, deg_x = speech.as_float32(), deg.as_float32()
    assert measure("pesq", deg, speech)["pesq.value"] == pytest.approx(pesq(16000, ref_x, deg_x, "wb"), abs=1e-6)
    v = measure("stoi", deg, speech)
    assert v["stoi.value"] == pytest.approx(stoi(ref_x, deg_x, 16000, extended=False), abs=1e-9)
    assert v["stoi.extended"] == pytest.approx(stoi(ref_x, deg_x, 16000, extended=True), abs=1e-9)


def test_pesq_stoi_identity_and_ordering(speech):
    same = measure("pesq", speech, speech)["pesq.value"]
    assert same == pytest.approx(4.644, abs=0.01)  # the P.862.2 ceiling
    scores = [measure("pesq", noisy(speech, snr), speech)["pesq.value"] for snr in (0, 10, 20)]
    assert scores[0] < scores[1] < scores[2] < same
    stois = [measure("stoi", noisy(speech, snr), speech)["stoi.value"] for snr in (-5, 5, 20)]
    assert stois[0] < stois[1] < stois[2] <= 1.0


def test_pesq_narrow_band_for_8k(speech):
    from pesq import pesq

    gen8 = AudioClip(resample(noisy(speech, 15).samples, 16000, 8000), 8000)
    v = measure("pesq", gen8, speech)
    assert v["pesq.narrow_band"] == 1.0
    ref8 = resample(speech.samples, 16000, 8000)
    n = min(ref8.size, gen8.samples.size)
    assert v["pesq.value"] == pytest.approx(pesq(8000, ref8[:n], gen8.samples[:n], "nb"), abs=1e-6)


def test_psnr_matches_skimage(speech):
    import librosa
    from skimage.metrics import peak_signal_noise_ratio

    deg = noisy(speech, 5)
    mags = [np.abs(librosa.stft(c.as_float32(), n_fft=1024, hop_length=256)) for c in (speech, deg)]
    mags = [m / m.max() for m in mags]
    expected = peak_signal_noise_ratio(mags[0], mags[1], data_range=1.0)
    assert measure("psnr", deg, speech)["psnr.db"] == pytest.approx(expected, rel=1e-6)


def test_ls_mse_of_a_gain_is_log_gain_squared():
    # log-mel of 2x is log-mel of x plus ln 2 in every bin above the floor: LS-MSE = (ln 2)^2
    x = np.random.default_rng(1).standard_normal(24000).astype(np.float32) * 0.1  # full band at the metric's 24 kHz
    a, b = AudioClip(x, 24000), AudioClip(2 * x, 24000)
    assert measure("ls_mse", b, a)["ls_mse.value"] == pytest.approx(math.log(2) ** 2, rel=1e-3)
    assert measure("ls_mse", a, a)["ls_mse.value"] == 0.0


def test_ssim_and_mcd_properties(speech):
    assert measure("ssim", speech, speech)["ssim.value"] == pytest.approx(1.0)
    assert (
        measure("ssim", noisy(speech, 0), speech)["ssim.value"]
        < measure("ssim", noisy(speech, 20), speech)["ssim.value"]
    )
    assert measure("mcd", speech, speech)["mcd.db"] == pytest.approx(0.0, abs=1e-9)
    # DTW: the same speech after 0.3 s of silence is nearly the same; noise is far.
    delayed = AudioClip(np.concatenate([np.zeros(4800, np.int16), speech.samples]), 16000)
    assert measure("mcd", delayed, speech)["mcd.db"] < 0.5 * measure("mcd", noisy(speech, 0), speech)["mcd.db"]


def test_aligned_metrics_refuse_unaligned_pairs(speech):
    half = AudioClip(speech.samples[: speech.samples.size // 2], 16000)
    for name in ("pesq", "stoi", "ssim", "ls_mse"):
        with pytest.raises(MetricInputError, match="not time-aligned"):
            measure(name, half, speech)
    with pytest.raises(MetricInputError, match="no time-aligned reference"):
        get_metric("pesq").measure(ClipInputs("c", speech))
    same_words = ClipInputs("t", speech, source_reference=speech, reference_aligned=False)  # TTS of a transcript
    with pytest.raises(MetricInputError, match="not time-aligned"):
        get_metric("stoi").measure(same_words)
    assert get_metric("psnr").measure(same_words)[0]["psnr.db"] > 0  # PSNR and MCD are still defined


def test_dnsmos_matches_the_speechmos_api(speech):
    from speechmos import dnsmos

    x = speech.as_float32()
    expected = dnsmos.run(x, sr=16000)
    v = get_metric("dnsmos").measure(ClipInputs("c", speech))[0]
    assert v["dnsmos.ovrl"] == pytest.approx(expected["ovrl_mos"], abs=1e-5)
    assert v["dnsmos.p808"] == pytest.approx(expected["p808_mos"], abs=1e-5)
    short = AudioClip(speech.samples[: 16000 * 2], 16000)  # tiled to 9.01 s as the reference does
    tiled = np.tile(short.as_float32(), 5)[: int(9.01 * 16000) + 16000]
    assert get_metric("dnsmos").measure(ClipInputs("s", short))[0]["dnsmos.ovrl"] == pytest.approx(
        dnsmos.run(tiled[: 16000 * 16], sr=16000)["ovrl_mos"], abs=0.05
    )
    assert 1.0 < v["dnsmos.ovrl"] < 5.0


def test_cloneval_cosine_matches_sklearn():
    from sklearn.metrics.pairwise import cosine_similarity

    rng = np.random.default_rng(2)
    a, b = rng.standard_normal((12, 40)), rng.standard_normal((12, 40))
    assert mean_row_cosine(a, b) == pytest.approx(float(np.mean(cosine_similarity(a, b))))
    x, y = rng.standard_normal(50), rng.standard_normal(50)
    assert mean_row_cosine(x, y) == pytest.approx(float(cosine_similarity(x[None], y[None])[0, 0]))


@pytest.mark.slow
def test_cloneval_identity(speech):
    # One-row features of identical clips have cosine 1; matrix features average every row pair (ClonEval's
    # definition), which is below 1 even for identical clips.
    v = get_metric("cloneval").measure(ClipInputs("c", speech, speaker_reference=speech))[0]
    for f in ("pitch", "centroid", "flatness", "rolloff", "rms"):
        assert v[f"cloneval.{f}"] == pytest.approx(1.0, abs=1e-6), f
    assert all(val <= 1.0 + 1e-6 for val in v.values())
    other = get_metric("cloneval").measure(ClipInputs("n", noisy(speech, -5), speaker_reference=speech))[0]
    assert other["cloneval.flatness"] < v["cloneval.flatness"]


def test_sim_flags_upsampled_audio(speech):
    narrow = AudioClip(resample(resample(speech.samples, 16000, 8000), 8000, 16000), 16000)
    flagged = get_metric("sim").measure(ClipInputs("n", narrow, speaker_reference=speech))
    clean = get_metric("sim").measure(ClipInputs("c", speech, speaker_reference=speech))
    assert "sim.warning" in flagged[1] and "sim.warning" not in clean[1]
    assert flagged[0]["sim.bandwidth_hz"] < 4100 < clean[0]["sim.bandwidth_hz"]


def test_the_pesq_child_ends_with_a_killed_scorer(tmp_path):
    """A scorer that is killed never shuts its PESQ pool down: the child must not outlive it."""
    import os
    import signal
    import subprocess
    import sys
    import time

    script = (
        "import os, signal, numpy as np\n"
        "from voxarena.scorers.reference import IsolatedPesq\n"
        "p = IsolatedPesq()\n"
        "x = np.sin(np.arange(32000) * 0.05) * 0.3\n"
        "p(16000, x, x * 0.9, 'wb')\n"
        "print(*[c.pid for c in p._pool._processes.values()], flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == -signal.SIGKILL, out.stderr
    (child,) = [int(pid) for pid in out.stdout.split()]
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.kill(child, signal.SIGKILL)
    raise AssertionError(f"the PESQ child {child} outlived its killed scorer by 10 s")

"""mos_distill: the numpy preprocessing against independent expectations (fast), the served metric
against the package's own torch inference (slow: the conversion venv as a subprocess, torch never
enters the scorer), its ordering on degraded speech, and the metric through a real scorer server.

The slow tests need ``make convert-venv`` and ``make models MODELS=distillmos``.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from voxarena.codec import AudioClip, encode_audio, read_audio_file, resample
from voxarena.convert.distillmos import TOLERANCE
from voxarena.converted import load_converted
from voxarena.hashing import sha256_file
from voxarena.scorers import mos_distill
from voxarena.scorers.registry import REGISTRY, ClipInputs, MetricInputError, get_metric
from voxarena.v1 import common_pb2, scorer_pb2, scorer_pb2_grpc

REPO = Path(__file__).resolve().parents[2]
CONVERT_PYTHON = REPO / "build" / "convert-venv" / "bin" / "python"


def _test_clean(speech_dir: Path, stem: str) -> Path:
    speaker, chapter, _ = stem.split("-")
    return speech_dir / "LibriSpeech" / "test-clean" / speaker / chapter / f"{stem}.flac"


# ---------------------------------------------------------------------------------- preprocessing (fast)
def test_window_starts_follow_the_package_rule():
    n = mos_distill.SEQ_LEN
    assert mos_distill.window_starts(1) == [0]
    assert mos_distill.window_starts(n) == [0]
    # 2.5 s too long: ceil(40000 / 16000) + 1 = 4 windows, starts evenly spaced from 0 to the excess
    excess = 40000
    starts = mos_distill.window_starts(n + excess)
    assert starts == [0, 13333, 26666, 40000]
    assert starts[-1] + n == n + excess and max(np.diff(starts)) <= mos_distill.MAX_HOP_LEN
    # exactly one hop too long: two windows, 0 and 16000
    assert mos_distill.window_starts(n + 16000) == [0, 16000]


def test_spectrum_is_peak_normalised_and_shaped_for_the_network():
    rng = np.random.default_rng(0)
    w = (0.3 * rng.standard_normal(mos_distill.SEQ_LEN)).astype(np.float32)
    spec = mos_distill.compressed_spectrum(w)
    assert spec.shape == (2, 161, 768) and spec.dtype == np.float32
    # the window is divided by its peak first, so its scale does not matter (float32 rounding only)
    assert np.max(np.abs(mos_distill.compressed_spectrum(0.01 * w) - spec)) < 1e-3


def test_spectrum_of_a_sinusoid_peaks_at_its_bin_with_compressed_magnitude():
    """An independent expectation: a unit-peak cosine at bin 40 (2 kHz) gives |X| = sum(hann)/2 = 80 there
    (the window's sum is 160), compressed to 80 ** 0.3, in every frame not reaching into the reflect padding."""
    t = np.arange(mos_distill.SEQ_LEN)
    spec = mos_distill.compressed_spectrum(np.cos(2 * np.pi * 2000 * t / 16000).astype(np.float32))
    magnitude = np.hypot(spec[0], spec[1])
    assert np.all(np.argmax(magnitude, axis=0) == 40)
    assert np.allclose(magnitude[40, 1:-1], 80**0.3, rtol=1e-4)


def test_sinc_resample_keeps_a_sinusoid_and_the_length():
    """24 kHz -> 16 kHz: length ceil(n * 2 / 3); a 1 kHz tone stays the same tone (away from the edges)."""
    n = 24000
    x = np.sin(2 * np.pi * 1000 * np.arange(n) / 24000).astype(np.float32)
    y = mos_distill.sinc_resample(x, 24000)
    assert y.shape == (16000,)
    expected = np.sin(2 * np.pi * 1000 * np.arange(16000) / 16000)
    assert np.max(np.abs(y - expected)[200:-200]) < 2e-3


def test_a_rate_with_a_huge_resampling_kernel_is_refused():
    # 16001 Hz -> 16000 Hz: gcd 1, torchaudio's kernel would be 16000 x 16015 floats (about 1 GB)
    with pytest.raises(MetricInputError, match="16001:16000"):
        mos_distill.sinc_resample(np.zeros(1000, np.float32), 16001)


def test_fingerprint_says_when_the_converted_model_is_absent(tmp_path, monkeypatch):
    monkeypatch.setenv("VOXARENA_MODELS", str(tmp_path))
    fp = mos_distill.MosDistill().fingerprint()
    assert fp["mos_distill"].startswith("unavailable:") and "make models" in fp["mos_distill"]


# ---------------------------------------------------------------------------------- torch original (slow)
# The package's own inference path, as its CLI runs it: torchaudio.load, Resample(sr, 16000), the model.
TORCH_SCRIPT = """
import json, sys, torch
torch.set_num_threads(1)
from distillmos.sqa import _infer_file_list
print(json.dumps(dict(_infer_file_list(sys.argv[1:]))))
"""


def _torch_mos(paths: list[Path]) -> dict[str, float]:
    if not CONVERT_PYTHON.exists():
        pytest.fail(f"{CONVERT_PYTHON} is missing: run `make convert-venv` (the torch reference runs there)")
    env = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1"}
    out = subprocess.run(
        [str(CONVERT_PYTHON), "-c", TORCH_SCRIPT, *map(str, paths)],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
    )
    if out.returncode != 0:
        pytest.fail(f"torch reference failed (needs torchaudio in the convert venv: python3-torchaudio):\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _served(path: Path) -> dict[str, float]:
    return get_metric("mos_distill").measure(ClipInputs("c", read_audio_file(str(path))))[0]


@pytest.mark.slow
def test_served_mos_matches_the_torch_original(speech_dir, tmp_path):
    """Clips the conversion check did not use: 16 kHz FLAC of 3.3 s (one padded window) and 10.4 s / 10.1 s
    (4 and 3 windows), and two clips at 24 and 22.05 kHz (the resampler too), within the conversion's tolerance."""
    paths = [_test_clean(speech_dir, s) for s in ("1089-134686-0000", "1089-134686-0001", "8224-274381-0007")]
    for stem, rate in (("61-70968-0011", 24000), ("5105-28241-0006", 22050)):
        clip = read_audio_file(str(_test_clean(speech_dir, stem)))
        wav = tmp_path / f"{stem}-{rate}.wav"
        sf.write(wav, (resample(clip.samples, 16000, rate) * 32767).round().astype(np.int16), rate, subtype="PCM_16")
        paths.append(wav)
    expected = _torch_mos(paths)
    diffs = {}
    for path in paths:
        served = _served(path)
        diffs[path.name] = abs(served["mos_distill.mos"] - expected[str(path)])
        assert 1.0 <= served["mos_distill.mos"] <= 5.0
    print(f"\nmos_distill served vs torch: {json.dumps(diffs)}")
    assert max(diffs.values()) <= TOLERANCE, diffs


@pytest.mark.slow
def test_degraded_speech_scores_lower(speech_dir):
    """One utterance clean; with white noise at 5 dB SNR; band-limited to 2 kHz (resampled to 4 kHz and
    back); and through a crude vocoder (Griffin-Lim, 2 iterations from random phase, on its own STFT
    magnitude): each clearly below the clean recording (measured 4.37, 1.96, 2.35, 3.44)."""
    import librosa

    clip = read_audio_file(str(_test_clean(speech_dir, "61-70968-0011")))
    x = clip.as_float32()
    noise = np.random.default_rng(1).standard_normal(x.size)
    noise *= np.sqrt(np.mean(x.astype(np.float64) ** 2) / 10 ** (5 / 10) / np.mean(noise**2))
    band_limited = resample(resample(clip.samples, 16000, 4000), 4000, 16000)
    magnitude = np.abs(librosa.stft(x, n_fft=512, hop_length=128))
    vocoded = librosa.griffinlim(
        magnitude,
        n_iter=2,
        hop_length=128,
        n_fft=512,
        init="random",
        random_state=np.random.RandomState(0),
        length=x.size,
    )
    metric = get_metric("mos_distill")
    score = {
        name: metric.measure(ClipInputs(name, AudioClip(np.asarray(y, np.float32), 16000)))[0]["mos_distill.mos"]
        for name, y in (("clean", x), ("noisy", x + noise), ("band_limited", band_limited), ("vocoded", vocoded))
    }
    print(f"\nmos_distill: {score}")
    assert score["clean"] > 4.0
    assert score["noisy"] < score["clean"] - 1.0 and score["band_limited"] < score["clean"] - 1.0, score
    assert score["vocoded"] < score["clean"] - 0.5, score


# ---------------------------------------------------------------------------------- through the scorer (slow)
@pytest.fixture(scope="module")
def scorer():
    from voxarena.scorers.service import ScorerServicer
    from voxarena.sdk.testing import serve_servicers

    servicer = ScorerServicer(fingerprint_metrics=("mos_distill", "dnsmos"))
    name = scorer_pb2.DESCRIPTOR.services_by_name["ScorerService"].full_name
    register = (name, lambda s: scorer_pb2_grpc.add_ScorerServiceServicer_to_server(servicer, s))
    with serve_servicers([register], load=servicer.load) as served:
        yield served.stub(scorer_pb2_grpc.ScorerServiceStub)


def test_registered_beside_dnsmos():
    assert REGISTRY["mos_distill"] == "voxarena.scorers.mos_distill:MosDistill"
    cls = mos_distill.MosDistill
    assert cls.higher_is_better and cls.output_columns() == ("mos_distill",) and cls.needs == ()


@pytest.mark.slow
def test_scorer_lists_measures_and_aggregates_it(scorer, speech_dir):
    info = scorer.GetInfo(common_pb2.GetInfoRequest())
    spec = {m.name: m for m in info.metrics}["mos_distill"]
    assert spec.higher_is_better and list(spec.columns) == ["mos_distill"]
    onnx_path = load_converted("distillmos").path("model.onnx")
    assert info.fingerprint["mos_distill.onnx_sha256"] == sha256_file(onnx_path)
    assert (
        info.fingerprint["mos_distill.source_sha256"]
        == "b18b3ac60227267cfb91e5d00ce22cc7b73716fd92f269484da1446e27031a40"
    )

    stems = ("1089-134691-0001", "61-70968-0049", "8230-279154-0017")
    items = [
        scorer_pb2.ClipRequest(
            request_id=s,
            metrics=["mos_distill", "dnsmos"],
            audio=encode_audio(read_audio_file(str(_test_clean(speech_dir, s)))),
        )
        for s in stems
    ]
    measured = scorer.MeasureClips(scorer_pb2.MeasureClipsRequest(items=items), timeout=600).items
    assert [m.request_id for m in measured] == list(stems)
    per_clip = [m.values["mos_distill.mos"] for m in measured]
    assert all(3.0 < v <= 5.0 for v in per_clip) and all("dnsmos.ovrl" in m.values for m in measured)
    for m, s in zip(measured, stems):
        m.cluster = s.split("-")[0]
    agg = scorer.Aggregate(
        scorer_pb2.AggregateRequest(
            metrics=["mos_distill"],
            groups=[scorer_pb2.MeasurementGroup(name="g", clips=measured)],
            bootstrap=scorer_pb2.Bootstrap(resamples=200, seed=3, confidence=0.95),
        )
    ).groups[0]
    assert agg.values["mos_distill"] == pytest.approx(np.mean(per_clip), abs=1e-12)
    assert agg.counts["mos_distill"] == 3
    assert (
        min(per_clip)
        <= agg.ci_low["mos_distill"]
        <= agg.values["mos_distill"]
        <= agg.ci_high["mos_distill"]
        <= max(per_clip)
    )

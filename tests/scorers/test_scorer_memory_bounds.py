"""The scorer's memory on long clips (issue 13 item 2; numbers: benchmarks/scorer_memory.py): DNSMOS scores
its windows in small ONNX batches, which give the same scores as one window per call; MCD refuses a pair
whose DTW matrix would exceed its bound, naming it, before any analysis; the reference feature cache is
bounded by bytes, not only by entries."""

from __future__ import annotations

import time

import numpy as np
import pytest

from voxarena.codec import AudioClip, read_audio_file
from voxarena.scorers import quality, reference
from voxarena.scorers.registry import ClipInputs, MetricInputError, ReferenceCache, get_metric


@pytest.fixture(scope="module")
def speech_20s(speech_dir) -> np.ndarray:
    files = sorted((speech_dir / "LibriSpeech" / "test-clean").glob("*/*/*.flac"))[:6]
    x = np.concatenate([read_audio_file(str(f)).as_float32() for f in files])
    assert x.size >= 20 * 16000
    return x[: 20 * 16000]


@pytest.mark.slow
def test_dnsmos_window_batches_give_the_same_scores(speech_20s, monkeypatch):
    """20 s: 12 windows of 9.01 s, so batches of 1, 4 (the scorer's) and 16 split them differently."""
    model = quality.BatchedDnsmos()
    scores = {}
    for batch in (1, quality.BATCH, 16):
        monkeypatch.setattr(quality, "BATCH", batch)
        scores[batch] = model(speech_20s, 16000)
    assert scores[1] == scores[quality.BATCH] == scores[16], scores
    assert 1 < scores[1]["ovrl_mos"] < 5


def _pair(ref_seconds: float, clip_seconds: float) -> ClipInputs:
    rng = np.random.default_rng(0)
    ref = AudioClip(rng.uniform(-0.1, 0.1, int(ref_seconds * 16000)).astype(np.float32), 16000)
    gen = AudioClip(rng.uniform(-0.1, 0.1, int(clip_seconds * 16000)).astype(np.float32), 16000)
    return ClipInputs("pair", gen, source_reference=ref, reference_aligned=True)


def test_mcd_refuses_a_pair_over_its_dtw_bound_before_any_analysis():
    mcd = get_metric("mcd")
    t0 = time.perf_counter()
    with pytest.raises(MetricInputError, match=r"12001 x 12001 frames .*exceeds 4e\+07 frame pairs \(memory\)"):
        mcd.measure(_pair(60.0, 60.0))
    assert time.perf_counter() - t0 < 1.0  # refused from the durations, not after WORLD analysis
    # the bound in seconds that the description and the message state: two clips of about 31 s each
    assert reference.mcd_frames(_pair(31.0, 31.0).audio) ** 2 <= reference.MCD_MAX_DTW_CELLS
    assert reference.mcd_frames(_pair(32.0, 32.0).audio) ** 2 > reference.MCD_MAX_DTW_CELLS
    assert "frame pairs" in type(mcd).description


def test_mcd_frames_is_worlds_frame_count():
    import pyworld

    clip = _pair(1.0, 2.345).audio
    f0, _ = pyworld.dio(clip.as_float32().astype(np.float64), 16000, frame_period=reference.MCD_FRAME_MS)
    assert reference.mcd_frames(clip) == f0.size


def test_reference_cache_is_bounded_by_bytes():
    cache = ReferenceCache(size=100, max_bytes=10_000)
    for i in range(10):
        clip = AudioClip(np.full(10, i, np.int16), 16000)
        cache.get("feature", clip, lambda c: np.zeros(1000))  # 8000 bytes each
        assert cache.nbytes <= 10_000
    assert cache.nbytes == 8000  # only the newest fits
    huge = AudioClip(np.full(10, 99, np.int16), 16000)
    assert cache.get("feature", huge, lambda c: (np.zeros(5000), np.zeros(5000))) is not None  # answered, not kept
    assert cache.nbytes == 0


def test_reference_cache_computes_a_key_once_for_concurrent_callers():
    """Clip workers holding two generators' clips of one reference compute its features once; the waiting
    caller gets the same value, or the same error."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    cache, calls, started, release = ReferenceCache(), [], threading.Event(), threading.Event()

    def slow(c):
        calls.append(1)
        started.set()
        release.wait(10)
        return np.arange(3.0)

    clip = AudioClip(np.full(10, 7, np.int16), 16000)
    with ThreadPoolExecutor(4) as pool:
        first = pool.submit(cache.get, "f", clip, slow)
        started.wait(10)
        others = [pool.submit(cache.get, "f", clip, slow) for _ in range(3)]
        time.sleep(0.3)  # the others reach the cache while the first computes (without the wait: 4 calls)
        release.set()
        values = [f.result(10) for f in [first, *others]]
    assert len(calls) == 1 and all(v is values[0] for v in values)

    def broken(c):
        started.set()
        release.wait(10)
        raise MetricInputError("no features")

    started.clear(), release.clear()
    other = AudioClip(np.full(10, 8, np.int16), 16000)
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(cache.get, "f", other, broken)
        started.wait(10)
        second = pool.submit(cache.get, "f", other, broken)
        release.set()
        for f in (first, second):
            with pytest.raises(MetricInputError, match="no features"):
                f.result(10)
    assert cache.get("f", other, lambda c: np.ones(2)).tolist() == [1.0, 1.0]  # a failure is not kept


@pytest.mark.parametrize("extended", [False, True])
def test_chunked_stoi_is_pystoi(speech_20s, monkeypatch, extended):
    """Segments taken 300 at a time (a 20 s clip has about 1500): pystoi's value, up to summation order
    (ESTOI adds pystoi's unseeded 2e-16 noise, so it is compared to 1e-9)."""
    from pystoi import stoi as pystoi

    from voxarena.scorers import stoi

    monkeypatch.setattr(stoi, "SEGMENT_CHUNK", 300)
    noise = np.random.default_rng(1).standard_normal(speech_20s.size)
    degraded = speech_20s + 0.3 * np.std(speech_20s) * noise
    expected = pystoi(speech_20s, degraded, 16000, extended=extended)
    assert stoi.stoi(speech_20s, degraded, 16000, extended=extended) == pytest.approx(expected, abs=1e-9)
    both = stoi.stoi_and_estoi(speech_20s, degraded, 16000)  # the scorer's one pass for the two
    assert both[int(extended)] == pytest.approx(expected, abs=1e-9)
    assert 0.3 < expected < 1.0


def _bursts(seconds: float, on: float, off: float) -> AudioClip:
    """A tone in bursts with noise: at 200 ms on, 300 ms off for 30 s, the pesq library segfaults."""
    rng = np.random.default_rng(0)
    t = np.arange(int(seconds * 16000)) / 16000
    x = 0.3 * np.sin(2 * np.pi * 200 * t) * (1 + 0.5 * np.sin(2 * np.pi * 3 * t)) + 0.05 * rng.standard_normal(t.size)
    return AudioClip((x * ((t % (on + off)) < on)).astype(np.float32), 16000)


def test_a_clip_that_crashes_the_pesq_library_fails_alone():
    pesq = get_metric("pesq")
    crash = _bursts(30.0, 0.2, 0.3)
    with pytest.raises(MetricInputError, match="pesq library crashed"):
        pesq.measure(ClipInputs("crash", crash, source_reference=crash, reference_aligned=True))
    fine = _bursts(10.0, 1.0, 0.5)
    values, _ = pesq.measure(ClipInputs("fine", fine, source_reference=fine, reference_aligned=True))
    assert values["pesq.value"] > 4.0  # the clip against itself, in a new worker process


def test_chunked_ssim_is_skimages(speech_20s, monkeypatch):
    """A 20 s spectrogram (1251 frames) mapped 100 columns at a time: skimage's value up to summation
    order; narrower than a chunk: skimage's call as is, bit for bit."""
    import librosa
    from skimage.metrics import structural_similarity

    noise = np.random.default_rng(2).standard_normal(speech_20s.size)
    mags = [np.abs(librosa.stft(x, n_fft=1024, hop_length=256)) for x in (speech_20s, speech_20s + 0.05 * noise)]
    ref, gen = (m / m.max() for m in mags)
    expected = structural_similarity(ref, gen, data_range=1.0)
    assert reference.ssim(ref, gen) == expected
    monkeypatch.setattr(reference, "SSIM_CHUNK_COLUMNS", 100)
    assert reference.ssim(ref, gen) == pytest.approx(expected, abs=1e-12)
    assert reference.ssim(ref[:, :500], gen[:, :500]) == pytest.approx(
        structural_similarity(ref[:, :500], gen[:, :500], data_range=1.0), abs=1e-12
    )
    assert 0.2 < expected < 1.0


def test_speaker_embedding_runs_give_the_same_embedding(speech_20s, monkeypatch):
    """20 s: about 26 partial utterances, in runs of 7 or all at once: the same embedding, bit for bit."""
    from voxarena.scorers import ge2e, speaker

    clip = AudioClip(speech_20s, 16000)
    embeddings = []
    for per_run in (7, 10_000):
        monkeypatch.setattr(ge2e, "PARTIALS_PER_RUN", per_run)
        embeddings.append(speaker.embed(clip))
    assert np.array_equal(embeddings[0], embeddings[1])


def test_cloneval_refuses_a_common_length_over_its_bound_before_any_analysis():
    from voxarena.scorers import cloneval

    long = _pair(cloneval.MAX_SECONDS + 1, cloneval.MAX_SECONDS + 1)
    clip = ClipInputs("long", long.audio, speaker_reference=long.source_reference)
    t0 = time.perf_counter()
    with pytest.raises(MetricInputError, match=r"common length 121.0 s exceeds the 120 s cloneval measures"):
        get_metric("cloneval").measure(clip)
    assert time.perf_counter() - t0 < 2.0

"""DNSMOS P.835 with the convolutions shared by overlapping windows (voxarena/scorers/quality.py) against
the model run whole on every window, and the scores against speechmos's own API, on real speech."""

from __future__ import annotations

import numpy as np
import pytest

from voxarena.codec import read_audio_file
from voxarena.scorers import quality


@pytest.fixture(scope="module")
def model() -> quality.BatchedDnsmos:
    return quality.BatchedDnsmos()


@pytest.fixture(scope="module")
def speech_35s(speech_dir) -> np.ndarray:
    files = sorted((speech_dir / "LibriSpeech" / "test-clean").glob("*/*/*.flac"))[:12]
    x = np.concatenate([read_audio_file(str(f)).as_float32() for f in files])
    assert x.size >= 35 * 16000
    return x[: 35 * 16000 + 1234]  # not a whole number of frames or seconds


def _per_window(model: quality.BatchedDnsmos, x: np.ndarray) -> tuple[list[int], np.ndarray]:
    """The first frame of each window and the whole model's outputs on it, windows as dnsmos_local.py
    cuts them: its float window ends make windows 7 to 23 one sample short, and it skips them."""
    length = int(quality.INPUT_LENGTH * 16000)
    hops = int(np.floor(len(x) / 16000) - quality.INPUT_LENGTH) + 1
    windows = [(i, x[int(i * 16000) : int((i + quality.INPUT_LENGTH) * 16000)]) for i in range(hops)]
    kept = [(i, w) for i, w in windows if len(w) >= length]
    return [100 * i for i, _ in kept], np.concatenate(
        [model.primary.run(None, {"input_1": w[None]})[0] for _, w in kept]
    )


@pytest.mark.parametrize("seconds", [11.0, 12.5, 35.0])
def test_shared_convolutions_give_the_per_window_outputs(model, speech_35s, seconds):
    """Two windows (the least that shares), a few, 10 of 27 (the reference skips 7 to 23): every window's
    three raw outputs, to float32 rounding (measured: at most 5e-7 on outputs of 1 to 5)."""
    x = speech_35s[: int(seconds * 16000)]
    starts, expected = _per_window(model, x)
    assert len(starts) >= 2
    got = model._p835_shared(x, starts)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=0, atol=5e-6)


def test_each_window_front_is_the_windows_own(model, speech_35s):
    """Every frame of every window's shared front, its 4 edge frames at each end included, equals the front
    of the window computed alone; taken from the clip's frames instead (real neighbours, not the zeros the
    window is padded with), the edge frames differ, so the edge recomputation is needed."""
    x = speech_35s[: 13 * 16000]
    starts, _ = _per_window(model, x)
    for s, shared in zip(starts, model._window_fronts(x, starts)):
        alone = model._front(x, s, s + 900)
        np.testing.assert_allclose(shared, alone, rtol=0, atol=5e-6)
        if s > 0:
            r = quality.REACH
            neighbours = model._front(x, s - r, s + 900 + r)[:, r:-r]
            assert np.abs(neighbours[:, :r] - alone[:, :r]).max() > 1e-2
            np.testing.assert_allclose(neighbours[:, r:-r], alone[:, r:-r], rtol=0, atol=5e-6)


def test_scores_equal_speechmos(model, speech_35s):
    from speechmos import dnsmos

    for seconds in (3.0, 9.5, 35.0):  # tiled to one window; one window; 10 windows, shared
        x = speech_35s[: int(seconds * 16000)]
        ours, theirs = model(x, 16000), dnsmos.run(x, sr=16000)
        for key in ("ovrl_mos", "sig_mos", "bak_mos", "p808_mos"):
            assert ours[key] == pytest.approx(theirs[key], abs=1e-6), (seconds, key)


def test_one_window_runs_the_model_whole(model, speech_35s):
    x = speech_35s[: int(9.5 * 16000)]
    r = model.primary.run(None, {"input_1": x[None, : int(quality.INPUT_LENGTH * 16000)]})[0]
    sig, bak, ovr = model._ref.get_polyfit_val(r[:, 0], r[:, 1], r[:, 2], False)
    assert model(x, 16000)["ovrl_mos"] == float(np.mean(ovr))


def test_other_rates_are_refused(model):
    with pytest.raises(ValueError, match="16 kHz"):
        model(np.zeros(22050 * 10, np.float32), 22050)


def test_one_window_option_scores_the_tiled_clip_cut_at_one_window(model, speech_35s, monkeypatch):
    """``one-window`` (an explicit option, not the reference): a clip under 9.01 s scores as speechmos
    scores that clip tiled and cut at 9.01 s; longer clips as the reference; the fingerprint says which."""
    from speechmos import dnsmos

    from voxarena.codec import AudioClip
    from voxarena.scorers.registry import ClipInputs, get_metric

    metric, length = get_metric("dnsmos"), int(quality.INPUT_LENGTH * 16000)

    def scores(x: np.ndarray) -> dict[str, float]:
        return metric.measure(ClipInputs("c", AudioClip(x, 16000)))[0]

    short, long = speech_35s[: int(3.3 * 16000)], speech_35s[: int(12.5 * 16000)]
    reference_short, reference_long = scores(short), scores(long)
    assert "dnsmos_local.py" in metric.fingerprint()["dnsmos.short_clips"]
    monkeypatch.setenv(quality.SHORT_CLIPS_ENV, "one-window")
    assert metric.fingerprint()["dnsmos.short_clips"].startswith("one-window v1")
    tiled = np.tile(short, 3)[:length]  # 3.3 s -> 9.9 s, cut at 9.01 s
    theirs = dnsmos.run(tiled, sr=16000)
    ours = scores(short)
    for key, col in (("ovrl_mos", "dnsmos.ovrl"), ("sig_mos", "dnsmos.sig"), ("p808_mos", "dnsmos.p808")):
        assert ours[col] == pytest.approx(theirs[key], abs=1e-6), key
    assert ours != reference_short  # a different number: hence the option and its fingerprint
    assert scores(long) == reference_long


def test_an_unknown_short_clip_mode_is_refused(monkeypatch, capsys):
    from voxarena.scorers.server import main

    monkeypatch.delenv("VOXARENA_PARENT_PID", raising=False)  # main() would bind this process to that parent
    monkeypatch.setenv(quality.SHORT_CLIPS_ENV, "fast")
    with pytest.raises(ValueError, match="VOXARENA_DNSMOS_SHORT_CLIPS='fast' is not a DNSMOS short-clip mode"):
        quality.short_clips_mode()
    with pytest.raises(SystemExit):
        main(["--dnsmos-short-clips", "one_window"])
    assert "choose one of windows, one-window" in capsys.readouterr().err

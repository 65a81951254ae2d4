"""The parameterisation and the budget: every candidate meets the SNR budget on the float32 samples it
carries (measured here independently), gains stay within +-max_gain_db, flat gains are flat, and bad
arguments name themselves."""

from __future__ import annotations

import numpy as np
import pytest

from voxarena.attack import AttackArgumentError, Budget, Perturbation
from voxarena.attack.perturbation import band_weights
from voxarena.codec import AudioClip


def measured_snr_db(original: AudioClip, attacked: AudioClip) -> float:
    x = original.as_float32().astype(np.float64)
    d = attacked.samples.astype(np.float64) - x
    return float(10 * np.log10(np.sum(x**2) / np.sum(d**2)))


@pytest.mark.parametrize("snr", [10.0, 30.0, 45.0])
def test_every_candidate_meets_the_budget(voiced_clip, snr):
    p = Perturbation(voiced_clip, Budget(snr_db=snr, max_gain_db=12), seed=3)
    rng = np.random.default_rng(0)
    points = [np.ones(p.dimension), -np.ones(p.dimension), *rng.uniform(-3, 3, (10, p.dimension))]
    for z in points:
        c = p.apply(z)
        assert c.clip.samples.dtype == np.float32
        assert measured_snr_db(voiced_clip, c.clip) >= snr - 1e-6
        assert c.snr_db >= snr
        assert all(abs(g) <= 12 for g in c.gains_db)
        assert all(-60 <= n <= 0 for n in c.noise_db)
    # the loudest point needed the projection: the budget binds, it is not met by accident
    assert p.apply(np.ones(p.dimension)).scale < 1


def test_a_small_perturbation_is_left_alone(voiced_clip):
    p = Perturbation(voiced_clip, Budget(snr_db=10, max_gain_db=1), noise=False)
    c = p.apply(np.full(p.dimension, 0.5))  # +0.5 dB everywhere: an SNR of about 25 dB
    assert c.scale == 1.0
    gain = 10 ** (0.5 / 20)
    x = voiced_clip.as_float32()
    assert np.allclose(c.clip.samples, gain * x, atol=1e-4)  # equal band gains are one flat gain


def test_band_weights_are_a_partition_of_unity():
    w = band_weights(8, 16000)
    assert w.shape == (257, 8)
    assert np.allclose(w.sum(axis=1), 1.0)
    assert w[0, 0] == 1.0 and w[-1, -1] == 1.0


def test_the_noise_is_seeded(voiced_clip):
    z = np.zeros(16)
    a = Perturbation(voiced_clip, Budget(), seed=1).apply(z).clip.samples
    b = Perturbation(voiced_clip, Budget(), seed=1).apply(z).clip.samples
    c = Perturbation(voiced_clip, Budget(), seed=2).apply(z).clip.samples
    assert np.array_equal(a, b) and not np.array_equal(a, c)


@pytest.mark.parametrize(
    ("make", "name"),
    [
        (lambda clip: Budget(snr_db=-5), "snr_db"),
        (lambda clip: Budget(snr_db=float("nan")), "snr_db"),
        (lambda clip: Budget(max_gain_db=0), "max_gain_db"),
        (lambda clip: Perturbation(AudioClip(clip.samples[:1000], 16000), Budget()), "clip"),
        (lambda clip: Perturbation(AudioClip(np.zeros(16000, np.int16), 16000), Budget()), "clip"),
        (lambda clip: Perturbation(AudioClip(np.ones((2, 16000), np.float32) / 4, 16000), Budget()), "clip"),
        (lambda clip: Perturbation(AudioClip(np.full(16000, 1.5, np.float32), 16000), Budget()), "clip"),
        (lambda clip: Perturbation(clip, Budget(), n_bands=1), "n_bands"),
        (lambda clip: Perturbation(clip, Budget()).apply(np.zeros(3)), "parameters"),
    ],
)
def test_bad_arguments_name_themselves(voiced_clip, make, name):
    with pytest.raises(AttackArgumentError, match=f"^{name}: "):
        make(voiced_clip)

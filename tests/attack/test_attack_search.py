"""The search against scorers written here: every queried clip meets the budget, the query budget holds
to the query, the same seed and answers give the same log and bytes, a toy scorer with a known optimum
is mostly optimised within 200 queries, and bad arguments or answers are named."""

from __future__ import annotations

import numpy as np
import pytest

from voxarena.attack import AttackArgumentError, AttackQueryError, Budget, SearchSettings, attack
from voxarena.codec import AudioClip, clip_to_wav_bytes

BAND = (2000.0, 3000.0)


def band_energy(clip: AudioClip) -> float:
    """Energy of ``clip`` in BAND (rfft power), computed apart from the attack's STFT filterbank."""
    x = clip.as_float32().astype(np.float64)
    power = np.abs(np.fft.rfft(x)) ** 2
    freqs = np.fft.rfftfreq(x.size, 1 / clip.sample_rate)
    return float(power[(freqs >= BAND[0]) & (freqs < BAND[1])].sum())


def minus_band_energy(clips: list[AudioClip]) -> list[float]:
    return [-band_energy(c) for c in clips]


class Recorder:
    """A scorer that keeps every clip and batch size it is asked about."""

    def __init__(self, score=minus_band_energy) -> None:
        self.clips: list[AudioClip] = []
        self.batches: list[int] = []
        self.score = score

    def __call__(self, clips: list[AudioClip]) -> list[float]:
        self.clips.extend(clips)
        self.batches.append(len(clips))
        return self.score(clips)


def test_every_queried_candidate_meets_the_budget(voiced_clip):
    rec = Recorder()
    result = attack(voiced_clip, rec, Budget(snr_db=30, max_gain_db=12), SearchSettings(queries=60, seed=2))
    x = voiced_clip.as_float32().astype(np.float64)
    assert rec.clips[0] is voiced_clip  # query 0 is the original, as sent
    for clip in rec.clips[1:]:
        d = clip.samples.astype(np.float64) - x
        assert 10 * np.log10(np.sum(x**2) / np.sum(d**2)) >= 30 - 1e-6
    assert result.snr_db >= 30 - 1e-6
    assert [r.index for r in result.log] == list(range(60))
    assert [r.score for r in result.log] == minus_band_energy(rec.clips)


@pytest.mark.parametrize(("queries", "batch"), [(2, 4), (7, 4), (10, 3), (33, 8), (5, 1)])
def test_the_query_budget_is_never_exceeded(voiced_clip, queries, batch):
    rec = Recorder()
    result = attack(voiced_clip, rec, Budget(), SearchSettings(queries=queries, batch=batch, seed=0))
    assert len(rec.clips) == sum(rec.batches) == result.queries == len(result.log) == queries
    assert max(rec.batches) <= batch


def test_same_seed_and_answers_give_the_same_log_and_bytes(voiced_clip):
    runs = [attack(voiced_clip, minus_band_energy, Budget(), SearchSettings(queries=40, seed=s)) for s in (5, 5, 6)]
    a, b, c = runs
    assert a.log_jsonl() == b.log_jsonl()
    assert clip_to_wav_bytes(a.clip) == clip_to_wav_bytes(b.clip)
    assert a.log_jsonl() != c.log_jsonl()  # the seed matters
    first = a.log_jsonl().splitlines()
    assert len(first) == 40 and '"index": 0' in first[0] and '"snr_db": null' in first[0]


def test_toy_scorer_with_a_known_optimum_is_mostly_optimised(voiced_clip):
    """score = -(energy in 2-3 kHz). Gains only, +-6 dB, a budget loose enough not to bind (a flat -6 dB
    is an SNR of 6.02 dB): the optimum is every band at -6 dB, the band's energy down 6 dB (x 0.251)."""
    original = band_energy(voiced_clip)
    optimum = -original * 10 ** (-6 / 10)
    settings = SearchSettings(queries=200, seed=1, noise=False)
    result = attack(voiced_clip, minus_band_energy, Budget(snr_db=3, max_gain_db=6), settings)
    assert result.original_score == pytest.approx(-original)
    share = (result.score - result.original_score) / (optimum - result.original_score)
    assert 0.9 <= share <= 1.001, f"reached {share:.1%} of the possible improvement"
    assert result.log[result.best_index].score == result.score


def test_the_search_improves_under_a_binding_budget(voiced_clip):
    """At 30 dB the budget binds (the best is on its boundary) and the band still loses energy."""
    result = attack(voiced_clip, minus_band_energy, Budget(snr_db=30), SearchSettings(queries=100, seed=1))
    assert result.score > result.original_score
    assert result.log[result.best_index].scale < 1 and result.snr_db == pytest.approx(30, abs=1e-3)
    assert -result.score < 0.95 * -result.original_score


@pytest.mark.parametrize(
    ("settings", "name"),
    [
        (lambda: SearchSettings(queries=0), "queries"),
        (lambda: SearchSettings(queries=1), "queries"),
        (lambda: SearchSettings(batch=0), "batch"),
    ],
)
def test_bad_settings_name_themselves(settings, name):
    with pytest.raises(AttackArgumentError, match=f"^{name}: "):
        settings()


def test_a_too_short_clip_is_refused(voiced_clip):
    short = AudioClip(voiced_clip.samples[:800], 16000)
    with pytest.raises(AttackArgumentError, match=r"^clip: 800 samples \(0.050 s"):
        attack(short, minus_band_energy, Budget(), SearchSettings())


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (lambda clips: [0.0] * (len(clips) + 1), "scorer answered 2 scores for 1 clips"),
        (lambda clips: [float("nan")] * len(clips), "query 0: score nan is not finite"),
    ],
)
def test_unusable_answers_are_named(voiced_clip, answer, message):
    with pytest.raises(AttackQueryError, match=message):
        attack(voiced_clip, answer, Budget(), SearchSettings(queries=10))

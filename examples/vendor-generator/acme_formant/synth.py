"""Acme Formant's engine: text to speech-like audio by source-filter (formant) synthesis, numpy only.

Text becomes letter segments (vowels, sonorants, fricatives, stops, pauses), each with three formant
targets, a duration and the amplitudes of two sources: a glottal pulse train (pitch declining over
the utterance, with a seeded slow drift) and seeded white noise. The voiced source (plus aspiration)
runs through a cascade of three second-order resonators whose frequencies glide from one segment's
targets to the next (Klatt's cascade synthesiser, much simplified); fricative noise through one more
resonator at the consonant's own centre frequency. Nothing here knows about VoxArena: this is the
vendor's engine, which ``service.py`` wraps.

Deterministic: the same text, voice, rate and seed give the same samples.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RATE = 16000
NEUTRAL = (500.0, 1500.0, 2500.0)  # formants of a schwa: where consonants without targets of their own sit
BANDWIDTHS = (80.0, 100.0, 150.0)  # Hz, F1..F3
FRICATIVE_BANDWIDTH = 1200.0

VOWELS = {
    "a": (730.0, 1090.0, 2440.0),
    "e": (530.0, 1840.0, 2480.0),
    "i": (270.0, 2290.0, 3010.0),
    "o": (570.0, 840.0, 2410.0),
    "u": (300.0, 870.0, 2240.0),
    "y": (270.0, 2290.0, 3010.0),
}
SONORANTS = {
    "l": (360.0, 1300.0, 2700.0),
    "r": (420.0, 1300.0, 1600.0),
    "w": (300.0, 610.0, 2200.0),
    "j": (280.0, 2100.0, 2900.0),
    "m": (280.0, 900.0, 2200.0),
    "n": (280.0, 1700.0, 2600.0),
}
# letter -> (noise centre in Hz, 0 = aspiration through the formants; voiced?)
FRICATIVES = {"s": (5000.0, False), "z": (5000.0, True), "f": (3500.0, False), "v": (3500.0, True), "h": (0.0, False)}
# letter -> (burst centre in Hz, voiced?)
STOPS = {
    "p": (1500.0, False),
    "b": (1500.0, True),
    "t": (4000.0, False),
    "d": (4000.0, True),
    "k": (2500.0, False),
    "g": (2500.0, True),
}
SPELLED = {"c": "k", "q": "k", "x": "ks"}  # letters said as others
PAUSE_MARKS = set(".,;:!?")


@dataclass(frozen=True)
class Segment:
    formants: tuple[float, float, float]  # F1..F3 targets, Hz
    seconds: float
    voicing: float = 0.0  # amplitude of the glottal source, 0..1
    noise: float = 0.0  # amplitude of the noise source, 0..1
    noise_centre: float = 0.0  # Hz; 0: the noise is aspiration and goes through the formant cascade


@dataclass(frozen=True)
class VoiceShape:
    f0: float  # Hz at the start of an utterance (it declines to 80 % by the end)
    formant_scale: float  # a shorter vocal tract raises every formant


def segments(text: str) -> list[Segment]:
    """The segment sequence of a text (at speaking rate 1): one or two per letter, pauses for spaces
    and punctuation, anything else (digits, symbols) a short pause."""
    out = [Segment(NEUTRAL, 0.05)]
    for ch in "".join(SPELLED.get(c, c) for c in text.lower()):
        if ch in VOWELS:
            out.append(Segment(VOWELS[ch], 0.11, voicing=1.0))
        elif ch in SONORANTS:
            out.append(Segment(SONORANTS[ch], 0.07, voicing=0.6))
        elif ch in FRICATIVES:
            centre, voiced = FRICATIVES[ch]
            out.append(Segment(NEUTRAL, 0.09, voicing=0.35 if voiced else 0.0, noise=0.5, noise_centre=centre))
        elif ch in STOPS:
            centre, voiced = STOPS[ch]
            out.append(Segment(NEUTRAL, 0.05, voicing=0.15 if voiced else 0.0))  # closure
            out.append(Segment(NEUTRAL, 0.02, noise=0.8, noise_centre=centre))  # burst
        elif ch in PAUSE_MARKS:
            out.append(Segment(NEUTRAL, 0.18))
        else:
            out.append(Segment(NEUTRAL, 0.05))
    out.append(Segment(NEUTRAL, 0.05))
    return out


def resonate(x: np.ndarray, freq: np.ndarray, bandwidth: float | np.ndarray) -> np.ndarray:
    """A second-order resonator with per-sample centre frequency (Klatt 1980: unity gain at DC)."""
    c = -np.exp(-2 * np.pi * np.asarray(bandwidth) / RATE) * np.ones_like(freq)
    b = 2 * np.exp(-np.pi * np.asarray(bandwidth) / RATE) * np.cos(2 * np.pi * freq / RATE)
    a = 1 - b - c
    y = [0.0] * len(x)
    y1 = y2 = 0.0
    for i, (xi, ai, bi, ci) in enumerate(zip(x.tolist(), a.tolist(), b.tolist(), c.tolist())):
        y1, y2 = ai * xi + bi * y1 + ci * y2, y1
        y[i] = y1
    return np.asarray(y)


def smooth(track: np.ndarray, seconds: float = 0.008) -> np.ndarray:
    """Moving Hann-window average: amplitude steps become ramps, so segments join without clicks."""
    window = np.hanning(max(3, int(seconds * RATE)))
    return np.convolve(track, window / window.sum(), mode="same")


def synthesize(text: str, voice: VoiceShape, rate: float = 1.0, seed: int = 0) -> np.ndarray:
    """float32 samples at ``RATE``, peak 0.5 (silence stays silence)."""
    rng = np.random.default_rng(seed)
    segs = segments(text)
    lengths = np.array([max(1, round(s.seconds / rate * RATE)) for s in segs])
    n = int(lengths.sum())
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    centres = starts + lengths / 2
    t = np.arange(n)
    # Formants glide between segment centres; amplitudes step per segment, then ramp.
    formants = [np.interp(t, centres, [s.formants[k] * voice.formant_scale for s in segs]) for k in range(len(NEUTRAL))]
    per_sample = np.repeat(np.arange(len(segs)), lengths)
    voicing = smooth(np.array([s.voicing for s in segs])[per_sample])
    aspiration = smooth(np.array([s.noise if s.noise_centre == 0 else 0.0 for s in segs])[per_sample])
    frication = smooth(np.array([s.noise if s.noise_centre > 0 else 0.0 for s in segs])[per_sample])
    centre = np.array([s.noise_centre or NEUTRAL[2] for s in segs])[per_sample].astype(float)
    # Pitch: declination to 80 %, a slow seeded drift of a few per cent, a rise at the end of a question.
    drift = np.interp(t, np.linspace(0, n, max(2, n // (RATE // 5))), rng.normal(0, 0.03, max(2, n // (RATE // 5))))
    f0 = voice.f0 * (1 - 0.2 * t / n) * (1 + drift)
    if text.rstrip().endswith("?"):
        f0 *= 1 + 0.3 * np.clip((t - (n - 0.3 * RATE)) / (0.3 * RATE), 0, 1)
    # Glottal source: a raised-cosine flow pulse open 60 % of each period, differentiated (lip radiation).
    phase = np.cumsum(f0 / RATE) % 1.0
    flow = np.where(phase < 0.6, 0.5 * (1 - np.cos(2 * np.pi * phase / 0.6)), 0.0)
    glottal = np.diff(flow, prepend=0.0)
    glottal /= np.max(np.abs(glottal)) or 1.0
    noise = rng.standard_normal(n)
    x = voicing * glottal + 0.3 * aspiration * noise
    for k, bandwidth in enumerate(BANDWIDTHS):
        x = resonate(x, formants[k], bandwidth)
    # Fricatives and bursts: differenced (high-tilted) noise through a resonator at the consonant's centre,
    # at a fixed level under the voiced part's peak.
    hiss = resonate(np.diff(noise, prepend=0.0), centre, FRICATIVE_BANDWIDTH)
    x = x / (np.max(np.abs(x)) or 1.0) + 0.12 * frication * hiss / (np.std(hiss) or 1.0)
    peak = float(np.max(np.abs(x)))
    samples: np.ndarray = (0.5 * x / peak if peak > 0 else x).astype(np.float32)
    return samples

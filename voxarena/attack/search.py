"""The search: find the candidate within the budget that a detector scores most bona fide, using only its
scores, under a query budget.

Method: random search with an adaptive (shrinking) step, in the batched (1 + lambda) evolution-strategy
form. Each round draws ``batch`` Gaussian steps around the best point so far (in the unit box of
:mod:`voxarena.attack.perturbation`), queries them in one batch, keeps the best if it beats the
incumbent and then widens the step (x ``GROW``); a round without improvement narrows it (x ``SHRINK``),
Rechenberg's success rule. Square Attack (Andriushchenko et al., ECCV 2020) shows that random search with
a shrinking step is a strong score-only attack; we apply it to a low-dimensional, perceptually bounded
parameterisation (16 numbers by default) rather than to samples.

Why random search and not SPSA: it compares scores only, so it behaves the same whatever a detector's
score scale (raw logits, LLRs, log energy ratios: any increasing transform of the scores gives the same
queries), while SPSA's step is a gradient estimate times a learning rate that would have to be tuned per
detector; its best-so-far never gets worse; and each round is one ScoreBatch call. (The reference papers
in /work/shared/papers cover benchmarking, not attacks; the method is based on the works named here.)

Deterministic: the random steps come from ``seed`` alone, so the same clip, seed and detector answers
give the same query log and the same attacked clip, byte for byte. Every query is logged, the first
being the original clip (its score is the baseline); the query budget is never exceeded.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np

from voxarena.codec import AudioClip

from .perturbation import AttackArgumentError, Budget, Perturbation, snr_db

Score = Callable[[list[AudioClip]], Sequence[float]]

START_STEP = 0.5  # in unit-box units: half the range of a gain, a quarter of the noise range
MIN_STEP, MAX_STEP = 0.02, 1.0
GROW, SHRINK = 1.5, 0.75


class AttackQueryError(RuntimeError):
    """The scorer's answer to a query batch is unusable (wrong count, not a finite number)."""


@dataclass(frozen=True)
class QueryRecord:
    """One query: ``index`` (0 = the original clip), search ``round``, parameters in dB (empty for the
    original), the budget's ``scale`` of the perturbation, its SNR in dB and the detector's score."""

    index: int
    round: int
    gains_db: tuple[float, ...]
    noise_db: tuple[float, ...]
    scale: float
    snr_db: float
    score: float

    def to_json(self) -> str:
        row = asdict(self)
        row["snr_db"] = None if math.isinf(self.snr_db) else self.snr_db  # JSON has no infinity
        return json.dumps(row, sort_keys=True)


@dataclass(frozen=True)
class AttackResult:
    clip: AudioClip  # the best candidate (the original if nothing beat it)
    score: float
    original_score: float
    queries: int
    snr_db: float  # of the best candidate against the original (inf: the original itself)
    best_index: int  # its query index
    log: tuple[QueryRecord, ...]

    @property
    def improvement(self) -> float:
        return self.score - self.original_score

    def log_jsonl(self) -> str:
        return "".join(r.to_json() + "\n" for r in self.log)


@dataclass(frozen=True)
class SearchSettings:
    queries: int = 100  # query budget, the original clip's query included
    batch: int = 4  # candidates per round (one ScoreBatch call)
    seed: int = 0
    n_bands: int = 8
    noise: bool = True

    def __post_init__(self) -> None:
        if self.queries < 2:
            raise AttackArgumentError(f"queries: at least 2 (the original and one candidate), got {self.queries}")
        if self.batch < 1:
            raise AttackArgumentError(f"batch: at least 1, got {self.batch}")


def attack(clip: AudioClip, score: Score, budget: Budget, settings: SearchSettings) -> AttackResult:
    """Search for the candidate of ``clip`` within ``budget`` that ``score`` rates highest.

    ``score(clips)`` returns one score per clip, higher = more bona fide; each call costs ``len(clips)``
    queries.
    """
    return RandomSearch(clip, score, budget, settings).run()


class RandomSearch:
    """One attack's state: the incumbent, the step and the log."""

    def __init__(self, clip: AudioClip, score: Score, budget: Budget, settings: SearchSettings) -> None:
        self.perturbation = Perturbation(clip, budget, settings.n_bands, settings.noise, seed=settings.seed)
        self.score, self.settings = score, settings
        self.rng = np.random.default_rng(settings.seed)
        self.log: list[QueryRecord] = []

    def run(self) -> AttackResult:
        original = self.perturbation.clip
        (original_score,) = self._query([original], 0)
        self.log.append(QueryRecord(0, 0, (), (), 0.0, math.inf, original_score))
        best_z, best_clip, best_score, best_index = self.perturbation.start(), original, original_score, 0
        step, round_ = START_STEP, 0
        while len(self.log) < self.settings.queries:
            round_ += 1
            n = min(self.settings.batch, self.settings.queries - len(self.log))
            zs = [np.clip(best_z + step * self.rng.standard_normal(best_z.size), -1, 1) for _ in range(n)]
            candidates = [self.perturbation.apply(z) for z in zs]
            scores = self._query([c.clip for c in candidates], len(self.log))
            for c, s in zip(candidates, scores):
                self.log.append(QueryRecord(len(self.log), round_, c.gains_db, c.noise_db, c.scale, c.snr_db, s))
            k = int(np.argmax(scores))
            if scores[k] > best_score:
                best_z, best_clip, best_score = zs[k], candidates[k].clip, scores[k]
                best_index = len(self.log) - n + k
                step = min(step * GROW, MAX_STEP)
            else:
                step = max(step * SHRINK, MIN_STEP)
        return AttackResult(
            clip=best_clip,
            score=best_score,
            original_score=original_score,
            queries=len(self.log),
            snr_db=snr_db(self.perturbation.clip.as_float32(), best_clip.as_float32()),
            best_index=best_index,
            log=tuple(self.log),
        )

    def _query(self, clips: list[AudioClip], first: int) -> list[float]:
        answers = [float(s) for s in self.score(clips)]
        if len(answers) != len(clips):
            raise AttackQueryError(
                f"queries {first}..{first + len(clips) - 1}: "
                f"scorer answered {len(answers)} scores for {len(clips)} clips"
            )
        for i, s in enumerate(answers):
            if not math.isfinite(s):
                raise AttackQueryError(f"query {first + i}: score {s} is not finite")
        return answers

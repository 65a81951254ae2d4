"""A clip as a condition delivers it to the detectors: channel steps, transform services and attacks on
the target detector, computed once per (condition, clip), stored as audio, recorded in
``degradations.jsonl`` and reused by every detector; a failure is a row with its kind, like any stage's."""

from __future__ import annotations

import hashlib
import threading
from typing import Any

from voxarena.attack.search import AttackQueryError
from voxarena.codec import AudioClip, clip_to_wav_bytes, encode_audio
from voxarena.dsp.channel import ChannelError
from voxarena.orchestrator.errors import CallFailed
from voxarena.orchestrator.fleet.fleet import ServiceFleet
from voxarena.orchestrator.run.channel import apply_condition, condition_seed
from voxarena.orchestrator.run.config import ChannelStep
from voxarena.orchestrator.run.validation import ResponseInvalid, validate_resynthesis, validate_transform
from voxarena.orchestrator.store.clips import Clip, read_clip
from voxarena.orchestrator.store.failures import Failure, failed_row, failure_kind, failure_of_status, settled
from voxarena.orchestrator.store.records import OK, DegradationRecord
from voxarena.orchestrator.store.run_store import CLEAN, RunStore
from voxarena.v1 import generator_pb2, transform_pb2


class ConditionFailed(Exception):
    """A clip that cannot be delivered under a condition: the reason, and the failure kind and code that its
    degradation row records (a transform service that was away is transient: a rerun tries again)."""

    def __init__(self, reason: str, failure: Failure, code: str) -> None:
        super().__init__(reason)
        self.failure, self.code = failure, code


class Degrade:
    """A clip as a channel condition delivers it: computed once, stored, recorded, reused. Transform steps
    call the fleet's transform services."""

    def __init__(
        self,
        store: RunStore,
        conditions: dict[str, list[ChannelStep]],
        run_seed: int,
        retry_failed: bool,
        fleet: ServiceFleet | None = None,
    ) -> None:
        self.store, self.conditions, self.run_seed, self.retry_failed = store, conditions, run_seed, retry_failed
        self.fleet = fleet
        self._locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    def __call__(self, clip: Clip, condition: str) -> AudioClip:
        if condition == CLEAN:
            return read_clip(clip.path, clip.sha256, clip.id)
        key = f"{condition}|{clip.id}"
        with self._locks_guard:
            lock = self._locks.setdefault(key, threading.Lock())
        with lock:
            # Every detector asks for the same degradation: the first computes it, the rest reuse the
            # row, a failed one included (until --retry-failed; a transient failure is always retried).
            row = self.store.degradations.get(key)
            if row is not None and row.source_sha256 == clip.sha256 and settled(row, self.retry_failed):
                if not row.ok:
                    raise ConditionFailed(str(row.reason), Failure(failure_kind(row)), str(row.code))
                return read_clip(self.store.dir / str(row.audio), str(row.audio_sha256), key)
            return self._compute(clip, condition, key)

    def _transformer(self, key: str):
        """The condition's transform steps, through the fleet: request id ``<transform>|<condition>|<clip>``."""

        def transform(
            name: str, audio: AudioClip, parameters: dict[str, str], seed: int
        ) -> tuple[AudioClip, list[str]]:
            if self.fleet is None:
                raise ChannelError(f"transform {name!r}: this run reaches no transform services")
            req = transform_pb2.TransformRequest(
                request_id=f"{name}|{key}", seed=seed, audio=encode_audio(audio), parameters=parameters
            )
            resp, _ = self.fleet[name].call("Transform", req)
            return validate_transform(req.request_id, req, resp), list(resp.steps)

        return transform

    def _resynthesizer(self, key: str):
        """The condition's resynthesize steps: the generator's RECONSTRUCT of the clip, request id
        ``<generator>|<condition>|<clip>``."""

        def resynthesize(name: str, audio: AudioClip, seed: int) -> tuple[AudioClip, str]:
            if self.fleet is None:
                raise ChannelError(f"resynthesize {name!r}: this run reaches no generators here")
            req = generator_pb2.SynthesizeRequest(
                request_id=f"{name}|{key}", seed=seed, task=generator_pb2.RECONSTRUCT, source_audio=encode_audio(audio)
            )
            resp, _ = self.fleet[name].call("Synthesize", req)
            return validate_resynthesis(req.request_id, req, resp), resp.voice

        return resynthesize

    def _attacker(self, key: str, clip: Clip):
        """The condition's attack step: random search against the target detector through the fleet (its
        deadline, retries and outage wait), on spoofed clips only; every query is logged under attacks/."""

        def run(audio: AudioClip, step: Any, seed: int) -> tuple[AudioClip, dict[str, Any]]:
            from voxarena.attack import Budget, SearchSettings, attack
            from voxarena.attack.client import DetectorScore

            if clip.kind != "spoof":
                return audio, {"target": step.target, "skipped": "bona fide: an attacker changes only fakes"}
            if self.fleet is None:
                raise ChannelError(f"attack on {step.target!r}: this run reaches no detectors here")
            target = self.fleet[step.target]
            result = attack(
                audio,
                DetectorScore(target, step.target, target.cfg.parameters),
                Budget(step.snr_db, step.max_gain_db),
                SearchSettings(step.queries, step.batch, seed, step.bands, step.noise),
            )
            log = self.store.dir / "attacks" / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.jsonl"
            log.parent.mkdir(exist_ok=True)
            log.write_text(result.log_jsonl())
            return result.clip, {
                "target": step.target,
                "generator": clip.generator,
                "queries": result.queries,
                "original_score": result.original_score,
                "score": result.score,
                "snr_db": None if result.snr_db == float("inf") else round(result.snr_db, 3),
                "best_query": result.best_index,
                "log": str(log.relative_to(self.store.dir)),
            }

        return run

    def _compute(self, clip: Clip, condition: str, key: str) -> AudioClip:
        # status is set once the condition is applied (or failed)
        base = DegradationRecord(id=key, status="pending", condition=condition, clip=clip.id, source_sha256=clip.sha256)
        try:
            out, done = apply_condition(
                read_clip(clip.path, clip.sha256, clip.id),
                self.conditions[condition],
                condition_seed(self.run_seed, condition, clip.id),
                self._transformer(key),
                self._attacker(key, clip),
                self._resynthesizer(key),
            )
        except CallFailed as e:  # a transform service's answer
            row = failed_row(base, failure_of_status(e.code), f"{clip.id}: condition {condition!r}: {e}", e.code.name)
        except (ResponseInvalid, AttackQueryError) as e:  # a transform's or an attacked detector's answer
            row = failed_row(base, Failure.INVALID_RESPONSE, f"{clip.id}: condition {condition!r}: {e}")
        except (ValueError, RuntimeError) as e:  # ChannelError is a ValueError
            # RuntimeError: libsndfile refusing an encoding (soundfile raises LibsndfileError).
            row = failed_row(base, Failure.INPUT, f"{clip.id}: condition {condition!r}: {e}")
        else:
            rel, sha = self.store.put_audio(clip_to_wav_bytes(out))
            base.status, base.audio, base.audio_sha256 = OK, rel, sha
            base.sample_rate, base.duration = out.sample_rate, round(out.duration, 6)
            base.steps, base.clipped_samples = done["steps"], done["clipped_samples"]
            self.store.degradations.append(base)
            return out
        self.store.degradations.append(row)
        raise ConditionFailed(str(row.reason), Failure(row.failure), str(row.code))

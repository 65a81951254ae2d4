"""``orchestrator conformance ADDRESS``: check any running service against the VoxArena contract.

For a vendor's black box as much as for our own services: it talks gRPC only. The role (generator
or detector) comes from server reflection, or from GetInfo when reflection is off. Every check
yields PASS, FAIL (with the reason) or SKIP (with why it does not apply); any FAIL makes the exit
code 1.

Checked: grpc.health.v1 says SERVING; reflection lists the service; GetInfo fills name, version,
licence, family, native rate, timing scope (generators: tasks and voices); a valid request echoes
its request id and seed, carries timing (wall, start <= end, scope) and well-formed audio or a
finite score; the determinism claim (two identical requests, identical bytes or score); error
paths: empty request id, empty text, an unsupported task, bad audio (empty, NaN) -> INVALID_ARGUMENT
/ UNIMPLEMENTED, an oversize message -> RESOURCE_EXHAUSTED; detectors: ScoreBatch answers every item
in order and reports a bad item without failing the others.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import grpc
import numpy as np
from grpc_health.v1 import health_pb2, health_pb2_grpc

from voxarena.transport import PLAINTEXT, ClientSecurity

from voxarena.codec import AudioClip, AudioFormatError, decode_audio, encode_audio
from voxarena.v1 import (common_pb2, detector_pb2, detector_pb2_grpc, generator_pb2, generator_pb2_grpc, scorer_pb2,
                         scorer_pb2_grpc)

GENERATOR_SERVICE = "voxarena.v1.GeneratorService"
DETECTOR_SERVICE = "voxarena.v1.DetectorService"
SCORER_SERVICE = "voxarena.v1.ScorerService"
SEED = 424242
OVERSIZE_BYTES = 80 * 1024 * 1024   # above the SDK's 64 MiB default; a service may allow more
TEXT = "The quick brown fox jumps over the lazy dog."


@dataclass
class Check:
    name: str
    status: str          # PASS | FAIL | SKIP
    detail: str = ""


def _probe_audio(seconds: float = 2.0, rate: int = 16000) -> AudioClip:
    """A deterministic speech-like probe: a 150 Hz harmonic tone with syllable-rate amplitude modulation."""
    t = np.arange(int(seconds * rate)) / rate
    tone = sum(np.sin(2 * np.pi * 150 * k * t) / k for k in range(1, 12))
    envelope = 0.5 * (1 - np.cos(2 * np.pi * 4 * t))
    rng = np.random.default_rng(0)
    x = 0.2 * tone * envelope / 3 + 0.005 * rng.standard_normal(t.size)
    return AudioClip(x.astype(np.float32), rate)


def _code(e: grpc.RpcError) -> grpc.StatusCode:
    return e.code() if hasattr(e, "code") else grpc.StatusCode.UNKNOWN


class Conformance:
    def __init__(self, address: str, timeout: float = 120.0, probe: AudioClip | None = None,
                 security: ClientSecurity = PLAINTEXT) -> None:
        self.address = address
        self.timeout = timeout
        self.probe = probe or _probe_audio()
        limit = 2 * OVERSIZE_BYTES
        self.channel = security.channel(address, [("grpc.max_send_message_length", limit),
                                                  ("grpc.max_receive_message_length", limit)])
        self.checks: list[Check] = []

    # -- bookkeeping --------------------------------------------------------------------------
    def _add(self, name: str, ok: bool, detail: str = "") -> bool:
        self.checks.append(Check(name, "PASS" if ok else "FAIL", detail))
        return ok

    def _skip(self, name: str, why: str) -> None:
        self.checks.append(Check(name, "SKIP", why))

    def _expect_error(self, name: str, call: Callable[[], object], codes: tuple[grpc.StatusCode, ...]) -> None:
        try:
            call()
        except grpc.RpcError as e:
            code = _code(e)
            detail = f"{code.name}: {e.details() if hasattr(e, 'details') else ''}"
            self._add(name, code in codes, detail if code in codes else f"expected {'/'.join(c.name for c in codes)}, got {detail}")
            return
        self._add(name, False, f"expected {'/'.join(c.name for c in codes)}, the call succeeded")

    # -- common checks ------------------------------------------------------------------------
    def _health(self) -> bool:
        try:
            grpc.channel_ready_future(self.channel).result(timeout=min(self.timeout, 30))
        except grpc.FutureTimeoutError:
            return self._add("reachable", False, f"no gRPC server at {self.address} within 30 s")
        self._add("reachable", True, self.address)
        try:
            resp = health_pb2_grpc.HealthStub(self.channel).Check(health_pb2.HealthCheckRequest(), timeout=10)
            return self._add("health SERVING", resp.status == health_pb2.HealthCheckResponse.SERVING,
                             health_pb2.HealthCheckResponse.ServingStatus.Name(resp.status))
        except grpc.RpcError as e:
            return self._add("health SERVING", False, f"grpc.health.v1 Check failed: {_code(e).name}")

    def _role_from_reflection(self) -> str | None:
        try:
            from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
        except ImportError:  # pragma: no cover - grpcio-reflection is a core dependency
            return None
        try:
            stub = reflection_pb2_grpc.ServerReflectionStub(self.channel)
            responses = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]),
                                                  timeout=10)
            names = {s.name for r in responses for s in r.list_services_response.service}
        except grpc.RpcError as e:
            self._add("reflection", False, f"server reflection unavailable: {_code(e).name}")
            return None
        roles = [r for r, svc in (("generator", GENERATOR_SERVICE), ("detector", DETECTOR_SERVICE),
                                  ("scorer", SCORER_SERVICE)) if svc in names]
        self._add("reflection", bool(roles), ", ".join(sorted(names)) or "no services listed")
        return roles[0] if roles else None

    def _model_info(self, info: common_pb2.ModelInfo, family_ok: bool, needs_rate: bool = True) -> None:
        missing = [f for f in ("name", "version", "licence", "timing_scope") if not getattr(info, f)]
        if needs_rate and info.native_sample_rate <= 0:
            missing.append("native_sample_rate")
        if not family_ok:
            missing.append("family")
        sha = info.weights_sha256
        if sha and (len(sha) != 64 or any(c not in "0123456789abcdef" for c in sha)):
            missing.append(f"weights_sha256 {sha!r} is not a lowercase hex sha256")
        self._add("GetInfo fields", not missing, "missing or invalid: " + ", ".join(missing) if missing
                  else f"{info.name} {info.version}, {info.native_sample_rate} Hz, deterministic={info.deterministic}")

    def _timing(self, name: str, timing: common_pb2.Timing) -> None:
        problems = []
        if not timing.wall_seconds > 0:
            problems.append(f"wall_seconds {timing.wall_seconds}")
        if not timing.HasField("start") or not timing.HasField("end"):
            problems.append("start/end missing")
        elif timing.end.ToNanoseconds() < timing.start.ToNanoseconds():
            problems.append("end before start")
        if not timing.scope:
            problems.append("scope empty")
        self._add(name, not problems, ", ".join(problems) or f"{timing.wall_seconds:.3f} s, scope: {timing.scope}")

    # -- generators ---------------------------------------------------------------------------
    def _generator(self) -> None:
        stub = generator_pb2_grpc.GeneratorServiceStub(self.channel)
        info = self._call_ok("GetInfo", lambda: stub.GetInfo(common_pb2.GetInfoRequest(), timeout=self.timeout),
                             record=False)
        if info is None:
            return
        self._model_info(info.model, info.family != generator_pb2.GENERATOR_FAMILY_UNSPECIFIED)
        tasks = [t for t in info.tasks if t != generator_pb2.TASK_UNSPECIFIED]
        self._add("declares tasks", bool(tasks), ", ".join(generator_pb2.Task.Name(t) for t in tasks) or "no tasks")
        if not tasks:
            return
        task = tasks[0]
        probe = encode_audio(self.probe)

        def request(**over) -> generator_pb2.SynthesizeRequest:
            t = over.pop("task", task)
            base = dict(request_id="conformance-1", seed=SEED, task=t)
            if t in (generator_pb2.TTS, generator_pb2.CLONE):
                base["text"] = TEXT
            if t in (generator_pb2.CLONE, generator_pb2.CONVERT):
                base["reference_audio"] = probe
            if t in (generator_pb2.RECONSTRUCT, generator_pb2.CONVERT):
                base["source_audio"] = probe
            base.update({k: v for k, v in over.items() if v is not None})
            return generator_pb2.SynthesizeRequest(**base)

        first = self._call_ok("Synthesize", lambda: stub.Synthesize(request(), timeout=self.timeout))
        if first is not None:
            self._add("echoes request_id", first.request_id == "conformance-1", f"got {first.request_id!r}")
            self._add("echoes seed", first.seed == SEED, f"got {first.seed}, sent {SEED}")
            self._timing("timing fields", first.timing)
            try:
                clip = decode_audio(first.audio, "response audio")
                self._add("audio well-formed", clip.duration > 0, f"{clip.duration:.2f} s at {clip.sample_rate} Hz mono")
            except AudioFormatError as e:
                self._add("audio well-formed", False, str(e))
            if info.model.deterministic:
                second = self._call_ok("Synthesize again", lambda: stub.Synthesize(request(request_id="conformance-2"),
                                                                                   timeout=self.timeout), record=False)
                same = second is not None and second.audio.data == first.audio.data
                self._add("deterministic as declared", same,
                          "identical bytes for the same request and seed" if same else "two identical requests gave different audio")
            else:
                self._skip("deterministic as declared", "the service declares itself non-deterministic")
        invalid = (grpc.StatusCode.INVALID_ARGUMENT,)
        self._expect_error("empty request_id rejected", lambda: stub.Synthesize(request(request_id=""), timeout=self.timeout), invalid)
        text_task = next((t for t in tasks if t in (generator_pb2.TTS, generator_pb2.CLONE)), None)
        if text_task is not None:
            self._expect_error("empty text rejected", lambda: stub.Synthesize(
                request(task=text_task, text=""), timeout=self.timeout), invalid)
        else:
            self._skip("empty text rejected", "no text task")
        unsupported = [t for t in (generator_pb2.TTS, generator_pb2.CLONE, generator_pb2.RECONSTRUCT, generator_pb2.CONVERT)
                       if t not in tasks]
        if unsupported:
            self._expect_error("unsupported task rejected", lambda: stub.Synthesize(
                request(task=unsupported[0], text=TEXT, source_audio=probe, reference_audio=probe), timeout=self.timeout),
                (grpc.StatusCode.UNIMPLEMENTED,))
        else:
            self._skip("unsupported task rejected", "the service supports every task")
        audio_task = next((t for t in tasks if t != generator_pb2.TTS), None)
        if audio_task is not None:
            field = "reference_audio" if audio_task == generator_pb2.CLONE else "source_audio"
            for label, audio in self._bad_audio():
                self._expect_error(f"bad audio rejected ({label})", lambda a=audio: stub.Synthesize(
                    request(task=audio_task, **{field: a}), timeout=self.timeout), invalid)
        else:
            self._skip("bad audio rejected", "the service's tasks take no audio")
        self._expect_error("oversize message rejected", lambda: stub.Synthesize(
            request(text="a" * OVERSIZE_BYTES), timeout=self.timeout), (grpc.StatusCode.RESOURCE_EXHAUSTED,))

    # -- detectors ----------------------------------------------------------------------------
    def _bad_audio(self) -> list[tuple[str, common_pb2.Audio]]:
        empty = common_pb2.Audio(sample_rate=16000, channels=1, encoding=common_pb2.PCM_S16LE)
        nan = common_pb2.Audio(sample_rate=16000, channels=1, encoding=common_pb2.PCM_F32LE,
                               data=np.full(1600, np.nan, "<f4").tobytes())
        return [("empty", empty), ("NaN", nan)]

    def _detector(self) -> None:
        stub = detector_pb2_grpc.DetectorServiceStub(self.channel)
        info = self._call_ok("GetInfo", lambda: stub.GetInfo(common_pb2.GetInfoRequest(), timeout=self.timeout),
                             record=False)
        if info is None:
            return
        self._model_info(info.model, info.family != detector_pb2.DETECTOR_FAMILY_UNSPECIFIED)
        audio = encode_audio(self.probe)
        first = self._call_ok("Score", lambda: stub.Score(detector_pb2.ScoreRequest(request_id="conformance-1", audio=audio),
                                                          timeout=self.timeout))
        if first is not None:
            self._add("echoes request_id", first.request_id == "conformance-1", f"got {first.request_id!r}")
            self._add("finite score", math.isfinite(first.score), f"score {first.score}")
            self._add("is_llr matches GetInfo.calibrated", first.is_llr == info.calibrated,
                      f"is_llr={first.is_llr}, calibrated={info.calibrated}")
            self._timing("timing fields", first.timing)
            if info.model.deterministic:
                second = self._call_ok("Score again", lambda: stub.Score(
                    detector_pb2.ScoreRequest(request_id="conformance-2", audio=audio), timeout=self.timeout), record=False)
                same = second is not None and second.score == first.score
                self._add("deterministic as declared", same, "identical scores" if same else
                          f"two identical requests scored {first.score} and {second.score if second else 'an error'}")
            else:
                self._skip("deterministic as declared", "the service declares itself non-deterministic")
        invalid = (grpc.StatusCode.INVALID_ARGUMENT,)
        self._expect_error("empty request_id rejected", lambda: stub.Score(
            detector_pb2.ScoreRequest(request_id="", audio=audio), timeout=self.timeout), invalid)
        for label, bad in self._bad_audio():
            self._expect_error(f"bad audio rejected ({label})", lambda b=bad: stub.Score(
                detector_pb2.ScoreRequest(request_id="conformance-bad", audio=b), timeout=self.timeout), invalid)
        batch = self._call_ok("ScoreBatch", lambda: stub.ScoreBatch(detector_pb2.ScoreBatchRequest(items=[
            detector_pb2.ScoreRequest(request_id="b-ok", audio=audio),
            detector_pb2.ScoreRequest(request_id="b-bad", audio=self._bad_audio()[0][1])]), timeout=self.timeout))
        if batch is not None:
            ids = [it.request_id for it in batch.items]
            ok = (ids == ["b-ok", "b-bad"] and batch.items[0].HasField("result") and batch.items[1].HasField("error")
                  and batch.items[1].error.code == grpc.StatusCode.INVALID_ARGUMENT.value[0])
            self._add("ScoreBatch per-item outcomes", ok, "good item scored, bad item INVALID_ARGUMENT, order kept" if ok
                      else f"items {ids}: {[it.WhichOneof('outcome') for it in batch.items]}")
        big = common_pb2.Audio(sample_rate=16000, channels=1, encoding=common_pb2.PCM_S16LE, data=b"\0" * OVERSIZE_BYTES)
        self._expect_error("oversize message rejected", lambda: stub.Score(
            detector_pb2.ScoreRequest(request_id="conformance-big", audio=big), timeout=self.timeout),
            (grpc.StatusCode.RESOURCE_EXHAUSTED,))

    # -- the scorer -----------------------------------------------------------------------------
    def _scorer(self) -> None:
        stub = scorer_pb2_grpc.ScorerServiceStub(self.channel)
        info = self._call_ok("GetInfo", lambda: stub.GetInfo(common_pb2.GetInfoRequest(), timeout=self.timeout),
                             record=False)
        if info is None:
            return
        self._model_info(info.model, True, needs_rate=False)   # the scorer takes any rate
        self._add("declares metrics", len(info.metrics) > 0, ", ".join(m.name for m in info.metrics) or "none")
        self._add("fingerprint", len(info.fingerprint) > 0, f"{len(info.fingerprint)} entries")
        # Perfectly separated trials have EER 0; fully reversed ones EER 1 (any definition agrees).
        sets = [scorer_pb2.TrialSet(name="separated", bonafide_scores=[1, 2, 3, 4], spoof_scores=[-4, -3, -2, -1]),
                scorer_pb2.TrialSet(name="reversed", bonafide_scores=[-4, -3, -2, -1], spoof_scores=[1, 2, 3, 4])]
        resp = self._call_ok("DetectionMetrics", lambda: stub.DetectionMetrics(
            scorer_pb2.DetectionMetricsRequest(sets=sets), timeout=self.timeout))
        if resp is not None:
            eers = {m.name: m.eer for m in resp.sets}
            self._add("EER of known trials", eers == {"separated": 0.0, "reversed": 1.0}, f"{eers}")
        self._expect_error("unknown metric rejected", lambda: stub.MeasureClips(scorer_pb2.MeasureClipsRequest(items=[
            scorer_pb2.ClipRequest(request_id="conformance-1", metrics=["no-such-metric"],
                                   audio=encode_audio(self.probe))]), timeout=self.timeout),
            (grpc.StatusCode.INVALID_ARGUMENT,))
        big = common_pb2.Audio(sample_rate=16000, channels=1, encoding=common_pb2.PCM_S16LE, data=b"\0" * OVERSIZE_BYTES)
        self._expect_error("oversize message rejected", lambda: stub.MeasureClips(scorer_pb2.MeasureClipsRequest(items=[
            scorer_pb2.ClipRequest(request_id="conformance-big", metrics=["rtf"], audio=big)]), timeout=self.timeout),
            (grpc.StatusCode.RESOURCE_EXHAUSTED,))

    def _call_ok(self, name: str, call: Callable[[], object], record: bool = True):
        """The response of a call that must succeed (a FAIL with the status if it does not)."""
        try:
            response = call()
        except grpc.RpcError as e:
            self._add(name, False, f"{_code(e).name}: {e.details() if hasattr(e, 'details') else ''}")
            return None
        if record:
            self._add(name, True, "answered")
        return response

    # -- entry --------------------------------------------------------------------------------
    def run(self) -> list[Check]:
        try:
            if not self._health():
                return self.checks
            role = self._role_from_reflection()
            if role is None:  # reflection off: ask GetInfo of each role
                for candidate, stub_cls in (("generator", generator_pb2_grpc.GeneratorServiceStub),
                                            ("detector", detector_pb2_grpc.DetectorServiceStub)):
                    try:
                        stub_cls(self.channel).GetInfo(common_pb2.GetInfoRequest(), timeout=self.timeout)
                        role = candidate
                        break
                    except grpc.RpcError:
                        continue
            if role == "generator":
                self._generator()
            elif role == "detector":
                self._detector()
            elif role == "scorer":
                self._scorer()
            else:
                self._add("role", False, "serves none of voxarena.v1.GeneratorService, DetectorService, ScorerService")
            return self.checks
        finally:
            self.channel.close()


def run_conformance(address: str, timeout: float = 120.0, security: ClientSecurity = PLAINTEXT) -> list[Check]:
    return Conformance(address, timeout, security=security).run()

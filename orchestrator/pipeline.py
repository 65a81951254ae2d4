"""One arena run: freeze the manifest, start or reach the services, generate, detect, measure, score.

Stages overlap: bona fide clips go to the detectors at once, and every generated clip goes to every
detector and to the scorer as soon as it is stored, so all services stay busy. Each call has a
deadline and only UNAVAILABLE is retried. Every response is validated; a failure becomes a row with
its reason and the run goes on. Records are keyed by id, so a rerun on the same directory resumes.
"""
from __future__ import annotations

import functools
import hashlib
import io
import platform
import subprocess
import time
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import datetime, timezone
from importlib.metadata import version
from pathlib import Path

from google.protobuf import json_format
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from voxarena.codec import AudioClip, AudioFormatError, clip_to_wav_bytes, encode_audio, read_audio_file
from voxarena.v1 import detector_pb2, generator_pb2, scorer_pb2

from .channel import ChannelError, apply_condition, condition_seed
from .clients import CallFailed, DetectorClient, GeneratorClient, ScorerClient, ServiceStartError, wait_for_serving
from .config import RunConfig
from .local_services import LocalService
from .manifest import ManifestItem, ManifestSet, build_manifest, corpus_attack, is_corpus_spoof
from .metrics import write_metrics
from .run_store import CLEAN, RunStore, detection_id, generation_id, iteration_of
from .validation import ResponseInvalid, validate_generation, validate_score

RUN_FORMAT = "voxarena.run/1"


@functools.lru_cache(maxsize=256)
def _verified_clip(path: str, sha: str) -> AudioClip:
    """One read per file: hashed and decoded from the same bytes. Bona fide clips are sent to every
    detector and, as references, with every generator's clip to the scorer: they are read once."""
    data = Path(path).read_bytes()
    if hashlib.sha256(data).hexdigest() != sha:
        raise AudioFormatError(f"{path} no longer matches its recorded sha256")
    return read_audio_file(io.BytesIO(data), path)


class RunError(RuntimeError):
    """The run cannot start or continue (bad directory, changed inputs, a service that will not start)."""


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
        dirty = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True, timeout=5,
                               cwd=Path(__file__).resolve().parent).stdout.strip()
        return out.stdout.strip() + ("+dirty" if dirty else "") if out.returncode == 0 else "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


@dataclass
class Clip:
    """A clip that detectors and the scorer consume: bona fide (an item) or generated (a generation row)."""

    id: str
    kind: str  # "bonafide" or "spoof"
    generator: str
    task: str
    item: ManifestItem
    path: Path
    sha256: str
    gen_row: dict | None = None

    @property
    def iteration(self) -> int:
        return iteration_of(self.gen_row or {})


@dataclass
class Service:
    name: str
    role: str
    cfg: object
    local: LocalService | None = None
    address: str | None = None
    client: object = None
    info: object = None


STACKS = ("local", "compose")
COMPOSE_PORT = 50051


class Arena:
    def __init__(self, cfg: RunConfig, run_dir: Path, config_file: Path | None = None, console: Console | None = None,
                 retry_failed: bool = False, progress: bool = True, stack: str = "local") -> None:
        if stack not in STACKS:
            raise RunError(f"unknown stack {stack!r}; use one of {', '.join(STACKS)}")
        self.stack = stack
        self.cfg, self.config_file = cfg, config_file
        self.console = console or Console(stderr=True)
        self.store = RunStore(run_dir)
        self.retry_failed = retry_failed
        self.show_progress = progress
        self.services: dict[str, Service] = {}
        self.conditions = [CLEAN, *cfg.conditions]
        self._degrade_locks: dict[str, threading.Lock] = {}
        self._locks_guard = threading.Lock()

    # ---------------------------------------------------------------- manifest and run.json
    def freeze_manifest(self) -> ManifestSet:
        fresh = build_manifest(self.cfg.dataset, self.cfg.protocol.seed)
        path = self.store.manifest_path
        if path.exists():
            frozen = ManifestSet.from_file(path)
            if frozen.sha256 != fresh.sha256:
                changed = sorted({i.id for i in frozen} ^ {i.id for i in fresh}) or [
                    a.id for a, b in zip(frozen, fresh) if a != b]
                raise RunError(f"{self.store.dir}: the dataset or protocol differs from the frozen manifest "
                               f"(e.g. {', '.join(changed[:5])}); resume with the same inputs or use a new --out")
            return frozen
        fresh.to_file(path)
        return fresh

    def _check_resume(self, previous: dict | None) -> None:
        if previous is None:
            return
        if previous.get("config") != self.cfg.model_dump(mode="json"):
            raise RunError(f"{self.store.dir}: was run with a different configuration (see its run.json); "
                           "resume with the same config or use a new --out")

    # ---------------------------------------------------------------- services
    def start_services(self) -> None:
        entries = [(n, "generator", c) for n, c in self.cfg.generators.items()]
        entries += [(n, "detector", c) for n, c in self.cfg.detectors.items()]
        entries.append(("scorer", "scorer", self.cfg.scorer))
        for name, role, c in entries:
            address = c.address
            if address is None and self.stack == "compose":
                # The compose service of the same name; dns:/// lets gRPC round-robin over its replicas.
                address = f"dns:///{name}:{COMPOSE_PORT}"
            svc = Service(name=name, role=role, cfg=c, address=address)
            if address is None:
                svc.local = LocalService(name, c.module, self.store.logs_dir / f"{name}.log", c.args)
                svc.local.start()
            self.services[name] = svc
        timeout = self.cfg.execution.startup_timeout_seconds
        errors = []
        for svc in self.services.values():
            try:
                if svc.local:
                    svc.address = svc.local.wait_ready(timeout)
                else:
                    wait_for_serving(svc.address, svc.name, timeout)
            except ServiceStartError as e:
                errors.append(str(e))
        if errors:
            self.stop_services()
            raise RunError("\n".join(errors))
        ex = self.cfg.execution
        client_cls = {"generator": GeneratorClient, "detector": DetectorClient, "scorer": ScorerClient}
        for svc in self.services.values():
            svc.client = client_cls[svc.role](svc.name, svc.address, ex.deadline_seconds, ex.retries, ex.backoff_seconds)
            try:
                svc.info = svc.client.info()
            except CallFailed as e:
                self.stop_services()
                raise RunError(f"{svc.name}: GetInfo failed: {e}") from None

    def check_metrics(self) -> None:
        """Every configured metric must be one the scorer offers: fail before any work, naming it."""
        import difflib

        offered = [m.name for m in self.services["scorer"].info.metrics]
        for name in self.cfg.scorer.metrics:
            if name not in offered:
                close = difflib.get_close_matches(name, offered, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                self.stop_services()
                raise RunError(f"scorer.metrics: unknown metric {name!r}{hint}; the scorer offers: {', '.join(offered)}")

    def stop_services(self) -> dict[str, float]:
        cpu = {}
        for svc in self.services.values():
            if svc.local:
                svc.local.stop()
                if svc.local.cpu_seconds is not None:
                    cpu[svc.name] = svc.local.cpu_seconds
            if svc.client:
                svc.client.close()
        return cpu

    def _service_record(self, svc: Service) -> dict:
        return {"role": svc.role, "mode": "local" if svc.local else "remote",
                "address": svc.address if not svc.local else "local",
                "info": json_format.MessageToDict(svc.info, preserving_proto_field_name=True)}

    def _check_services_unchanged(self, previous: dict | None) -> None:
        if not previous:
            return
        for name, rec in previous.get("services", {}).items():
            if name not in self.services:
                continue
            old, new = rec["info"].get("model", {}), self._service_record(self.services[name])["info"].get("model", {})
            for key in ("name", "version", "weights_sha256"):
                if old.get(key) != new.get(key):
                    raise RunError(f"{name}: {key} changed since this run started ({old.get(key)!r} -> {new.get(key)!r}); "
                                   "results would mix two models: use a new --out")

    # ---------------------------------------------------------------- planning
    def _reference_items(self, manifest: ManifestSet) -> dict[str, ManifestItem]:
        """Target speaker for CONVERT/CLONE: the first item of the next speaker in manifest order."""
        firsts: dict[str, ManifestItem] = {}
        for it in manifest.bonafide():
            firsts.setdefault(it.speaker, it)
        speakers = list(firsts)
        out = {}
        for it in manifest.bonafide():
            nxt = speakers[(speakers.index(it.speaker) + 1) % len(speakers)]
            out[it.id] = firsts[nxt]
        return out

    def plan_generations(self, manifest: ManifestSet) -> list[tuple[str, str, ManifestItem]]:
        jobs = []
        for gname, svc in self.services.items():
            if svc.role != "generator":
                continue
            supported = {generator_pb2.Task.Name(t) for t in svc.info.tasks}
            for task in self.cfg.protocol.tasks:
                if task in supported:
                    jobs.extend((gname, task, it) for it in manifest.bonafide())
        return jobs

    # ---------------------------------------------------------------- audio
    @staticmethod
    def _read_clip(path: Path, sha: str, what: str) -> AudioClip:
        try:
            return _verified_clip(str(path), sha)
        except AudioFormatError as e:
            raise AudioFormatError(f"{what}: {e}") from None

    # ---------------------------------------------------------------- stage: generation
    @staticmethod
    def _declared_rate(svc: Service) -> int:
        """The rate the generator declares for the voice asked for (a voice may differ from the model)."""
        voices = list(svc.info.voices)
        wanted = svc.cfg.voice or (voices[0].name if voices else "")
        for v in voices:
            if v.name == wanted and v.sample_rate:
                return v.sample_rate
        return svc.info.model.native_sample_rate

    def _generate(self, gname: str, task: str, item: ManifestItem, ref: ManifestItem, iteration: int = 1,
                  previous: dict | None = None) -> dict:
        """One generation. I2D iteration k > 1 takes iteration k-1's clip (``previous``) as its
        reference audio and, for CLONE, the target text as its reference text; SIM is still measured
        against the original reference speaker (``speaker_reference``)."""
        svc = self.services[gname]
        gid = generation_id(gname, task, item.id, iteration)
        row = {"id": gid, "generator": gname, "task": task, "item": item.id, "seed": item.seed, "iteration": iteration,
               "speaker_reference": ref.id if task in ("CLONE", "CONVERT") else item.id}
        if previous is not None:
            row["reference_clip"] = previous["id"]
        req = generator_pb2.SynthesizeRequest(request_id=gid, seed=item.seed, task=generator_pb2.Task.Value(task),
                                              voice=svc.cfg.voice, parameters=svc.cfg.parameters)
        try:
            if task in ("TTS", "CLONE"):
                if not item.text:
                    raise ResponseInvalid(f"{gid}: item has no text (no transcript and no prompts configured)")
                req.text = item.text
                row["text"] = item.text
            if task in ("CLONE", "CONVERT"):
                if previous is not None:
                    reference = self._read_clip(self.store.dir / previous["audio"], previous["audio_sha256"], previous["id"])
                else:
                    reference = self._read_clip(Path(ref.audio_path), ref.audio_sha256, ref.id)
                req.reference_audio.CopyFrom(encode_audio(reference))
            if task == "CLONE":
                req.reference_text = item.text if previous is not None else ref.text
            if task in ("RECONSTRUCT", "CONVERT"):
                req.source_audio.CopyFrom(encode_audio(self._read_clip(Path(item.audio_path), item.audio_sha256, item.id)))
                row["text"] = item.text if item.text_source == "transcript" else ""
            resp, attempts = svc.client.call("Synthesize", req)
            row["attempts"] = attempts
            p = self.cfg.protocol
            clip = validate_generation(gid, req, resp, self._declared_rate(svc), svc.info.model.timing_scope,
                                       p.min_duration, p.max_duration)
            rel, sha = self.store.put_audio(clip_to_wav_bytes(clip))
            row.update(status="ok", audio=rel, audio_sha256=sha, sample_rate=clip.sample_rate,
                       duration=round(clip.duration, 6), voice=resp.voice,
                       timing=json_format.MessageToDict(resp.timing, preserving_proto_field_name=True))
        except CallFailed as e:
            row.update(status="failed", reason=f"{gid}: {e}", code=e.code.name, attempts=e.attempts)
        except (ResponseInvalid, AudioFormatError) as e:
            row.update(status="failed", reason=str(e), code="INVALID_RESPONSE" if isinstance(e, ResponseInvalid) else "BAD_INPUT")
        self.store.generations.append(row)
        return row

    # ---------------------------------------------------------------- channel conditions
    def _degraded(self, clip: Clip, condition: str) -> AudioClip:
        """The clip as the condition's channel delivers it: computed once, stored, recorded, reused."""
        if condition == CLEAN:
            return self._read_clip(clip.path, clip.sha256, clip.id)
        key = f"{condition}|{clip.id}"
        with self._locks_guard:
            lock = self._degrade_locks.setdefault(key, threading.Lock())
        with lock:
            # Every detector asks for the same degradation: the first computes it, the rest reuse the
            # row, a failed one included (until --retry-failed).
            row = self.store.degradations.get(key)
            if row is not None and row["source_sha256"] == clip.sha256 and self._done(self.store.degradations, key):
                if row["status"] != "ok":
                    raise ChannelError(row["reason"])
                return self._read_clip(self.store.dir / row["audio"], row["audio_sha256"], key)
            base = {"id": key, "condition": condition, "clip": clip.id, "source_sha256": clip.sha256}
            try:
                out, done = apply_condition(self._read_clip(clip.path, clip.sha256, clip.id), self.cfg.conditions[condition],
                                            condition_seed(self.cfg.protocol.seed, condition, clip.id))
            except (ValueError, RuntimeError) as e:  # ChannelError is a ValueError
                # RuntimeError: libsndfile refusing an encoding (soundfile raises LibsndfileError).
                reason = f"{clip.id}: condition {condition!r}: {e}"
                self.store.degradations.append({**base, "status": "failed", "reason": reason})
                raise ChannelError(reason) from None
            rel, sha = self.store.put_audio(clip_to_wav_bytes(out))
            self.store.degradations.append({**base, "status": "ok", "audio": rel, "audio_sha256": sha,
                                            "sample_rate": out.sample_rate, "duration": round(out.duration, 6), **done})
            return out

    # ---------------------------------------------------------------- stage: detection
    def _detect(self, dname: str, clips: list[Clip], condition: str = CLEAN) -> list[dict]:
        svc = self.services[dname]
        rows, items, sent = [], [], []
        for c in clips:
            base = {"id": detection_id(dname, condition, c.id), "detector": dname, "condition": condition,
                    "clip": c.id, "kind": c.kind, "generator": c.generator, "task": c.task,
                    "iteration": c.iteration, "item": c.item.id, "speaker": c.item.speaker}
            try:
                audio = encode_audio(self._degraded(c, condition))
            except (AudioFormatError, OSError, ChannelError) as e:
                rows.append({**base, "status": "failed", "reason": str(e), "code": "BAD_INPUT"})
                continue
            items.append(detector_pb2.ScoreRequest(request_id=base["id"], audio=audio, parameters=svc.cfg.parameters))
            sent.append(base)
        if items:
            try:
                resp, attempts = svc.client.call("ScoreBatch", detector_pb2.ScoreBatchRequest(items=items))
                if len(resp.items) != len(items):
                    raise ResponseInvalid(f"{dname}: batch answered {len(resp.items)} items for {len(items)} sent")
                for base, out in zip(sent, resp.items):
                    try:
                        if out.HasField("error"):
                            rows.append({**base, "status": "failed", "reason": out.error.message,
                                         "code": f"ITEM_{out.error.code}"})
                            continue
                        score = validate_score(base["clip"], base["id"], out.result)
                        rows.append({**base, "status": "ok", "score": score, "is_llr": out.result.is_llr,
                                     "wall_seconds": out.result.timing.wall_seconds})
                    except ResponseInvalid as e:
                        rows.append({**base, "status": "failed", "reason": str(e), "code": "INVALID_RESPONSE"})
            except CallFailed as e:
                rows.extend({**b, "status": "failed", "reason": f"{b['id']}: {e}", "code": e.code.name} for b in sent)
            except ResponseInvalid as e:
                rows.extend({**b, "status": "failed", "reason": str(e), "code": "INVALID_RESPONSE"} for b in sent)
        for r in rows:
            self.store.detections.append(r)
        return rows

    # ---------------------------------------------------------------- stage: measurement
    def _measure(self, clips: list[Clip], manifest_by_id: dict[str, ManifestItem]) -> list[dict]:
        svc = self.services["scorer"]
        metrics = list(self.cfg.scorer.metrics)
        rows, reqs, sent = [], [], []
        for c in clips:
            g = c.gen_row
            base = {"id": c.id, "generator": c.generator, "task": c.task, "iteration": c.iteration, "item": c.item.id,
                    "speaker": c.item.speaker}
            try:
                ref = manifest_by_id[g["speaker_reference"]]
                req = scorer_pb2.ClipRequest(
                    request_id=c.id, metrics=metrics, text=g.get("text", ""),
                    audio=encode_audio(self._read_clip(c.path, c.sha256, c.id)),
                    speaker_reference=encode_audio(self._read_clip(Path(ref.audio_path), ref.audio_sha256, ref.id)),
                )
                # An aligned reference: the source of a reconstruction/conversion, or the original
                # recording of the very words a TTS clip says (transcripts, not prompts).
                if c.task in ("RECONSTRUCT", "CONVERT") or (c.task == "TTS" and c.item.text_source == "transcript"):
                    req.source_reference.CopyFrom(
                        encode_audio(self._read_clip(Path(c.item.audio_path), c.item.audio_sha256, c.item.id)))
                    req.reference_aligned = c.task in ("RECONSTRUCT", "CONVERT")
                json_format.ParseDict(g["timing"], req.generation_timing)
            except (AudioFormatError, OSError) as e:
                rows.append({**base, "status": "failed", "reason": str(e)})
                continue
            reqs.append(req)
            sent.append(base)
        if reqs:
            try:
                resp, _ = svc.client.call("MeasureClips", scorer_pb2.MeasureClipsRequest(items=reqs))
                for base, m in zip(sent, resp.items):
                    rows.append({**base, "status": "ok", "values": dict(m.values), "notes": dict(m.notes),
                                 "errors": dict(m.errors)})
            except CallFailed as e:
                rows.extend({**b, "status": "failed", "reason": f"{b['id']}: {e}"} for b in sent)
        for r in rows:
            self.store.measurements.append(r)
        return rows

    # ---------------------------------------------------------------- the run
    def _done(self, table, row_id: str) -> bool:
        row = table.get(row_id)
        return row is not None and (row.get("status") == "ok" or not self.retry_failed)

    def _generated_clip(self, row: dict, manifest_by_id: dict[str, ManifestItem]) -> Clip:
        return Clip(id=row["id"], kind="spoof", generator=row["generator"], task=row["task"],
                    item=manifest_by_id[row["item"]], path=self.store.dir / row["audio"], sha256=row["audio_sha256"],
                    gen_row=row)

    def run(self) -> dict:
        previous = self.store.read_json()
        self._check_resume(previous)
        manifest = self.freeze_manifest()
        by_id = manifest.by_id()
        refs = self._reference_items(manifest)
        started = _now()
        t0 = time.perf_counter()
        self.start_services()
        self.check_metrics()
        try:
            self._check_services_unchanged(previous)
            record = {
                "format": RUN_FORMAT, "name": self.cfg.name, "config": self.cfg.model_dump(mode="json"),
                "config_file": str(self.config_file) if self.config_file else None,
                "git_commit": _git_commit(),
                "versions": {"python": platform.python_version(), "voxarena": version("voxarena"),
                             "grpcio": version("grpcio"), "protobuf": version("protobuf")},
                "seeds": {"run_seed": self.cfg.protocol.seed, "item_seed": "run seed + source index"},
                "manifest": {"sha256": manifest.sha256, "items": len(manifest), "format": "voxarena.manifest/1"},
                "stack": self.stack,
                "services": {n: self._service_record(s) for n, s in self.services.items()},
                "started_at": (previous or {}).get("started_at", started),
                "sessions": (previous or {}).get("sessions", []) + [{"started_at": started}],
            }
            self.store.write_json(record)
            self._execute(manifest, by_id, refs)
            write_metrics(self.store, self.cfg, manifest, {n: s.info for n, s in self.services.items()},
                          self.services["scorer"].client)
        finally:
            cpu = self.stop_services()
        wall = time.perf_counter() - t0
        record["ended_at"] = _now()
        record["sessions"][-1].update(ended_at=record["ended_at"], wall_seconds=round(wall, 3),
                                      service_cpu_seconds={k: round(v, 3) for k, v in cpu.items()})
        self.store.write_json(record)
        return record

    def _execute(self, manifest: ManifestSet, by_id: dict[str, ManifestItem], refs: dict[str, ManifestItem]) -> None:
        ex = self.cfg.execution
        detectors = [n for n, s in self.services.items() if s.role == "detector"]
        gen_pools = {n: ThreadPoolExecutor(s.cfg.concurrency, thread_name_prefix=n)
                     for n, s in self.services.items() if s.role == "generator"}
        det_pools = {n: ThreadPoolExecutor(self.services[n].cfg.concurrency, thread_name_prefix=n) for n in detectors}
        scorer_pool = ThreadPoolExecutor(self.cfg.scorer.concurrency, thread_name_prefix="scorer")
        consumer_futures: list[Future] = []
        pending_det: dict[tuple[str, str], list[Clip]] = {(d, c): [] for d in detectors for c in self.conditions}
        pending_measure: list[Clip] = []

        jobs = self.plan_generations(manifest)
        depth = self.cfg.protocol.depth
        n_generations = sum(depth(t) for _, t, _ in jobs)
        n_conditions = len(self.conditions)
        # The corpus's own clips: bona fide, and spoofs where its key says so (ASVspoof: per attack id).
        corpus = [Clip(id=it.id, kind="spoof" if is_corpus_spoof(it) else "bonafide",
                       generator=corpus_attack(it) if is_corpus_spoof(it) else "bonafide", task="", item=it,
                       path=Path(it.audio_path), sha256=it.audio_sha256) for it in manifest]

        def detections_per_clip(iteration: int) -> int:
            # I2D iterations beyond the first are scored under the clean condition only.
            return len(detectors) * (n_conditions if iteration == 1 else 1)

        det_total = len(corpus) * detections_per_clip(1) + sum(
            detections_per_clip(1) + (depth(t) - 1) * detections_per_clip(2) for _, t, _ in jobs)
        progress = Progress(TextColumn("{task.description:<10}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            console=self.console, disable=not self.show_progress, transient=False)
        with progress:
            p_gen = progress.add_task("generate", total=n_generations)
            p_det = progress.add_task("detect", total=det_total)
            p_meas = progress.add_task("measure", total=n_generations)

            def det_done(f: Future) -> None:
                progress.advance(p_det, len(f.result()))

            def meas_done(f: Future) -> None:
                progress.advance(p_meas, len(f.result()))

            def batch_size(d: str) -> int:
                # The config's batch size, never above what the detector says it accepts.
                limit = self.services[d].info.max_batch_size
                return min(ex.detector_batch_size, limit) if limit > 0 else ex.detector_batch_size

            def submit_det(key: tuple[str, str], force: bool = False) -> None:
                d, condition = key
                size = batch_size(d)
                while pending_det[key] and (force or len(pending_det[key]) >= size):
                    batch, pending_det[key] = pending_det[key][:size], pending_det[key][size:]
                    fut = det_pools[d].submit(self._detect, d, batch, condition)
                    fut.add_done_callback(det_done)
                    consumer_futures.append(fut)

            def submit_measure(force: bool = False) -> None:
                nonlocal pending_measure
                bs = self.cfg.scorer.batch_size
                while pending_measure and (force or len(pending_measure) >= bs):
                    batch, pending_measure = pending_measure[:bs], pending_measure[bs:]
                    fut = scorer_pool.submit(self._measure, batch, by_id)
                    fut.add_done_callback(meas_done)
                    consumer_futures.append(fut)

            def consume(clip: Clip) -> None:
                conditions = self.conditions if clip.iteration == 1 else [CLEAN]
                for d in detectors:
                    for condition in conditions:
                        if self._done(self.store.detections, detection_id(d, condition, clip.id)):
                            progress.advance(p_det)
                        else:
                            pending_det[(d, condition)].append(clip)
                            submit_det((d, condition))
                if clip.gen_row is not None:
                    if self._done(self.store.measurements, clip.id):
                        progress.advance(p_meas)
                    else:
                        pending_measure.append(clip)
                        submit_measure()

            def generation_finished(row: dict) -> list[Future]:
                """Hand a finished generation on; returns the I2D follow-up it started, if any."""
                progress.advance(p_gen)
                k = iteration_of(row)
                if row["status"] == "ok":
                    consume(self._generated_clip(row, by_id))
                else:
                    progress.update(p_det, total=progress.tasks[p_det].total - detections_per_clip(k))
                    progress.update(p_meas, total=progress.tasks[p_meas].total - 1)
                if k >= depth(row["task"]):
                    return []
                item = by_id[row["item"]]
                nid = generation_id(row["generator"], row["task"], item.id, k + 1)
                if self._done(self.store.generations, nid):
                    return generation_finished(self.store.generations.get(nid))
                if row["status"] == "ok":
                    return [gen_pools[row["generator"]].submit(self._generate, row["generator"], row["task"], item,
                                                               refs[item.id], k + 1, row)]
                # Nothing to iterate on: the rest of the chain is failed rows naming the cause.
                failed = {"id": nid, "generator": row["generator"], "task": row["task"], "item": item.id,
                          "seed": item.seed, "iteration": k + 1, "reference_clip": row["id"],
                          "speaker_reference": row.get("speaker_reference", ""), "status": "failed",
                          "code": "UPSTREAM_FAILED", "reason": f"{nid}: I2D iteration {k} ({row['id']}) failed"}
                self.store.generations.append(failed)
                return generation_finished(failed)

            for clip in corpus:
                consume(clip)
            outstanding: set[Future] = set()
            for gname, task, item in jobs:
                gid = generation_id(gname, task, item.id)
                if self._done(self.store.generations, gid):
                    outstanding.update(generation_finished(self.store.generations.get(gid)))
                else:
                    outstanding.add(gen_pools[gname].submit(self._generate, gname, task, item, refs[item.id]))
            while outstanding:
                finished, outstanding = wait(outstanding, return_when=FIRST_COMPLETED)
                for fut in finished:
                    outstanding.update(generation_finished(fut.result()))
            for key in pending_det:
                submit_det(key, force=True)
            submit_measure(force=True)
            for fut in list(consumer_futures):
                fut.result()
        for pool in [*gen_pools.values(), *det_pools.values(), scorer_pool]:
            pool.shutdown(wait=True)

"""benchmarks/capacity_plan.py: the per-item costs read from a tiny synthetic run directory, and the plan's
arithmetic, against figures worked out by hand here."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("capacity_plan", REPO / "benchmarks" / "capacity_plan.py")
assert _spec and _spec.loader
cp = importlib.util.module_from_spec(_spec)
sys.modules["capacity_plan"] = cp  # dataclasses look their module up there
_spec.loader.exec_module(cp)


def _jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _audio(run: Path, name: str, size: int) -> str:
    rel = f"audio/{name[:2]}/{name}.wav"
    (run / rel).parent.mkdir(parents=True, exist_ok=True)
    (run / rel).write_bytes(b"\0" * size)
    return rel


WORK = {"started_at": "2026-12-02T10:00:00.000+00:00", "ended_at": "2026-12-02T10:10:00.000+00:00"}
IDLE = {"started_at": "2026-12-02T11:00:00.000+00:00", "ended_at": "2026-12-02T11:01:00.000+00:00"}


def make_run(run: Path, sessions: list[dict]) -> Path:
    """2 utterances (2 s, 4 s); generators ga (1 s clips, 1000 B) and gb (2 s clips, 3000 B); detector dx
    on clean and ``noisy`` (degraded clips 500 B); the scorer measured the 4 clips."""
    run.mkdir()
    items = [{"id": "u1", "duration": 2.0, "speaker": "s1"}, {"id": "u2", "duration": 4.0, "speaker": "s2"}]
    _jsonl(run / "manifest.jsonl", items)
    gens = []
    for g, seconds, size, wall, cpu in (("ga", 1.0, 1000, 0.5, 0.25), ("gb", 2.0, 3000, 1.0, 0.5)):
        for it in ("u1", "u2"):
            gid = f"{g}|TTS|{it}"
            timing = {"wall_seconds": wall, "cpu_seconds": cpu, "start": "2026-12-02T10:01:00.123456789Z"}
            gens.append({"id": gid, "generator": g, "status": "ok", "duration": seconds, "timing": timing,
                         "audio": _audio(run, f"{g}{it}", size), "audio_sha256": "x"})  # fmt: skip
    gens.append({"id": "gb|TTS|u3", "generator": "gb", "status": "failed", "reason": "x"})
    _jsonl(run / "generations.jsonl", gens)
    clips = ["u1", "u2"] + [g["id"] for g in gens if g["status"] == "ok"]
    _jsonl(
        run / "detections.jsonl",
        [{"id": f"dx|{c}|{clip}", "detector": "dx", "condition": c, "clip": clip, "status": "ok", "score": 0.0,
          "speaker": "s1", "wall_seconds": 0.6 if c == "clean" else 0.9} for c in ("clean", "noisy") for clip in clips],
    )  # fmt: skip
    _jsonl(
        run / "degradations.jsonl",
        [{"id": f"noisy|{clip}", "condition": "noisy", "clip": clip, "status": "ok",
          "audio": _audio(run, f"zz{i}", 500)} for i, clip in enumerate(clips)],
    )  # fmt: skip
    _jsonl(run / "measurements.jsonl", [{"id": g["id"], "status": "ok"} for g in gens if g["status"] == "ok"])
    (run / "metrics").mkdir()
    (run / "metrics" / "detection_metrics.csv").write_text(
        "detector,generator,condition,n_bonafide,n_spoof,eer\n"
        "dx,ga,clean,2,2,0.1\ndx,gb,clean,2,2,0.1\ndx,pooled,clean,2,4,0.1\n"
    )
    config = {
        "conditions": {"noisy": [{"gain_db": -6}]},
        "execution": {"detector_batch_size": 16},
        "scorer": {"batch_size": 8, "bootstrap_resamples": 10},
        "protocol": {"seed": 1},
    }
    (run / "run.json").write_text(json.dumps({"config": config, "sessions": sessions}))
    return run


def test_per_item_costs_from_sessions_less_one_startup_each(tmp_path: Path) -> None:
    merge = {"merge": 1, "service_cpu_seconds": {"scorer": 12.0}, **IDLE}
    run = make_run(
        tmp_path / "run",
        [
            {**WORK, "service_cpu_seconds": {"ga": 3.0, "gb": 5.0, "dx": 7.0, "scorer": 9.0}},
            {**IDLE, "service_cpu_seconds": {"ga": 1.0, "gb": 1.0, "dx": 1.0, "scorer": 2.0}},
            merge,
        ],
    )
    m = cp.measure(run, degrade_sample=0)
    ga, gb = m.generators
    assert (ga.name, ga.calls, ga.cpu_per_call, ga.cpu_per_audio_second) == ("ga", 2, 1.0, 1.0)
    assert (gb.calls, gb.cpu_per_call, gb.cpu_per_audio_second) == (2, 2.0, 1.0)  # the failed row is no call
    assert ga.wall_per_call == 0.5 and ga.row_cpu_seconds == 0.5 and ga.startup_cpu_seconds == 1.0
    (dx,) = m.detectors
    assert dx.calls == 12 and dx.cpu_per_call == pytest.approx(0.5)
    # 2 x (2 + 4 + 1 + 1 + 2 + 2) audio seconds; one batch per condition: 0.6 + 0.9 s of wall
    assert dx.audio_seconds == 24.0 and dx.wall_per_call == pytest.approx(1.5 / 12)
    assert m.scorer.calls == 4 and m.scorer.cpu_per_call == pytest.approx(7.0 / 4)
    assert m.metrics_cpu_seconds == 10.0  # the merge's scorer less its start-up
    assert (m.trial_sets, m.trials) == (3, 14)
    # 12 scores as one packed double field (tag, length, 12 x 8 bytes) and 12 speakers "s1" (tag, length, 2)
    assert m.trial_bytes == pytest.approx((1 + 1 + 96 + 12 * 4) / 12)
    assert m.generated_clip_bytes == 2000.0 and m.degraded_clip_bytes == {"noisy": 500.0}
    assert m.conditions == ["noisy"] and m.utterances == 2 and m.clip_seconds == 1.5
    assert m.row_bytes["measurements"] == (run / "measurements.jsonl").stat().st_size / 4
    assert any("generations: 1 failed" in n for n in m.notes)
    assert not any("also generated" in n for n in m.notes)


def test_a_single_session_keeps_startup_in_the_calls_and_says_so(tmp_path: Path) -> None:
    run = make_run(
        tmp_path / "run", [{**WORK, "service_cpu_seconds": {"ga": 3.0, "gb": 5.0, "dx": 7.0, "scorer": 9.0}}]
    )
    m = cp.measure(run, degrade_sample=0)
    assert m.generators[0].cpu_per_call == 1.5 and m.generators[0].startup_cpu_seconds is None
    assert m.metrics_cpu_seconds is None
    assert any(n.startswith("ga: one session only") for n in m.notes)
    assert any("not a merged sharded run" in n for n in m.notes)


def test_a_startup_session_that_generated_is_named(tmp_path: Path) -> None:
    busy = {**WORK, "service_cpu_seconds": {"ga": 1.0, "gb": 1.0, "dx": 1.0, "scorer": 1.0}}
    other = {**IDLE, "service_cpu_seconds": {"ga": 2.0, "gb": 2.0, "dx": 2.0, "scorer": 2.0}}
    m = cp.measure(make_run(tmp_path / "run", [busy, other]), degrade_sample=0)
    assert any(n.startswith("ga: the session taken for its start-up (2026-12-02T10:00") for n in m.notes)


def test_missing_things_are_named(tmp_path: Path) -> None:
    with pytest.raises(cp.RunReadError, match=r"run\.json: missing"):
        cp.measure(tmp_path, degrade_sample=0)
    run = make_run(tmp_path / "run", [{**WORK, "service_cpu_seconds": {"ga": 1.0, "gb": 1.0, "dx": 1.0}}])
    with pytest.raises(cp.RunReadError, match="no session recorded the CPU of scorer"):
        cp.measure(run, degrade_sample=0)


def test_degradation_is_timed_on_the_runs_clips(tmp_path: Path) -> None:
    import numpy as np
    import soundfile as sf

    run = make_run(
        tmp_path / "run", [{**WORK, "service_cpu_seconds": {"ga": 1.0, "gb": 1.0, "dx": 1.0, "scorer": 1.0}}]
    )
    rows = [json.loads(line) for line in (run / "generations.jsonl").read_text().splitlines()]
    for r in rows[:4]:  # real audio for the clips the timing reads (it checks their sha256)
        sf.write(run / r["audio"], np.zeros(16000, dtype=np.float32), 16000, subtype="PCM_16", format="WAV")
        r["audio_sha256"] = hashlib.sha256((run / r["audio"]).read_bytes()).hexdigest()
    _jsonl(run / "generations.jsonl", rows)
    m = cp.measure(run, degrade_sample=2)
    assert set(m.degrade_cpu_per_clip) == {"noisy"} and m.degrade_cpu_per_clip["noisy"] >= 0.0


def _measured() -> cp.Measured:
    def svc(name: str, calls: int, cpu: float) -> cp.ServiceCost:
        return cp.ServiceCost(name, calls, cpu, 3.0 if name == "dx" else 1.0, audio_seconds=calls * 2.0)

    return cp.Measured(
        utterances=2,
        generators=[svc("ga", 2, 2.0), svc("gb", 2, 4.0)],  # 1 and 2 CPU s per call
        detectors=[svc("dx", 12, 6.0), svc("dy", 12, 3.0)],  # 0.5 and 0.25
        scorer=svc("scorer", 4, 7.0),  # 1.75
        conditions=["noisy"],
        clip_seconds=1.5,
        generated_clip_bytes=2000.0,
        degraded_clip_bytes={"noisy": 500.0},
        row_bytes={"manifest": 10, "generations": 100, "detections": 50, "degradations": 20, "measurements": 200},
        metrics_bytes=1200,
        detector_batch=16,
        scorer_batch=8,
        trial_sets=12,  # 2 detectors x 2 conditions x (2 generators + pool)
        trials=56,  # 2 x 2 x 2 x (3 x 2 + 1)
        trial_bytes=10.0,
        metrics_cpu_seconds=10.0,
        degrade_cpu_per_clip={"noisy": 0.02},
    )


COSTS = cp.Costs(orchestrator_cpu_per_row=0.01, merge_cpu_per_row=0.001, set_cpu=0.5, trial_cpu=0.01,
                 cores_per_replica=1.0, efficiency=0.5)  # fmt: skip
TARGET = cp.Target(utterances=10, generators=4, detectors=2, conditions=3)  # 50 clips per detector and condition


def test_volumes_by_hand() -> None:
    v = cp.volumes(_measured(), TARGET)
    assert v["Generate requests"] == 40
    assert v["detection scores"] == 2 * 3 * 50
    assert v["ScoreBatch requests"] == 2 * 3 * 4  # ceil(50 / 16) batches per detector and condition
    assert v["MeasureClips requests"] == 5
    assert v["degradations"] == 100
    assert v["rows"] == 10 + 40 + 300 + 100 + 40
    assert v["generated audio bytes"] == 40 * 2000 and v["degraded audio bytes"] == 100 * 500
    assert v["JSONL bytes"] == 10 * 10 + 40 * 100 + 300 * 50 + 100 * 20 + 40 * 200
    assert v["trial sets"] == pytest.approx(2 * 3 * 5)  # D x C x (G + 1)
    assert v["trials"] == pytest.approx(2 * 3 * 10 * 13)  # D x C x U x (3G + 1)
    assert v["metrics bytes"] == pytest.approx(1200 * 30 / 12)
    assert v["run store bytes"] == pytest.approx(80000 + 50000 + 29100 + 3000)
    assert v["DetectionMetrics request bytes"] == pytest.approx(780 * 10.0)
    assert cp.memory_bytes(_measured(), TARGET, COSTS, shards=4) == pytest.approx(29100 / 4 * 1.2)


def test_stage_work_and_wall_by_hand() -> None:
    m = _measured()
    work = cp.stage_work(m, TARGET, COSTS)
    assert work["generate"] == (10 * 4 * 1.5, 10 * 2.0)  # mean over generators; the slowest one's share
    assert work["detect"] == (2 * 3 * 50 * 0.375, 3 * 50 * 0.5)
    assert work["measure"] == (40 * 1.75, 40 * 1.75)
    assert work["orchestrator"][0] == pytest.approx(490 * 0.01 + 100 * 0.02)
    assert work["metrics"][0] == pytest.approx(30 * 0.5 + 780 * 0.01)
    scaled = cp.Costs(0.01, 0.001, 0.5, 0.01, 1.0, 0.5, metrics_scale=1.5)  # as measured / as modelled
    assert cp.stage_work(m, TARGET, scaled)["metrics"][0] == pytest.approx(1.5 * 22.8)

    one = cp.wall_seconds(m, TARGET, COSTS, replicas=2, shards=1)  # 2 replicas x 1 core x 0.5 = 1 lane
    assert one["detect (wall)"] == 75.0 and one["measure (wall)"] == 70.0 and one["pipeline"] == 75.0
    assert one["start-up"] == 3.0 and one["merge"] == 0.0
    assert one["total"] == pytest.approx(3.0 + 75.0 + 22.8)
    four = cp.wall_seconds(m, TARGET, COSTS, replicas=8, shards=4)  # 4 lanes: detection 18.75 s
    assert four["detect (wall)"] == 18.75 and four["orchestrator (wall)"] == pytest.approx(6.9 / 4)
    assert four["merge"] == pytest.approx(490 * 0.001)
    assert four["total"] == pytest.approx(3.0 + 18.75 + 22.8 + 0.49)
    # the orchestrator bounds the pipeline once the services have replicas enough
    slow = cp.Costs(1.0, 0.0, 0.0, 0.0, 1.0, 1.0)
    assert cp.wall_seconds(m, TARGET, slow, 64, 1)["pipeline"] == pytest.approx(490 * 1.0 + 2.0)


def test_bootstrap_costs_are_positive_and_grow_with_trials() -> None:
    per_set, per_trial = cp.bootstrap_costs(resamples=20, sizes=(40, 400))
    assert per_set >= 0.0 and per_trial > 0.0 and math.isfinite(per_set)


def test_replicas_by_work_by_hand() -> None:
    # the target's services: ga and gb stand for 2 generators each (10 and 20 CPU s), dx 75, dy 37.5,
    # the scorer 70; one replica each takes 7 cores
    services = {s.name: (s.count, s.cpu_seconds) for s in cp.target_services(_measured(), TARGET)}
    assert services == {"ga": (2, 10), "gb": (2, 20), "dx": (1, 75), "dy": (1, 37.5), "scorer": (1, 70)}
    # 3 more cores: dx (75 -> 37.5), the scorer (70 -> 35), dx again (37.5 -> 25); dy's 37.5 is left
    replicas, used, wall = cp.balanced(_measured(), TARGET, COSTS, cores=10)
    assert replicas == {"ga": 1, "gb": 1, "dx": 3, "dy": 1, "scorer": 2} and used == 10
    assert wall == pytest.approx(37.5 / 0.5)
    few, used, slow = cp.balanced(_measured(), TARGET, COSTS, cores=3)  # too few cores: one replica each
    assert set(few.values()) == {1} and used == 7 and slow == pytest.approx(75 / 0.5)
    _, used, wall = cp.balanced(_measured(), TARGET, COSTS, cores=100)
    # within the cores, and no worse than replicas in proportion to work (4, 8, 30, 15, 28: 97 cores, 5 s)
    assert used <= 100 and 242.5 / (100 * 0.5) <= wall <= 5.0

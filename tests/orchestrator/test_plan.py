"""The plan: the expected work of a run, counted by hand for a small manifest, and read back from a
run.json the way ``status`` does."""

from __future__ import annotations

from voxarena.orchestrator.run.config import I2DConfig, ProtocolConfig
from voxarena.orchestrator.run.manifest import ManifestItem, ManifestSet
from voxarena.orchestrator.run.plan import Plan, reference_items
from voxarena.orchestrator.store.records import GenerationRecord


def item(i: int, speaker: str, **labels: str) -> ManifestItem:
    return ManifestItem(
        id=f"u{i}",
        index=i,
        seed=100 + i,
        speaker=speaker,
        corpus="c",
        subset="",
        audio_path=f"/a/{i}.wav",
        audio_sha256="0" * 64,
        duration=1.0,
        sample_rate=16000,
        text="HI",
        text_source="transcript",
        text_sha256="",
        labels=labels,
    )


# 4 bona fide items of speakers a, a, b, c and one corpus spoof (scored, never a generator's input)
MANIFEST = ManifestSet(
    [item(0, "a"), item(1, "a"), item(2, "b"), item(3, "c"), item(4, "d", key="spoof", attack="A07")]
)
PROTOCOL = ProtocolConfig(tasks=["TTS", "CLONE", "RECONSTRUCT"], i2d=I2DConfig(iterations=3))


def make_plan(measures: bool = True) -> Plan:
    # "gen" declares TTS and CONVERT (CONVERT not configured); "cloner" declares CLONE only
    return Plan(MANIFEST, PROTOCOL, {"gen": {"TTS", "CONVERT"}, "cloner": {"CLONE"}}, ["d1", "d2"], ["phone"], measures)


def test_the_target_speaker_is_the_next_speakers_first_item():
    refs = {k: v.id for k, v in reference_items(MANIFEST).items()}
    assert refs == {"u0": "u2", "u1": "u2", "u2": "u3", "u3": "u0"}


def test_generations_configured_and_declared_with_i2d_depth():
    plan = make_plan()
    assert [(j.generator, j.task, j.item.id) for j in plan.jobs] == [("gen", "TTS", f"u{i}") for i in range(4)] + [
        ("cloner", "CLONE", f"u{i}") for i in range(4)
    ]
    assert plan.generation_ids("gen") == ["gen|TTS|u0", "gen|TTS|u1", "gen|TTS|u2", "gen|TTS|u3"]
    assert plan.generation_ids("cloner")[:3] == ["cloner|CLONE|u0", "cloner|CLONE|u0|i2d2", "cloner|CLONE|u0|i2d3"]
    assert plan.n_generations() == 4 + 4 * 3
    assert plan.job("cloner", "CLONE", "u3").reference.id == "u0"


def test_detections_one_shot_under_every_condition_iterations_clean_only():
    plan = make_plan()
    assert plan.conditions == ["clean", "phone"]
    assert plan.conditions_for(1) == ["clean", "phone"] and plan.conditions_for(2) == ["clean"]
    # 5 corpus clips and 8 one-shot clips x 2 detectors x 2 conditions, 8 later iterations x 2 detectors x clean
    assert plan.n_detections() == (5 + 8) * 2 * 2 + 8 * 2
    generated = {
        "gen|TTS|u0": GenerationRecord(
            id="gen|TTS|u0", status="ok", generator="gen", task="TTS", item="u0", seed=0, iteration=1
        ),
        "cloner|CLONE|u0|i2d2": GenerationRecord(
            id="cloner|CLONE|u0|i2d2", status="ok", generator="cloner", task="CLONE", item="u0", seed=0, iteration=2
        ),
    }
    assert plan.detection_ids("d1", "phone", generated) == [f"d1@phone|u{i}" for i in range(5)] + [
        "d1@phone|gen|TTS|u0"
    ]
    assert len(plan.detection_ids("d2", "clean", generated)) == 5 + 2


def test_measurements_only_when_metrics_are_asked_for_and_never_of_partial_fakes():
    def row(i: str, task: str) -> GenerationRecord:
        return GenerationRecord(id=i, status="ok", generator="gen", task=task, item="u1", seed=0)

    rows = {"x": row("x", "TTS"), "y": row("y", "CONVERT"), "z": row("z", "PARTIAL_VOCODED")}
    assert make_plan().measurement_ids(rows) == ["x", "y"] and make_plan().n_measurements() == 16
    assert make_plan(measures=False).measurement_ids(rows) == [] and make_plan(measures=False).n_measurements() == 0


def test_the_plan_of_a_run_record_is_the_plan_of_its_config():
    record = {
        "config": {
            "generators": {"gen": {}, "cloner": {}},
            "detectors": {"d1": {}, "d2": {}},
            "conditions": {"phone": [{"codec": "gsm"}]},
            "scorer": {"metrics": ["rtf"]},
            "protocol": PROTOCOL.model_dump(mode="json"),
        },
        "services": {"gen": {"info": {"tasks": ["TTS", "CONVERT"]}}, "cloner": {"info": {"tasks": ["CLONE"]}}},
    }
    plan, direct = Plan.of_record(record, MANIFEST), make_plan()
    assert plan.generators == direct.generators == ["gen", "cloner"]
    assert [j.id() for j in plan.jobs] == [j.id() for j in direct.jobs]
    assert (plan.n_generations(), plan.n_detections(), plan.n_measurements()) == (
        direct.n_generations(),
        direct.n_detections(),
        direct.n_measurements(),
    )
    # a generator whose GetInfo never made it into run.json (the run stopped before) expects nothing
    del record["services"]["cloner"]
    assert Plan.of_record(record, MANIFEST).generation_ids("cloner") == []

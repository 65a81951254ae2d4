"""Source tracing in a run: a tracer (dummy-tracer, family level) is asked for every clip; its answer is
kept in the detection row and measured against the arena's own truth, per channel condition, equal to an
independent computation with scikit-learn; a generator whose family the tracer does not declare is its
"unknown", and the open-set figures come."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, f1_score, roc_auc_score

from voxarena.orchestrator.metrics.attribution import attribution_tables
from voxarena.orchestrator.store.records import DetectionRecord
from voxarena.v1 import generator_pb2


@pytest.fixture(scope="module")
def traced(tmp_path_factory, speech_dir, make_config, run_arena):
    tmp = tmp_path_factory.mktemp("tracing")
    config = make_config(
        tmp,
        speech_dir,
        **{
            "dataset.max_items": 4,
            "protocol.tasks": ["TTS", "RECONSTRUCT"],
            "generators": {"dummy-generator": {}},
            "detectors": {"dummy-tracer": {}},
            "conditions": {"noise-10db": [{"noise_snr_db": 10}]},
        },
    )
    run_arena(config, tmp / "run")
    return tmp / "run"


def test_every_clip_has_its_attribution_and_the_table_matches_scikit_learn(traced, read_csv):
    rows = [
        DetectionRecord.from_dict(json.loads(line)) for line in (traced / "detections.jsonl").read_text().splitlines()
    ]
    assert all(r.ok and set(r.attribution) == {"family"} for r in rows)
    table = {(r["level"], r["condition"]): r for r in read_csv(traced / "metrics" / "attribution.csv")}
    assert set(table) == {("family", "clean"), ("family", "noise-10db")}
    labels = ["RULE_BASED_FORMANT", "VOCODER_DSP", "unknown"]
    for (_, condition), row in table.items():
        spoofs = [r for r in rows if r.kind == "spoof" and r.channel == condition]
        predicted = [labels[int(np.argmax([r.attribution["family"][k] for k in labels]))] for r in spoofs]
        truth = ["VOCODER_DSP"] * len(spoofs)  # dummy-generator's family, which the tracer declares
        assert int(row["n_clips"]) == int(row["n_known"]) == len(spoofs) and row["n_unseen"] == "0"
        assert float(row["accuracy"]) == pytest.approx(accuracy_score(truth, predicted))
        present = sorted(set(truth) | set(predicted))
        assert float(row["macro_f1"]) == pytest.approx(f1_score(truth, predicted, labels=present, average="macro"))
        assert row["open_eer"] == "nan"  # no unseen system in this run
    confusion = json.loads((traced / "metrics" / "attribution_confusion.json").read_text())
    clean = confusion["dummy-tracer"]["family"]["clean"]
    assert clean["labels"] == labels and sum(map(sum, clean["matrix"])) == int(table[("family", "clean")]["n_known"])


def test_the_report_shows_the_tracing_table_and_a_confusion_heatmap_per_condition(traced):
    from voxarena.orchestrator.report.build import write_report

    json_path, html_path = write_report(traced)
    rep = json.loads(json_path.read_text())
    assert {(r["level"], r["condition"]) for r in rep["attribution"]["table"]} == {
        ("family", "clean"),
        ("family", "noise-10db"),
    }
    html = html_path.read_text()
    assert "<h2>Source tracing: which system made it</h2>" in html
    assert html.count("aria-label='confusion dummy-tracer family") == 2


def test_a_family_the_tracer_does_not_declare_is_its_unknown_and_open_set_figures_come():
    labels = ["VOCODER_DSP", "VOCODER_GAN", "unknown"]
    rng = np.random.default_rng(0)
    rows, truth, p_unknown = [], [], []
    for k in range(24):
        generator = ("dsp", "neural", "novel")[k % 3]
        p = rng.dirichlet([1, 1, 1])
        rows.append(
            DetectionRecord(
                id=f"t|c{k}", status="ok", detector="t", clip=f"c{k}", kind="spoof", generator=generator, task="TTS",
                item=f"i{k}", speaker=f"s{k % 6}", score=0.0, attribution={"family": dict(zip(labels, p.tolist()))},
            )
        )  # fmt: skip
        truth.append(generator == "novel")
        p_unknown.append(p[2])
    store = SimpleNamespace(detections=SimpleNamespace(sorted_rows=lambda: rows))
    cfg = SimpleNamespace(
        scorer=SimpleNamespace(bootstrap_resamples=0, confidence=0.95), protocol=SimpleNamespace(seed=0)
    )
    infos = {
        name: generator_pb2.GeneratorInfo(family=family)
        for name, family in (
            ("dsp", generator_pb2.VOCODER_DSP),
            ("neural", generator_pb2.VOCODER_GAN),
            ("novel", generator_pb2.NEURAL_CODEC_LANGUAGE_MODEL),
        )
    }
    (row,), _ = attribution_tables(store, cfg, infos)
    assert (row["n_known"], row["n_unseen"]) == (16, 8)
    assert row["open_auroc"] == pytest.approx(roc_auc_score(truth, p_unknown))

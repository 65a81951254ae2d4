"""Score fusion: the config entry, the calibration split, fused rows from stored member rows, and a
run end to end with two test-double detectors (dummy-detector, raw-detector) and their fusion."""

from __future__ import annotations

import hashlib
import json
import shutil

import numpy as np
import pytest
import yaml

from voxarena.orchestrator.metrics.fusion import calibration_items, fuse
from voxarena.orchestrator.report.build import build_report
from voxarena.orchestrator.report.html import render_html
from voxarena.orchestrator.run.config import CalibrationSplitConfig, ConfigError, load_config
from voxarena.orchestrator.run.manifest import ManifestItem, ManifestSet
from voxarena.orchestrator.run.status import run_status
from voxarena.orchestrator.store.records import DetectionRecord
from voxarena.orchestrator.store.run_store import RunStore, detection_id

RAW_DETECTOR = {
    "module": "voxarena.services.testing.raw_faulty_services",
    "args": ["--role", "detector", "--fault", "none"],
}


def write_config(tmp_path, detectors: dict, protocol: dict | None = None):
    cfg = {
        "dataset": {"kind": "table", "root": "m.csv"},
        "generators": {"dummy-generator": {}},
        "detectors": detectors,
        "protocol": protocol or {"calibration_split": {"speaker_fraction": 0.5}},
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


# ------------------------------------------------------------------------------------------- config
def test_a_fused_detector_is_a_detector_entry_with_a_fusion_key(tmp_path):
    cfg = load_config(
        write_config(tmp_path, {"a": {}, "b": {"address": "h:1"}, "ab": {"fusion": {"members": ["b", "a"]}}})
    )
    assert list(cfg.detectors) == ["a", "b", "ab"]
    assert list(cfg.detector_services()) == ["a", "b"] and cfg.fused_detectors() == {"ab": ["b", "a"]}
    assert cfg.model_dump(mode="json")["detectors"]["ab"] == {"fusion": {"members": ["b", "a"]}}


@pytest.mark.parametrize(
    "detectors, protocol, message",
    [
        (
            {"a": {}, "f": {"fusion": {"members": ["a", "x"]}}},
            None,
            r"detectors\.f\.fusion\.members: 'x' is not a detector of this run \(its detectors: a\)",
        ),
        (
            {"a": {}, "b": {}, "f": {"fusion": {"members": ["a", "b"]}}, "g": {"fusion": {"members": ["a", "f"]}}},
            None,
            r"detectors\.g\.fusion\.members: 'f' is a fused detector itself",
        ),
        (
            {"a": {}, "f": {"fusion": {"members": ["a"]}}},
            None,
            r"detectors\.f\.fusion\.members: a fusion combines two or more",
        ),
        (
            {"a": {}, "f": {"fusion": {"members": ["a", "a"]}}},
            None,
            r"detectors\.f\.fusion\.members: a member is named twice",
        ),
        (
            {"a": {}, "b": {}, "f": {"fusion": {"members": ["a", "b"]}}},
            {"seed": 1},
            r"detectors\.f: a fused detector is fitted on the run's calibration split; "
            r"declare protocol\.calibration_split",
        ),
        (
            {"a": {}, "b": {}, "f": {"fusion": {"members": ["a", "b"], "weights": [1, 2]}}},
            None,
            r"c\.yaml: detectors\.f\.fusion\.weights: unknown key",
        ),
        (
            {"a": {}, "b": {}, "f": {"fusion": {"members": ["a", "b"]}, "address": "h:1"}},
            None,
            r"c\.yaml: detectors\.f\.address: unknown key",
        ),
        ({"a": {"adress": "h:1"}}, None, r"c\.yaml: detectors\.a\.adress: unknown key"),
        (
            {"a": {}},
            {"calibration_split": {"label": "subset", "speaker_fraction": 0.2}},
            r"protocol\.calibration_split: .*set exactly one of label \(with values\) and speaker_fraction",
        ),
        ({"a": {}}, {"calibration_split": {"label": "subset"}}, r"label 'subset' needs values"),
        ({"a": {}}, {"calibration_split": {"speaker_fraction": 1.0}}, r"protocol\.calibration_split\.speaker_fraction"),
    ],
)
def test_config_errors_name_the_key(tmp_path, detectors, protocol, message):
    with pytest.raises(ConfigError, match=message):
        load_config(write_config(tmp_path, detectors, protocol))


# ------------------------------------------------------------------------------------------- split
def manifest_of(speakers: dict[str, int], subset_of=lambda s: "dev") -> ManifestSet:
    items = [
        ManifestItem(
            id=f"{s}-{j}",
            index=0,
            seed=0,
            speaker=s,
            corpus="c",
            subset=subset_of(s),
            audio_path="",
            audio_sha256="",
            duration=1.0,
            sample_rate=16000,
            text="",
            text_source="none",
            text_sha256="",
            labels={"subset": subset_of(s)},
        )
        for s, n in speakers.items()
        for j in range(n)
    ]
    return ManifestSet(items)


def test_speaker_fraction_sets_aside_whole_speakers_by_their_seeded_hash():
    manifest = manifest_of({f"spk{k}": 1 + k % 3 for k in range(10)})
    chosen = calibration_items(manifest, CalibrationSplitConfig(speaker_fraction=0.3), seed=5)
    # By hand: the 3 speakers (0.3 x 10) whose sha256("5:<speaker>") sorts first.
    expected = sorted((hashlib.sha256(f"5:spk{k}".encode()).hexdigest(), f"spk{k}") for k in range(10))[:3]
    speakers = {s for _, s in expected}
    assert chosen == {it.id for it in manifest if it.speaker in speakers}
    assert chosen != calibration_items(manifest, CalibrationSplitConfig(speaker_fraction=0.3), seed=6)
    # Half rounds up; at least one speaker on each side.
    assert (
        len({i.split("-")[0] for i in calibration_items(manifest, CalibrationSplitConfig(speaker_fraction=0.25), 5)})
        == 3
    )
    assert (
        len({i.split("-")[0] for i in calibration_items(manifest, CalibrationSplitConfig(speaker_fraction=0.01), 5)})
        == 1
    )
    assert (
        len({i.split("-")[0] for i in calibration_items(manifest, CalibrationSplitConfig(speaker_fraction=0.99), 5)})
        == 9
    )


def test_a_label_split_and_what_it_refuses():
    manifest = manifest_of({"a": 2, "b": 3, "c": 1}, lambda s: "dev" if s == "b" else "test")
    assert calibration_items(manifest, CalibrationSplitConfig(label="subset", values=["dev"]), 0) == {
        "b-0",
        "b-1",
        "b-2",
    }
    assert calibration_items(manifest, None, 0) == frozenset()
    with pytest.raises(
        ValueError, match=r"no item has subset in \['train'\] \(values of 'subset' in the manifest: dev, test\)"
    ):
        calibration_items(manifest, CalibrationSplitConfig(label="subset", values=["train"]), 0)
    with pytest.raises(ValueError, match="selects every item"):
        calibration_items(manifest, CalibrationSplitConfig(label="subset", values=["dev", "test"]), 0)
    with pytest.raises(ValueError, match="two or more speakers"):
        calibration_items(manifest_of({"a": 4}), CalibrationSplitConfig(speaker_fraction=0.5), 0)


# ------------------------------------------------------------------------------------------- fused rows
def detection(
    detector: str, clip: str, item: str, kind: str, score: float | None, condition: str = "clean", iteration: int = 1
) -> DetectionRecord:
    row = {
        "id": detection_id(detector, condition, clip),
        "detector": detector,
        "condition": condition,
        "clip": clip,
        "kind": kind,
        "generator": "bonafide" if kind == "bonafide" else "g",
        "task": "",
        "iteration": iteration,
        "item": item,
        "speaker": item[0],
    }
    if score is None:
        row |= {"status": "failed", "failure": "service_error", "code": "INTERNAL", "reason": "boom"}
    else:
        row |= {"status": "ok", "score": score, "is_llr": False}
    return DetectionRecord.from_dict(row)


def test_fused_rows_from_stored_rows(tmp_path):
    rng = np.random.default_rng(0)
    store = RunStore(tmp_path)
    calibration = frozenset(f"c{k}" for k in range(30))
    truth = {}
    for item in [f"c{k}" for k in range(30)] + [f"e{k}" for k in range(10)]:
        for kind, mu in (("bonafide", 1.0), ("spoof", -1.0)):
            clip = item if kind == "bonafide" else f"g|TTS|{item}"
            x = rng.normal(mu, 1.0, 2) * [1.0, 3.0] + [0.0, 5.0]
            truth[clip] = x
            for m, s in zip(("m1", "m2"), x):
                store.detections.append(detection(m, clip, item, kind, float(s)))
                if item.startswith("e"):  # conditions and I2D clips are fused too, never fitted on
                    store.detections.append(detection(m, clip, item, kind, float(s) + 9, condition="mp3"))
    store.detections.append(detection("m1", "g|TTS|e0|i2d2", "e0", "spoof", -3.0, iteration=2))
    store.detections.append(detection("m2", "g|TTS|e0|i2d2", "e0", "spoof", None, iteration=2))
    store.detections.append(
        detection("m1", "g|TTS|c0|i2d2", "c0", "spoof", 50.0, iteration=2)
    )  # an I2D clip: not fitted on
    store.detections.append(detection("m2", "g|TTS|c0|i2d2", "c0", "spoof", 50.0, iteration=2))
    record = fuse(store, {"f": ["m1", "m2"]}, calibration)["f"]

    # The fit saw the clean one-shot clips of the calibration items only, members in config order.
    from sklearn.linear_model import LogisticRegression

    bona = np.array([truth[f"c{k}"] for k in range(30)])
    spoof = np.array([truth[f"g|TTS|c{k}"] for k in range(30)])
    t = 31 / 32  # Platt targets, N+ = N- = 30
    x = np.vstack([bona, bona, spoof, spoof])
    y = np.r_[np.ones(30), np.zeros(30), np.ones(30), np.zeros(30)]
    w = np.r_[np.full(30, t), np.full(30, 1 - t), np.full(30, 1 - t), np.full(30, t)]
    ref = LogisticRegression(C=np.inf, tol=1e-12, max_iter=10000).fit(x, y, sample_weight=w)
    assert record["members"] == ["m1", "m2"] and record["n_bonafide"] == 30 and record["n_spoof"] == 30
    np.testing.assert_allclose(record["weights"], ref.coef_[0], rtol=1e-4)
    assert record["bias"] == pytest.approx(ref.intercept_[0], rel=1e-4)

    rows = store.detections.rows
    fused = rows["f|g|TTS|e3"]
    assert fused.ok and fused.is_llr and fused.item == "e3" and fused.kind == "spoof"
    expected = (
        record["weights"][0] * truth["g|TTS|e3"][0] + record["weights"][1] * truth["g|TTS|e3"][1] + record["bias"]
    )
    assert fused.score == pytest.approx(expected, rel=1e-12)
    assert rows["f@mp3|e3"].score == pytest.approx(
        record["weights"][0] * (truth["e3"][0] + 9) + record["weights"][1] * (truth["e3"][1] + 9) + record["bias"]
    )
    failed = rows["f|g|TTS|e0|i2d2"]
    assert failed.status == "failed" and failed.failure == "upstream_failed"
    assert failed.reason == "f|g|TTS|e0|i2d2: member m2 failed on it (INTERNAL)"
    assert sum(r.detector == "f" for r in rows.values()) == 80 + 20 + 2  # clean, mp3 and the two I2D clips

    before = (tmp_path / "detections.jsonl").read_bytes()
    assert fuse(store, {"f": ["m1", "m2"]}, calibration)["f"] == record
    assert (tmp_path / "detections.jsonl").read_bytes() == before  # nothing new: nothing appended


def test_a_fusion_that_cannot_be_fitted_fails_every_row_with_the_reason(tmp_path):
    store = RunStore(tmp_path)
    for k in range(4):
        for m in ("m1", "m2"):
            store.detections.append(detection(m, f"c{k}", f"c{k}", "bonafide", float(k + (m == "m2"))))
            store.detections.append(detection(m, f"g|TTS|e{k}", f"e{k}", "spoof", float(-k)))
    record = fuse(store, {"f": ["m1", "m2"]}, frozenset(f"c{k}" for k in range(4)))["f"]  # no spoof calibrates
    assert record["error"] == (
        "f cannot be fitted on the calibration split: the fit needs both classes, got 4 bona fide and 0 spoof trials"
    )
    fused = [r for r in store.detections.rows.values() if r.detector == "f"]
    assert len(fused) == 8 and all(r.status == "failed" and r.reason.endswith(record["error"]) for r in fused)


# ------------------------------------------------------------------------------------------- a run
def test_a_run_with_a_fused_detector(tmp_path, synthetic_dataset_factory, make_config, run_arena, read_csv):
    rows = [
        {
            "id": f"s{k}-{j}",
            "speaker": f"s{k}",
            "f0": 100 + 25 * k,
            "seconds": 0.8 + 0.15 * j + 0.05 * k,
            "noise_fraction": 0.05 + 0.1 * j,
        }
        for k in range(6)
        for j in range(2)
    ]
    dataset = {"kind": "table", "root": str(synthetic_dataset_factory(tmp_path / "data", rows))}
    config = make_config(
        tmp_path,
        dataset,
        **{
            "dataset.max_items": None,
            "protocol.calibration_split": {"speaker_fraction": 0.5},
            "detectors": {
                "dummy-detector": {},
                "raw-detector": RAW_DETECTOR,
                "fused": {"fusion": {"members": ["dummy-detector", "raw-detector"]}},
            },
        },
    )
    out = tmp_path / "run"
    record = run_arena(config, out)

    split = record["calibration_split"]
    calibrating = set(split["calibration_speakers"])
    assert len(calibrating) == 3 and split["calibration"]["items"] == 6 and split["evaluation"]["items"] == 6
    assert split["shared_speakers"] == 0
    fit = json.loads((out / "run.json").read_text())["fusion"]["fused"]
    assert fit["members"] == ["dummy-detector", "raw-detector"] and len(fit["weights"]) == 2
    assert all(np.isfinite(fit["weights"])) and np.isfinite(fit["bias"])
    assert fit["n_bonafide"] == 6 and fit["n_spoof"] == 12  # 6 calibration items, each spoofed by TTS and RECONSTRUCT

    # Every detector, fused included, is measured on the evaluation items only: 6 bona fide, 12 spoofs.
    det = read_csv(out / "metrics" / "detection_metrics.csv")
    pooled = {r["detector"]: r for r in det if r["generator"] == "pooled"}
    assert set(pooled) == {"dummy-detector", "raw-detector", "fused"}
    assert {(r["n_bonafide"], r["n_spoof"]) for r in pooled.values()} == {("6", "12")}
    assert pooled["fused"]["scores_are_llr"] == "True" and pooled["raw-detector"]["scores_are_llr"] == "False"
    assert {r["detector"] for r in read_csv(out / "metrics" / "detection_by_label.csv")} == set(pooled)
    dets = [json.loads(line) for line in (out / "detections.jsonl").read_text().splitlines()]
    fused = [r for r in dets if r["detector"] == "fused"]
    assert len(fused) == 36 and all(r["status"] == "ok" for r in fused)  # 12 items + 24 spoofs
    held_out = {r["item"] for r in fused if r["speaker"] in calibrating}
    assert len(held_out) == 6
    members = {(r["detector"], r["clip"]): r["score"] for r in dets if r["condition"] == "clean"}
    for r in fused:  # the stored LLR is the recorded map of the members' stored scores
        x = [members[(m, r["clip"])] for m in fit["members"]]
        assert r["score"] == pytest.approx(fit["weights"][0] * x[0] + fit["weights"][1] * x[1] + fit["bias"], rel=1e-12)

    st = run_status(out)
    assert (
        st["complete"]
        and {"service": "fused", "expected": 36, "done": 36}.items()
        <= next(c for c in st["coverage"] if c["service"] == "fused").items()
    )
    rep = build_report(out)
    assert rep["detectors"] == ["dummy-detector", "fused", "raw-detector"]  # config order (make_config sorts keys)
    assert len(rep["det_curves"]["fused"]) == 1 + 6 + 12  # a point per distinct evaluation score, no more
    assert rep["provenance"]["fusion"]["fused"]["weights"] == fit["weights"]
    assert 'id="fusion"' in render_html(rep) and "weight raw-detector" in render_html(rep)

    metrics = {p.name: p.read_bytes() for p in (out / "metrics").iterdir()}
    detections = (out / "detections.jsonl").read_bytes()
    run_arena(config, out)  # resume a finished run: nothing new, the same bytes
    assert (out / "detections.jsonl").read_bytes() == detections
    assert {p.name: p.read_bytes() for p in (out / "metrics").iterdir()} == metrics
    assert json.loads((out / "run.json").read_text())["fusion"] == {"fused": fit}

    # A run killed after detection, before fusion and metrics: its resume fuses and measures the same.
    cut = tmp_path / "cut"
    shutil.copytree(out, cut, ignore=shutil.ignore_patterns("metrics", "report.*"))
    (cut / "detections.jsonl").write_text(
        "".join(line + "\n" for line in detections.decode().splitlines() if json.loads(line)["detector"] != "fused")
    )
    run_arena(config, cut)
    assert (cut / "detections.jsonl").read_bytes() == detections
    assert {p.name: p.read_bytes() for p in (cut / "metrics").iterdir()} == metrics

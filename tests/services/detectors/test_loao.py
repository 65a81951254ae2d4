"""Leave-one-attack-out calibration: each fold trains without one seen generator (and early-stops without it),
scores every dev clip, the pooled scores are calibrated, and a finished fold is reused on a rerun."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from voxarena.services.detectors.calibration import fit_llr_calibration
from voxarena.services.detectors.training.data import TrainingClip
from voxarena.services.detectors.training.loao import fold_split, loao_calibration
from voxarena.stats.detection import cllr

GENERATORS = ("gen-a", "gen-b", "gen-c")


def _rows() -> list[TrainingClip]:
    rows = []
    for k in range(12):
        split = "dev" if k < 4 else "train"
        rows.append(TrainingClip(f"b{k}", "", "0" * 64, "bonafide", f"s{k}", "", split))
        rows.extend(TrainingClip(f"{g}-{k}", "", "1" * 64, "spoof", f"s{k}", g, split) for g in GENERATORS)
    return rows


class FakeTrainer:
    """A 'detector' that knows the generators it was trained on: bona fide scores 2, a trained attack
    -2, an unseen attack +3 (it takes it for more bona fide than bona fide), plus a small per-clip offset."""

    def __init__(self) -> None:
        self.calls: list[tuple[list, list]] = []

    def train_into(self, train: list, dev: list, out: Path) -> dict:
        self.calls.append((train, dev))
        out.mkdir(parents=True, exist_ok=True)
        (out / "seen.txt").write_text(",".join(sorted({r.generator for r in train if r.label == "spoof"})))
        return {"epochs": 1}

    @staticmethod
    def score_raw(out: Path, rows: list) -> np.ndarray:
        seen = set((out / "seen.txt").read_text().split(","))
        return np.array(
            [
                (2.0 if r.label == "bonafide" else -2.0 if r.generator in seen else 3.0) + 0.01 * int(r.id[-1])
                for r in rows
            ]
        )


def test_fold_split_holds_the_attack_out_of_training_and_early_stopping():
    train, stop, scored = fold_split(_rows(), "gen-b")
    assert {r.generator for r in train if r.label == "spoof"} == {"gen-a", "gen-c"} and all(
        r.split == "train" for r in train
    )
    assert "gen-b" not in {r.generator for r in stop} and all(r.split == "dev" for r in stop)
    assert {r.generator for r in scored if r.label == "spoof"} == set(GENERATORS) and len(scored) == 16


def test_pooled_fold_scores_are_calibrated_and_reused(tmp_path):
    rows = _rows()
    trainer = FakeTrainer()
    record = loao_calibration("fake", rows, tmp_path, 7, None, trainer.train_into, trainer.score_raw)
    assert len(trainer.calls) == 3
    folds = {f["held_out"]: f for f in record["loao_folds"]}
    assert set(folds) == set(GENERATORS)
    assert all(f["dev_eer_seen"] == 0 and f["dev_eer_held_out"] == 1 for f in folds.values())
    # Independent: pool the scores each fold's detector gives the 16 dev clips, fit, and score Cllr.
    bona, spoof = [], []
    for g in GENERATORS:
        seen = set(GENERATORS) - {g}
        for r in (r for r in rows if r.split == "dev"):
            s = (2.0 if r.label == "bonafide" else -2.0 if r.generator in seen else 3.0) + 0.01 * int(r.id[-1])
            (bona if r.label == "bonafide" else spoof).append(s)
    a, b = fit_llr_calibration(np.array(bona), np.array(spoof))
    assert (record["a"], record["b"]) == pytest.approx((a, b))
    assert record["n_bonafide"] == 12 and record["n_spoof"] == 36
    assert record["target_bonafide"] == pytest.approx(13 / 14) and record["target_spoof"] == pytest.approx(1 / 38)
    assert record["dev_cllr_pooled"] == pytest.approx(cllr(a * np.array(bona) + b, a * np.array(spoof) + b), abs=1e-6)
    # One unseen attack in three scores above bona fide: the calibration must stay modest, not confident.
    assert 0 < a * 2.0 + b < 3 and record["dev_cllr_pooled"] > 0.3
    # A rerun reuses every fold; a changed seed retrains them.
    loao_calibration("fake", rows, tmp_path, 7, None, trainer.train_into, trainer.score_raw)
    assert len(trainer.calls) == 3
    loao_calibration("fake", rows, tmp_path, 8, None, trainer.train_into, trainer.score_raw)
    assert len(trainer.calls) == 6


def test_refit_refuses_a_data_run_the_weights_were_not_trained_on(tmp_path):
    import json

    from voxarena.services.detectors.training.api import refit_calibration

    items = [
        {"id": f"{s}-1-0000", "speaker": str(s), "audio_path": "x.flac", "audio_sha256": "0" * 64} for s in (1, 2, 3)
    ]
    gens = [
        {
            "id": f"espeak-ng|TTS|{i['id']}",
            "item": i["id"],
            "generator": "espeak-ng",
            "status": "ok",
            "audio": "a.wav",
            "audio_sha256": "1" * 64,
        }
        for i in items
    ]
    (tmp_path / "manifest.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    (tmp_path / "generations.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gens))
    weights = Path(__file__).resolve().parents[3] / "voxarena" / "services" / "detectors" / "lfcc_gmm" / "weights"
    before = (weights / "metadata.json").read_bytes()
    with pytest.raises(SystemExit, match="clips more or fewer than the weights were trained on"):
        refit_calibration("lfcc-gmm", tmp_path, weights)
    assert (weights / "metadata.json").read_bytes() == before


def test_training_data_from_several_runs_of_one_manifest(tmp_path):
    import json

    from voxarena.services.detectors.training.data import TrainingDataError, build_training_manifest

    items = [
        {"id": f"{s}-1-0000", "speaker": str(s), "audio_path": "x.flac", "audio_sha256": "0" * 64} for s in range(6)
    ]
    gens = [
        {
            "id": f"{g}|T|{i['id']}",
            "item": i["id"],
            "generator": g,
            "status": "ok",
            "audio": f"audio/{g}.wav",
            "audio_sha256": g[0] * 64,
        }
        for i in items
        for g in ("espeak-ng", "flite")
    ]
    whole, first, second = (tmp_path / n for n in ("whole", "a", "b"))
    for d, rows in ((whole, gens), (first, gens[::2]), (second, gens[1::2])):
        d.mkdir()
        (d / "manifest.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
        (d / "generations.jsonl").write_text("".join(json.dumps(g) + "\n" for g in rows))
    one = build_training_manifest(whole, 0.34, 3)
    pooled = build_training_manifest([first, second], 0.34, 3)
    assert [r.record() for r in pooled] == [r.record() for r in one] and len(one) == 18
    assert {r.path for r in pooled if r.generator == "flite"} == {str(second / "audio/flite.wav")}
    (second / "manifest.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items[:-1]))
    with pytest.raises(TrainingDataError, match="its manifest is not"):
        build_training_manifest([first, second], 0.34, 3)


def test_refit_accepts_regenerated_spoof_bytes_but_not_another_split():
    import json
    from dataclasses import replace

    from voxarena.services.detectors.training.api import _same_clips

    weights = Path(__file__).resolve().parents[3] / "voxarena" / "services" / "detectors" / "lfcc_gmm" / "weights"
    committed = [json.loads(line) for line in (weights / "training_manifest.jsonl").read_text().splitlines()]
    rows = [
        TrainingClip(r["id"], "", r["sha256"], r["label"], r["speaker"], r["generator"], r["split"]) for r in committed
    ]
    assert _same_clips(rows, weights) == 0
    spoof = next(i for i, r in enumerate(rows) if r.label == "spoof")
    bona = next(i for i, r in enumerate(rows) if r.label == "bonafide")
    assert _same_clips([replace(r, sha256="f" * 64) if i == spoof else r for i, r in enumerate(rows)], weights) == 1
    for i, change in (
        (bona, {"sha256": "f" * 64}),
        (spoof, {"split": "dev" if rows[spoof].split == "train" else "train"}),
    ):
        with pytest.raises(SystemExit, match="differ in label, speaker, split or bona fide bytes"):
            _same_clips([replace(r, **change) if k == i else r for k, r in enumerate(rows)], weights)


@pytest.mark.slow
def test_lfcc_gmm_trained_end_to_end_with_a_loao_calibration(tiny_training_run, tmp_path):
    """A tiny real run: 6 speakers of real speech, two synthetic 'generators'; the served detector's LLRs
    are a * raw + b with the calibration fitted on the two folds' pooled dev scores."""
    import json

    from voxarena.codec import read_audio_file
    from voxarena.services.detectors.training.api import model_class, train_detector

    items = tiny_training_run
    out = tmp_path / "weights"
    meta = train_detector("lfcc-gmm", tmp_path, out, seed=5, dev_fraction=0.34)
    cal = meta["calibration"]
    assert [f["held_out"] for f in cal["loao_folds"]] == ["clipped", "tone"]
    assert cal["n_bonafide"] == 2 * 2 and cal["n_spoof"] == 2 * 4 and cal["a"] > 0
    assert meta["dev_cllr"] == cal["dev_cllr_pooled"] and np.isfinite(meta["dev_cllr"])
    model = model_class("lfcc-gmm")(out)
    model.load()
    clip = read_audio_file(items[0]["audio_path"])
    raw = model.score_batch([clip])[0]
    assert model.llr_scores([clip])[0] == pytest.approx(cal["a"] * raw + cal["b"])
    assert json.loads((out / "metadata.json").read_text())["calibration"]["method"].endswith("Platt target smoothing")

"""Train the lfcc-gmm weights from an orchestrator run directory.

    python -m services.detectors.lfcc_gmm.train --data runs/train-lfcc-gmm --out services/detectors/lfcc_gmm/weights

The run directory (made by ``orchestrator run configs/train-lfcc-gmm.yaml``) supplies bona fide
clips (``manifest.jsonl``, training speakers only) and spoofed clips (``generations.jsonl``, made by
the generators from prompts). Speakers are split into train and dev (seeded); the GMMs are fitted on
train speakers and the dev EER is recorded. Every input's sha256 goes into a training manifest whose
sha256 the weights metadata records. Same data + same seed = same weights.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

from voxarena.hashing import sha256_file
from voxarena.codec import read_audio_file, resample

from .lfcc import LfccConfig, lfcc
from .model import METADATA_FILE, WEIGHTS_FILE, LfccGmmModel


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def build_training_manifest(run_dir: Path, dev_fraction: float, seed: int) -> list[dict]:
    """One row per clip: id, path, sha256, label, speaker, split (train/dev), sorted by id."""
    items = {r["id"]: r for r in _read_jsonl(run_dir / "manifest.jsonl")}
    speakers = sorted({r["speaker"] for r in items.values()})
    rng = np.random.default_rng(seed)
    n_dev = max(1, int(round(dev_fraction * len(speakers))))
    dev = set(rng.choice(speakers, size=n_dev, replace=False).tolist())
    rows = []
    for item in items.values():
        rows.append({"id": item["id"], "path": item["audio_path"], "sha256": item["audio_sha256"], "label": "bonafide",
                     "speaker": item["speaker"], "generator": "", "split": "dev" if item["speaker"] in dev else "train"})
    gen_path = run_dir / "generations.jsonl"
    for g in _read_jsonl(gen_path) if gen_path.exists() else []:
        if g.get("status") != "ok":
            continue
        speaker = items[g["item"]]["speaker"]
        rows.append({"id": g["id"], "path": str(run_dir / g["audio"]), "sha256": g["audio_sha256"], "label": "spoof",
                     "speaker": speaker, "generator": g["generator"], "split": "dev" if speaker in dev else "train"})
    rows.sort(key=lambda r: r["id"])
    return rows


def manifest_sha256(rows: list[dict]) -> str:
    canonical = "".join(json.dumps({k: r[k] for k in ("id", "sha256", "label", "speaker", "split")}, sort_keys=True) + "\n"
                        for r in rows)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _features(row: dict, cfg: LfccConfig) -> np.ndarray:
    if sha256_file(row["path"]) != row["sha256"]:
        raise ValueError(f"{row['id']}: {row['path']} does not match its recorded sha256")
    clip = read_audio_file(row["path"], row["id"])
    return lfcc(resample(clip.samples, clip.sample_rate, cfg.sample_rate), cfg)


def _fit(frames: np.ndarray, n_components: int, seed: int, max_frames: int):
    from sklearn.mixture import GaussianMixture

    rng = np.random.default_rng(seed)
    if len(frames) > max_frames:
        frames = frames[np.sort(rng.choice(len(frames), size=max_frames, replace=False))]
    gmm = GaussianMixture(n_components=n_components, covariance_type="diag", max_iter=100, tol=1e-3,
                          reg_covar=1e-4, random_state=seed)
    gmm.fit(frames)
    return gmm


def _eer(bona: np.ndarray, spoof: np.ndarray) -> float:
    """EER via scikit-learn's ROC (an implementation independent of the scorer's)."""
    from sklearn.metrics import roc_curve

    y = np.r_[np.ones(len(bona)), np.zeros(len(spoof))]
    fpr, tpr, _ = roc_curve(y, np.r_[bona, spoof])
    fnr = 1 - tpr
    i = int(np.nanargmin(np.abs(fnr - fpr)))
    return float((fpr[i] + fnr[i]) / 2)


def train(run_dir: Path, out_dir: Path, seed: int, n_components: int, dev_fraction: float, max_frames: int) -> dict:
    t0 = time.perf_counter()
    cfg = LfccConfig()
    rows = build_training_manifest(run_dir, dev_fraction, seed)
    train_rows = [r for r in rows if r["split"] == "train"]
    by_label = {lab: [r for r in train_rows if r["label"] == lab] for lab in ("bonafide", "spoof")}
    for lab, rs in by_label.items():
        if not rs:
            raise SystemExit(f"{run_dir}: no {lab} training clips")
    print(f"features: {len(by_label['bonafide'])} bona fide, {len(by_label['spoof'])} spoof training clips", flush=True)
    models = {}
    for k, (lab, rs) in enumerate(by_label.items()):
        frames = np.vstack([_features(r, cfg) for r in rs])
        print(f"fitting {lab} GMM: {n_components} components on {min(len(frames), max_frames)} of {len(frames)} frames", flush=True)
        models[lab] = _fit(frames, n_components, seed + k, max_frames)
    out_dir.mkdir(parents=True, exist_ok=True)
    arrays = {}
    for lab, g in models.items():
        arrays[f"{lab}_weights"], arrays[f"{lab}_means"], arrays[f"{lab}_variances"] = g.weights_, g.means_, g.covariances_
    npz_path = out_dir / WEIGHTS_FILE
    with open(npz_path, "wb") as f:  # np.savez to a file object: no timestamps, same bytes for same arrays
        np.savez(f, **arrays)
    # Paths are machine-specific: the committed manifest identifies clips by id and content hash.
    (out_dir / "training_manifest.jsonl").write_text(
        "".join(json.dumps({k: v for k, v in r.items() if k != "path"}, sort_keys=True) + "\n" for r in rows)
    )
    meta = {
        "weights_sha256": sha256_file(npz_path),
        "training_manifest_sha256": manifest_sha256(rows),
        "seed": seed, "n_components": n_components, "max_frames": max_frames, "dev_fraction": dev_fraction,
        "lfcc": cfg.as_dict(),
        "n_train_bonafide": len(by_label["bonafide"]), "n_train_spoof": len(by_label["spoof"]),
        "spoof_generators": sorted({r["generator"] for r in rows if r["label"] == "spoof"}),
        "command": " ".join(["python -m services.detectors.lfcc_gmm.train"] + sys.argv[1:]),
    }
    (out_dir / METADATA_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    # Dev EER with the freshly written weights, through the serving code path.
    model = LfccGmmModel(out_dir)
    model.load()
    dev = [r for r in rows if r["split"] == "dev"]
    scores = {lab: np.array([model.score_clip(read_audio_file(r["path"])) for r in dev if r["label"] == lab])
              for lab in ("bonafide", "spoof")}
    meta["dev_eer"] = round(_eer(scores["bonafide"], scores["spoof"]), 6) if all(len(s) for s in scores.values()) else None
    meta["n_dev_bonafide"], meta["n_dev_spoof"] = len(scores["bonafide"]), len(scores["spoof"])
    meta["train_seconds"] = round(time.perf_counter() - t0, 1)
    (out_dir / METADATA_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return meta


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, type=Path, help="orchestrator run directory with training clips")
    p.add_argument("--out", required=True, type=Path, help="directory for lfcc_gmm.npz and metadata.json")
    p.add_argument("--seed", type=int, default=20260101)
    p.add_argument("--components", type=int, default=64,
                   help="GMM components per class (the ASVspoof baseline uses 512 on ~25k utterances)")
    p.add_argument("--dev-fraction", type=float, default=0.1, help="share of training speakers held out as dev")
    p.add_argument("--max-frames", type=int, default=200_000, help="frames per class used by EM (seeded subsample)")
    args = p.parse_args(argv)
    meta = train(args.data, args.out, args.seed, args.components, args.dev_fraction, args.max_frames)
    print(json.dumps(meta, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()

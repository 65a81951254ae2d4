"""Train frame-lcnn on the arena's own partial fakes (``configs/train-partial.yaml``).

    make train-partial
    python -m voxarena.services.detectors.frame_lcnn.train --data runs/train-partial [--out DIR]

The data run holds the training speakers' bona fide utterances (LibriSpeech train-clean-100, never an
evaluation speaker) and partial fakes of each, whose generation rows record every fake span
(``partial.spans``, seconds). Speakers are split into train and dev with the seed
(``training.data.build_training_manifest``: clips checked by sha256). Each LFCC frame's target is 0 when
its 10 ms cell holds a fake sample, else 1 (``lfcc.frame_truth``).

Training (torch, deterministic, ``training.torch_loop.set_deterministic``): every epoch sees each bona fide
training clip and as many partial fakes drawn without replacement, one crop of ``CROP`` frames each
(a fake's crop is placed around one of its fake frames, so it holds the splice); the loss is the
class-balanced frame cross-entropy (bona fide frames and fake frames weigh half each) plus the utterance
cross-entropy of the crop's soft minimum (``network.utterance_margin``; a crop is fake if any frame is).
After each epoch the dev clips are scored whole; the kept epoch has the lowest mean of the dev frame EER
(every 10 ms frame of every dev clip pooled) and the dev utterance EER; training stops after ``PATIENCE``
epochs without improvement. The network is exported to ONNX with a dynamic time axis and checked against
torch; the utterance calibration (LLR) is fitted on the dev speakers' soft minima.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from voxarena.hashing import sha256_file
from voxarena.services.detectors.calibration import calibration_record, fit_llr_calibration
from voxarena.services.detectors.lfcc_gmm.lfcc import LfccConfig, frame_truth, lfcc
from voxarena.services.detectors.trained import METADATA_FILE, TRAINING_MANIFEST_FILE
from voxarena.services.detectors.training.data import (
    TrainingClip,
    TrainingDataError,
    build_training_manifest,
    equal_error_rate,
    load_waveform,
    manifest_sha256,
    write_manifest,
)

from .model import ONNX_FILE, FrameLcnnModel, soft_minimum

DEFAULT_SEED = 20261206
DEFAULT_OUT = Path(__file__).parent / "weights"
CROP, BATCH, LEARNING_RATE, WEIGHT_DECAY, MAX_EPOCHS, PATIENCE = 400, 16, 1e-3, 1e-4, 20, 4


def fake_spans(run_dirs: list[Path]) -> dict[str, list[tuple[float, float]]]:
    """generation id -> its fake spans in seconds, from each run's generations.jsonl (partial rows only)."""
    out: dict[str, list[tuple[float, float]]] = {}
    for run_dir in run_dirs:
        for line in (run_dir / "generations.jsonl").read_text().splitlines():
            row = json.loads(line) if line.strip() else {}
            if row.get("status") == "ok" and row.get("partial"):
                out[row["id"]] = [(s["start_seconds"], s["end_seconds"]) for s in row["partial"]["spans"]]
    return out


def featurize(rows: list[TrainingClip], spans: dict) -> list[tuple[np.ndarray, np.ndarray]]:
    """(LFCC (60, frames) float32, frame targets) of each clip."""
    out = []
    for r in rows:
        feats = lfcc(load_waveform(r), LfccConfig()).T.astype(np.float32)
        if r.label == "spoof" and r.id not in spans:
            raise TrainingDataError(f"{r.id}: a spoofed clip without fake spans (not a partial fake)")
        out.append((feats, frame_truth(spans.get(r.id, []), feats.shape[1])))
    return out


def crop(feats: np.ndarray, truth: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A CROP-frame window (a short clip repeated to fill it); around a fake frame when there is one."""
    n = feats.shape[1]
    if n < CROP:
        reps = CROP // n + 1
        return np.tile(feats, reps)[:, :CROP], np.tile(truth, reps)[:CROP]
    fake = np.flatnonzero(truth == 0)
    if fake.size:
        centre = int(rng.choice(fake))
        start = int(np.clip(centre - rng.integers(0, CROP), 0, n - CROP))
    else:
        start = int(rng.integers(0, n - CROP + 1))
    return feats[:, start : start + CROP], truth[start : start + CROP]


def dev_record(net, dev: list[tuple[np.ndarray, np.ndarray]]) -> tuple[dict, list[np.ndarray]]:
    import torch

    net.eval()
    with torch.no_grad():
        margins = [net(torch.from_numpy(f[None]))[0].numpy().astype(np.float64) for f, _ in dev]
    frames, truth = np.concatenate(margins), np.concatenate([t for _, t in dev])
    utt = np.array([soft_minimum(m) for m in margins])
    utt_truth = np.array([t.min() for _, t in dev])
    record = {
        "dev_frame_eer": round(equal_error_rate(frames[truth == 1], frames[truth == 0]), 5),
        "dev_eer": round(equal_error_rate(utt[utt_truth == 1], utt[utt_truth == 0]), 5),
    }
    return record, margins


def fit(train: list, dev: list, seed: int, max_epochs: int, name: str) -> tuple[Any, dict, list[np.ndarray]]:
    import torch

    from voxarena.services.detectors.training.torch_loop import set_deterministic

    from .network import FrameLcnn, utterance_margin

    set_deterministic(seed)
    frames = np.concatenate([f for f, _ in train], axis=1)
    net = FrameLcnn(frames.shape[0], frames.mean(axis=1), frames.std(axis=1) + 1e-5)
    opt = torch.optim.Adam(net.parameters(), lr=LEARNING_RATE, weight_decay=WEIGHT_DECAY)
    bce = torch.nn.BCEWithLogitsLoss(reduction="none")
    bona = np.flatnonzero([t.min() == 1 for _, t in train])
    fakes = np.flatnonzero([t.min() == 0 for _, t in train])
    n = min(len(bona), len(fakes))
    best: float | None = None
    best_state: dict[str, Any] = {}
    history: list[dict] = []
    since, best_epoch = 0, 0
    t0 = time.perf_counter()
    for epoch in range(1, max_epochs + 1):
        rng = np.random.default_rng([seed, epoch])
        order = np.concatenate([rng.choice(bona, n, replace=False), rng.choice(fakes, n, replace=False)])
        rng.shuffle(order)
        net.train()
        losses = []
        for i in range(0, len(order), BATCH):
            pairs = [crop(train[j][0], train[j][1], rng) for j in order[i : i + BATCH]]
            x = torch.from_numpy(np.stack([p[0] for p in pairs]))
            y = torch.from_numpy(np.stack([p[1] for p in pairs]))
            out = net(x)
            per = bce(out, y)
            real, fake = y == 1, y == 0
            frame_loss = 0.5 * per[real].mean() + (0.5 * per[fake].mean() if fake.any() else 0.0)
            utt_loss = bce(utterance_margin(out), y.min(dim=1).values).mean()
            loss = frame_loss + utt_loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
        record, _ = dev_record(net, dev)
        history.append(
            {"epoch": epoch, "train_loss": round(float(np.mean(losses)), 5), **record}
            | {"seconds": round(time.perf_counter() - t0, 1)}
        )
        print(f"{name}: epoch {epoch} {history[-1]}", flush=True)
        key = (record["dev_frame_eer"] + record["dev_eer"]) / 2
        if best is None or key < best:
            best, since, best_epoch = key, 0, epoch
            best_state = {k: v.detach().clone() for k, v in net.state_dict().items()}
        else:
            since += 1
            if since >= PATIENCE:
                break
    net.load_state_dict(best_state)
    record, margins = dev_record(net, dev)
    return net, {"epochs": best_epoch, "epochs_run": len(history), "history": history, **record}, margins


def export(net, path: Path, checks: list[np.ndarray]) -> float:
    """ONNX with dynamic batch and time axes; the largest |torch - onnxruntime| frame margin on ``checks``."""
    import onnxruntime as ort
    import torch

    net.eval()
    torch.onnx.export(
        net,
        (torch.from_numpy(checks[0][None]),),
        str(path),
        input_names=["lfcc"],
        output_names=["frame_margins"],
        dynamic_axes={"lfcc": {0: "batch", 2: "frames"}, "frame_margins": {0: "batch", 1: "frames"}},
        opset_version=17,
        dynamo=False,
        do_constant_folding=True,
    )
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    gap = 0.0
    with torch.no_grad():
        for x in checks:
            ref = net(torch.from_numpy(x[None])).numpy()
            gap = max(gap, float(np.max(np.abs(ref - session.run(None, {"lfcc": x[None]})[0]))))
    if gap > 1e-3:
        raise RuntimeError(f"{path}: ONNX export disagrees with torch by {gap:.3g}")
    return gap


def train(data: list[Path], out_dir: Path, seed: int, dev_fraction: float, max_epochs: int, command: str) -> dict:
    import torch

    t0 = time.perf_counter()
    name = FrameLcnnModel.name
    rows = build_training_manifest(data, dev_fraction, seed)
    spans = fake_spans(data)
    clips = featurize(rows, spans)
    train_set = [c for c, r in zip(clips, rows) if r.split == "train"]
    dev_set = [c for c, r in zip(clips, rows) if r.split == "dev"]
    print(f"{name}: {len(train_set)} train and {len(dev_set)} dev clips featurized", flush=True)
    net, record, margins = fit(train_set, dev_set, seed, max_epochs, name)
    out_dir.mkdir(parents=True, exist_ok=True)
    gap = export(net, out_dir / ONNX_FILE, [f for f, _ in dev_set[:6]])
    dev_rows = [r for r in rows if r.split == "dev"]
    utt = np.array([soft_minimum(m) for m in margins])
    is_bona = np.array([r.label == "bonafide" for r in dev_rows])
    a, b = fit_llr_calibration(utt[is_bona], utt[~is_bona])
    count = lambda split, lab: sum(r.split == split and r.label == lab for r in rows)  # noqa: E731
    meta = {
        "detector": name,
        "files": {ONNX_FILE: sha256_file(out_dir / ONNX_FILE)},
        "lfcc": LfccConfig().as_dict(),
        "calibration": calibration_record(
            a, b, int(is_bona.sum()), int((~is_bona).sum()), "utterance soft minima of the dev speakers' clips"
        ),
        "seen_generators": sorted({r.generator for r in rows if r.generator}),
        "training_manifest_sha256": manifest_sha256(rows),
        "seed": seed,
        "dev_fraction": dev_fraction,
        **record,
        "onnx_max_margin_gap": gap,
        "parameter_count": int(sum(p.numel() for p in net.parameters() if p.requires_grad)),
        "n_train_bonafide": count("train", "bonafide"),
        "n_train_spoof": count("train", "spoof"),
        "n_dev_bonafide": count("dev", "bonafide"),
        "n_dev_spoof": count("dev", "spoof"),
        "hyperparameters": {
            "crop_frames": CROP,
            "batch_size": BATCH,
            "learning_rate": LEARNING_RATE,
            "weight_decay": WEIGHT_DECAY,
            "max_epochs": max_epochs,
            "patience": PATIENCE,
        },
        "torch_version": torch.__version__,
        "train_seconds": round(time.perf_counter() - t0, 1),
        "command": command,
    }
    write_manifest(rows, out_dir / TRAINING_MANIFEST_FILE)
    (out_dir / METADATA_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return meta


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m voxarena.services.detectors.frame_lcnn.train", description=__doc__)
    p.add_argument("--data", required=True, type=Path, nargs="+", help="the data run (or runs of one manifest)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="weights directory (default: frame-lcnn's weights/)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--dev-fraction", type=float, default=0.2, help="share of training speakers held out as dev")
    p.add_argument("--max-epochs", type=int, default=MAX_EPOCHS)
    args = p.parse_args(argv)
    command = "python -m voxarena.services.detectors.frame_lcnn.train " + shlex.join(
        list(argv if argv is not None else sys.argv[1:])
    )
    try:
        meta = train(args.data, args.out, args.seed, args.dev_fraction, args.max_epochs, command)
    except TrainingDataError as e:
        raise SystemExit(f"frame-lcnn: {e}") from None
    print(
        f"frame-lcnn: weights in {args.out} ({meta['train_seconds']} s); dev utterance EER {meta['dev_eer']:.3f}, "
        f"frame EER {meta['dev_frame_eer']:.3f}"
    )


if __name__ == "__main__":
    main()

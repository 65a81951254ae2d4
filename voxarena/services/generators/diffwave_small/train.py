"""Train diffwave-small on LibriSpeech train-clean-100 (``make train-generators GENERATORS=diffwave-small``).

    python -m voxarena.services.generators.diffwave_small.train \
        --corpus ../shared/data/speech/LibriSpeech/train-clean-100

Data: every utterance of the corpus folder (251 speakers, one utterance each here: 52 min), read with its
sha256 checked; ``--dev-speakers`` speakers (seeded) are held out for the dev loss; the evaluation speakers
(test-clean) are never seen. Each utterance's log-mel is computed once by the serving analysis
(``hifigan.mel.log_mel`` at 16 kHz), so training sees what serving feeds the network.

Each step (DiffWave's algorithm 1): a batch of ``CROP_FRAMES``-frame crops (audio and the matching mel frames),
a training step t uniform over the 50, Gaussian noise eps, x_t = sqrt(abar_t) x_0 + sqrt(1 - abar_t) eps, and
the L1 distance between eps and the network's prediction (Adam, gradient norm clipped at 1). Everything random
comes from the seed (numpy ``default_rng([seed, step])``, ``torch.manual_seed``) and torch runs its
deterministic algorithms on ``--threads`` threads: the same corpus, seed and steps give the same bytes. The
dev loss (fixed dev crops, steps and noise) is recorded every ``EVAL_EVERY`` steps; the last step's weights
are kept. The denoiser is exported to ONNX and checked against torch.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from voxarena.services.detectors.training.data import load_waveform
from voxarena.services.generators.hifigan import mel
from voxarena.services.generators.trained import SAMPLE_RATE, speech_rows, write_weights

from . import diffusion
from .model import ONNX_FILE, DiffwaveSmallModel

DEFAULT_SEED = 20261206
DEFAULT_OUT = Path(__file__).parent / "weights"
CROP_FRAMES, BATCH, LEARNING_RATE, EVAL_EVERY = 16, 8, 1e-3, 250
DEFAULT_STEPS = 4500
TRAINING_DATA = "LibriSpeech train-clean-100 (CC BY 4.0) as in the shared data: 251 speakers, one utterance each"


def featurize(waves: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray]]:
    """(audio padded to whole hops, its (80, frames) log-mel) of each utterance."""
    out = []
    for w in waves:
        w = np.pad(w, (0, (-w.size) % mel.HOP)).astype(np.float32)
        out.append((w, mel.log_mel(w, SAMPLE_RATE)))
    return out


def batch(clips: list[tuple[np.ndarray, np.ndarray]], rng: np.random.Generator, size: int):
    """``size`` crops of CROP_FRAMES frames: (audio (size, frames*256), mel (size, 80, frames))."""
    audio, mels = [], []
    for j in rng.integers(0, len(clips), size):
        w, m = clips[j]
        f = int(rng.integers(0, m.shape[1] - CROP_FRAMES + 1))
        audio.append(w[f * mel.HOP : (f + CROP_FRAMES) * mel.HOP])
        mels.append(m[:, f : f + CROP_FRAMES])
    return np.stack(audio), np.stack(mels)


def noised(audio: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x_t, t, eps) for a batch of clean crops (forward process at a uniform training step)."""
    bars = diffusion.alpha_bars(diffusion.TRAIN_BETAS)
    t = rng.integers(0, bars.size, audio.shape[0])
    eps = rng.standard_normal(audio.shape).astype(np.float32)
    x = np.sqrt(bars[t])[:, None] * audio + np.sqrt(1.0 - bars[t])[:, None] * eps
    return x.astype(np.float32), np.asarray(t, np.float32), eps


def fit(train: list, dev: list, seed: int, steps: int, threads: int) -> tuple[Any, dict]:
    import torch

    from .network import DiffWave

    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(threads)
    mels = np.concatenate([m for _, m in train], axis=1)
    net = DiffWave(float(mels.mean()), float(mels.std()))
    opt = torch.optim.Adam(net.parameters(), lr=LEARNING_RATE)
    dev_rng = np.random.default_rng([seed, 1 << 30])
    dev_audio, dev_mel = batch(dev, dev_rng, 32)
    dev_x, dev_t, dev_eps = (torch.from_numpy(a) for a in noised(dev_audio, dev_rng))
    dev_mel_t = torch.from_numpy(dev_mel)

    def dev_loss() -> float:
        net.eval()
        with torch.no_grad():
            loss = float(torch.mean(torch.abs(net(dev_x, dev_t, dev_mel_t) - dev_eps)))
        net.train()
        return round(loss, 5)

    history, recent = [], []
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        rng = np.random.default_rng([seed, step])
        audio, m = batch(train, rng, BATCH)
        x, t, eps = (torch.from_numpy(a) for a in noised(audio, rng))
        loss = torch.mean(torch.abs(net(x, t, torch.from_numpy(m)) - eps))
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        recent.append(loss.item())
        if step % EVAL_EVERY == 0 or step == steps:
            row = {
                "step": step,
                "train_l1": round(float(np.mean(recent)), 5),
                "dev_l1": dev_loss(),
                "seconds": round(time.perf_counter() - t0, 1),
            }
            history.append(row)
            recent = []
            print(f"diffwave-small: {row}", flush=True)
    final = history[-1]
    return net, {"history": history, "final_losses": {"train_l1": final["train_l1"], "dev_l1": final["dev_l1"]}}


def export(net, path: Path, audio: np.ndarray, log_mel: np.ndarray) -> float:
    """ONNX with dynamic batch, sample and frame axes; the largest |torch - onnxruntime| on a dev crop."""
    import onnxruntime as ort
    import torch

    net.eval()
    x = torch.from_numpy(audio[None])
    step = torch.tensor([17.5])
    m = torch.from_numpy(log_mel[None])
    torch.onnx.export(
        net,
        (x, step, m),
        str(path),
        input_names=["audio", "step", "mel"],
        output_names=["noise"],
        dynamic_axes={"audio": {0: "batch", 1: "samples"}, "step": {0: "batch"}, "mel": {0: "batch", 2: "frames"}}
        | {"noise": {0: "batch", 1: "samples"}},
        opset_version=17,
        dynamo=False,
        do_constant_folding=True,
    )
    with torch.no_grad():
        ref = net(x, step, m).numpy()
    got = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(
        None, {"audio": audio[None], "step": step.numpy(), "mel": log_mel[None]}
    )[0]
    gap = float(np.max(np.abs(ref - got)))
    if gap > 1e-3:
        raise RuntimeError(f"{path}: ONNX export disagrees with torch by {gap:.3g}")
    return gap


def train(corpus: Path, out_dir: Path, seed: int, steps: int, dev_speakers: int, threads: int, command: str) -> dict:
    import torch

    t0 = time.perf_counter()
    rows = speech_rows(corpus, dev_speakers, seed)
    clips = featurize([load_waveform(r) for r in rows])
    train_set = [c for c, r in zip(clips, rows) if r.split == "train"]
    dev_set = [c for c, r in zip(clips, rows) if r.split == "dev"]
    print(f"diffwave-small: {len(train_set)} train and {len(dev_set)} dev utterances", flush=True)
    net, record = fit(train_set, dev_set, seed, steps, threads)
    out_dir.mkdir(parents=True, exist_ok=True)
    w, m = dev_set[0]
    frames = min(m.shape[1], 200)
    gap = export(net, out_dir / ONNX_FILE, w[: frames * mel.HOP], np.ascontiguousarray(m[:, :frames]))
    return write_weights(
        out_dir,
        DiffwaveSmallModel.name,
        (ONNX_FILE,),
        rows,
        {
            **record,
            "training_data": TRAINING_DATA,
            "seed": seed,
            "steps": steps,
            "onnx_max_gap": gap,
            "parameter_count": int(sum(p.numel() for p in net.parameters())),
            "hyperparameters": {
                "crop_frames": CROP_FRAMES,
                "batch_size": BATCH,
                "learning_rate": LEARNING_RATE,
                "threads": threads,
                "train_steps_T": int(diffusion.TRAIN_BETAS.size),
            },
            "torch_version": torch.__version__,
            "train_seconds": round(time.perf_counter() - t0, 1),
            "command": command,
        },
    )


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m voxarena.services.generators.diffwave_small.train", description=__doc__)
    p.add_argument("--corpus", required=True, type=Path, help="a LibriSpeech subset folder (train-clean-100)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="weights directory (default: the service's weights/)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    p.add_argument("--dev-speakers", type=int, default=10)
    p.add_argument("--threads", type=int, default=1, help="torch threads (the other core trains codec-rvq)")
    args = p.parse_args(argv)
    command = "python -m voxarena.services.generators.diffwave_small.train " + shlex.join(
        list(argv if argv is not None else sys.argv[1:])
    )
    try:
        meta = train(args.corpus, args.out, args.seed, args.steps, args.dev_speakers, args.threads, command)
    except (FileNotFoundError, ValueError) as e:
        raise SystemExit(f"diffwave-small: {e}") from None
    print(f"diffwave-small: weights in {args.out} ({meta['train_seconds']} s); final {meta['final_losses']}")


if __name__ == "__main__":
    main()

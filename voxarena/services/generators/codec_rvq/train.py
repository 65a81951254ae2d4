"""Train codec-rvq on LibriSpeech train-clean-100 (``make train-generators GENERATORS=codec-rvq``).

    python -m voxarena.services.generators.codec_rvq.train --corpus PATH/LibriSpeech/train-clean-100 \
        [--out DIR] [--steps N] [--seed S] [--threads T] [--dev-speakers K]

Data: every utterance of the corpus folder, checked by sha256 (``trained.speech_rows``); ``--dev-speakers``
speakers drawn with the seed are held out for the dev losses. The evaluation speakers (LibriSpeech
test-clean) are never read. Each step draws ``BATCH`` random crops of ``CROP`` samples (``trained.crops``)
and, per crop, a number 1..8 of codebooks (quantiser dropout), all from ``numpy.random.default_rng([seed,
step])``.

Loss: the multi-resolution log-mel L1 (``network.MelLoss``) + ``WAVE_WEIGHT`` x waveform L1 +
``COMMIT_WEIGHT`` x the commitment loss; no adversarial loss (no time for one on a CPU). Adam with a cosine
decay of the learning rate to a tenth. The codebooks follow their EMAs (``network.ResidualVQ``). The weights
matter: with waveform 1 and commitment 1 (a first run, 3,500 steps) the decoder never matched the waveform, the
latent collapsed to about three dimensions that one codebook covers (99 % of its variance), and PESQ was the
same at 1 and 8 codebooks. A waveform term as heavy as the mel term (30) and a lighter commitment (0.25) make
every bit of the latent worth coding (README).

Deterministic: ``torch.manual_seed``, ``torch.use_deterministic_algorithms(True)`` and a fixed thread count,
so the same corpus, seed, steps and threads give the same weight bytes. The encoder and decoder are exported
to ONNX (dynamic time axis) and checked against torch on a dev clip; the codebooks are saved as
``codebooks.npy`` (float32, (8, 1024, 64)); ``metadata.json`` records the training.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from voxarena.services.detectors.training.data import TrainingClip, load_waveform
from voxarena.services.generators.trained import crops, speech_rows, write_weights

from .model import CODEBOOKS_FILE, DECODER_FILE, ENCODER_FILE, CodecRvqModel, quantise

DEFAULT_SEED = 20261206
DEFAULT_OUT = Path(__file__).parent / "weights"
DEFAULT_STEPS = 3500  # about 30 minutes on one thread of this machine (~0.5 s a step beside an image build)
DEFAULT_DEV_SPEAKERS = 10
CROP = 8000  # samples: 0.5 s, 25 latent frames
BATCH = 8
LEARNING_RATE, FINAL_LR_FRACTION, BETAS = 1e-3, 0.1, (0.9, 0.99)
WAVE_WEIGHT, COMMIT_WEIGHT = 30.0, 0.25  # see the module docstring
GRAD_CLIP = 10.0
LOG_EVERY = 100  # steps between progress lines and history rows
DEV_SECONDS = 4.0  # of each dev clip in the history rows (the final dev losses use whole clips)
LADDER = (1, 2, 4, 8)  # codebooks at which the final dev losses are measured


def load_split(rows: list[TrainingClip], split: str) -> list[np.ndarray]:
    return [load_waveform(r) for r in rows if r.split == split]


def whole_frames(x: np.ndarray) -> np.ndarray:
    from .network import HOP

    return np.pad(x, (0, (-x.size) % HOP))


def dev_losses(net: Any, mel: Any, clips: list[np.ndarray], n_codebooks: int) -> dict[str, float]:
    """Mean mel and waveform L1 losses over ``clips`` (each whole, padded to frames) at ``n_codebooks``."""
    import torch

    net.eval()
    mels, waves = [], []
    with torch.no_grad():
        for x in clips:
            audio = torch.from_numpy(whole_frames(x)[None])
            out, _ = net(audio, torch.tensor([n_codebooks]))
            mels.append(float(mel(out, audio)))
            waves.append(float((out - audio).abs().mean()))
    net.train()
    return {"mel": round(float(np.mean(mels)), 5), "wave_l1": round(float(np.mean(waves)), 6)}


def fit(
    train: list[np.ndarray], dev: list[np.ndarray], seed: int, steps: int, name: str
) -> tuple[Any, list[dict], dict]:
    import torch

    from .network import N_CODEBOOKS, Codec, MelLoss

    torch.manual_seed(seed)
    net, mel = Codec(), MelLoss()
    opt = torch.optim.Adam(net.parameters(), lr=LEARNING_RATE, betas=BETAS)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: FINAL_LR_FRACTION + (1 - FINAL_LR_FRACTION) * 0.5 * (1 + np.cos(np.pi * s / max(1, steps)))
    )
    dev_short = [x[: int(DEV_SECONDS * 16000)] for x in dev]
    history: list[dict] = []
    window: list[tuple[float, float, float]] = []
    t0 = time.perf_counter()
    for step in range(1, steps + 1):
        rng = np.random.default_rng([seed, step])
        audio = torch.from_numpy(crops(train, CROP, BATCH, rng))
        n_used = torch.from_numpy(rng.integers(1, N_CODEBOOKS + 1, BATCH))
        out, commitment = net(audio, n_used, rng)
        mel_loss = mel(out, audio)
        wave_loss = (out - audio).abs().mean()
        loss = mel_loss + WAVE_WEIGHT * wave_loss + COMMIT_WEIGHT * commitment
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), GRAD_CLIP)
        opt.step()
        schedule.step()
        window.append((mel_loss.item(), wave_loss.item(), commitment.item()))
        if step % LOG_EVERY == 0 or step == steps:
            means = np.mean(window, axis=0)
            row = {
                "step": step,
                "mel": round(float(means[0]), 5),
                "wave_l1": round(float(means[1]), 6),
                "commitment": round(float(means[2]), 6),
                "dev_mel_8": dev_losses(net, mel, dev_short, N_CODEBOOKS)["mel"],
                "seconds": round(time.perf_counter() - t0, 1),
            }
            history.append(row)
            window = []
            print(f"{name}: {row}", flush=True)
    final = {k: history[-1][k] for k in ("mel", "wave_l1", "commitment")}
    return net, history, final


def export(net: Any, out_dir: Path, clip: np.ndarray) -> float:
    """encoder.onnx and decoder.onnx with dynamic time axes, codebooks.npy; the largest |torch -
    onnxruntime| difference of the latent and of the decoded audio on ``clip`` (raises above 1e-3)."""
    import torch

    from voxarena.services.generators.trained import onnx_session

    net.eval()
    audio = torch.from_numpy(whole_frames(clip)[None, None])
    common: dict[str, Any] = {"opset_version": 17, "dynamo": False, "do_constant_folding": True}
    torch.onnx.export(
        net.encoder,
        (audio,),
        str(out_dir / ENCODER_FILE),
        input_names=["audio"],
        output_names=["latent"],
        dynamic_axes={"audio": {0: "batch", 2: "samples"}, "latent": {0: "batch", 2: "frames"}},
        **common,
    )
    codebooks = net.quantiser.codebooks.numpy().astype(np.float32)
    np.save(out_dir / CODEBOOKS_FILE, codebooks)
    with torch.no_grad():
        latent = net.encoder(audio)
        quantised = torch.from_numpy(quantise(latent.numpy(), codebooks, codebooks.shape[0]))
        torch.onnx.export(
            net.decoder,
            (quantised,),
            str(out_dir / DECODER_FILE),
            input_names=["latent"],
            output_names=["audio"],
            dynamic_axes={"latent": {0: "batch", 2: "frames"}, "audio": {0: "batch", 2: "samples"}},
            **common,
        )
        decoded = net.decoder(quantised).numpy()
    encoder, decoder = onnx_session(out_dir / ENCODER_FILE), onnx_session(out_dir / DECODER_FILE)
    gap = max(
        float(np.max(np.abs(latent.numpy() - encoder.run(None, {"audio": audio.numpy()})[0]))),
        float(np.max(np.abs(decoded - decoder.run(None, {"latent": quantised.numpy()})[0]))),
    )
    if gap > 1e-3:
        raise RuntimeError(f"{out_dir}: the ONNX export disagrees with torch by {gap:.3g}")
    return gap


def train(corpus: Path, out_dir: Path, seed: int, steps: int, threads: int, dev_speakers: int, command: str) -> dict:
    import torch

    from . import network

    t0 = time.perf_counter()
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    name = CodecRvqModel.name
    rows = speech_rows(corpus, dev_speakers, seed)
    train_set, dev_set = load_split(rows, "train"), load_split(rows, "dev")
    print(f"{name}: {len(train_set)} train and {len(dev_set)} dev utterances read", flush=True)
    net, history, final = fit(train_set, dev_set, seed, steps, name)
    mel = network.MelLoss()
    dev = {str(n): dev_losses(net, mel, dev_set, n) for n in LADDER}
    out_dir.mkdir(parents=True, exist_ok=True)
    gap = export(net, out_dir, dev_set[0][: 3 * network.SAMPLE_RATE])
    record = {
        "seed": seed,
        "steps": steps,
        "final_losses": final,
        "dev": {"codebooks": dev, "clips": len(dev_set), "speakers": dev_speakers},
        "history": history,
        "hyperparameters": {
            "strides": list(network.STRIDES),
            "channels": list(network.CHANNELS),
            "dilations": [list(d) for d in network.DILATIONS],
            "latent_dim": network.LATENT_DIM,
            "codebooks": network.N_CODEBOOKS,
            "codebook_size": network.CODEBOOK_SIZE,
            "ema_decay": network.EMA_DECAY,
            "dead_code_after_steps": network.DEAD_AFTER,
            "mel_scales": [list(s) for s in network.MEL_SCALES],
            "crop_samples": CROP,
            "batch_size": BATCH,
            "learning_rate": LEARNING_RATE,
            "final_lr_fraction": FINAL_LR_FRACTION,
            "adam_betas": list(BETAS),
            "wave_l1_weight": WAVE_WEIGHT,
            "commitment_weight": COMMIT_WEIGHT,
            "grad_clip": GRAD_CLIP,
            "threads": threads,
            "adversarial_loss": None,
        },
        "parameter_count": int(sum(p.numel() for p in net.parameters() if p.requires_grad)),
        "codebook_parameters": int(net.quantiser.codebooks.numel()),
        "onnx_max_gap": gap,
        "torch_version": torch.__version__,
        "train_seconds": round(time.perf_counter() - t0, 1),
        "command": command,
        "training_data": (
            f"LibriSpeech train-clean-100 ({corpus.name}), {len(train_set)} utterances of the speakers not held "
            f"out; {dev_speakers} speakers drawn with the seed are dev; no LibriSpeech test speaker is read"
        ),
    }
    return write_weights(out_dir, name, CodecRvqModel.weight_files, rows, record)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m voxarena.services.generators.codec_rvq.train", description=__doc__)
    p.add_argument("--corpus", required=True, type=Path, help="a LibriSpeech subset folder (train-clean-100)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="weights directory (default: codec-rvq's weights/)")
    p.add_argument("--steps", type=int, default=DEFAULT_STEPS)
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--threads", type=int, default=1, help="torch threads (the bytes depend on it)")
    p.add_argument("--dev-speakers", type=int, default=DEFAULT_DEV_SPEAKERS)
    args = p.parse_args(argv)
    command = "python -m voxarena.services.generators.codec_rvq.train " + shlex.join(
        list(argv if argv is not None else sys.argv[1:])
    )
    meta = train(args.corpus, args.out, args.seed, args.steps, args.threads, args.dev_speakers, command)
    dev = meta["dev"]["codebooks"]
    print(
        f"codec-rvq: weights in {args.out} ({meta['train_seconds']} s, {args.steps} steps); dev mel loss "
        f"{dev['8']['mel']:.3f} at 8 codebooks, {dev['1']['mel']:.3f} at 1"
    )


if __name__ == "__main__":
    main()

"""Training loop shared by the neural detectors, and their export to ONNX for serving.

Deterministic: ``torch.manual_seed``, ``torch.use_deterministic_algorithms(True)``, a fixed thread
count and a numpy generator seeded per epoch for sampling and crops. Each epoch sees every bona fide
training clip and as many spoofed clips drawn without replacement (so the classes are balanced), one
random window-length crop each. After every epoch the dev clips are scored as the service scores
them (mean logit margin over windows, ``voxarena.services.detectors.onnx_scoring``; at most
``dev_max_windows`` windows per clip, to keep epochs short); the kept weights
are those of the epoch with the lowest dev EER (ties: lowest dev log-loss), and training stops after
``patience`` epochs without improvement.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from voxarena.services.detectors.onnx_scoring import cut_windows

from .data import balanced_log_loss, equal_error_rate

THREADS = 2


@dataclass(frozen=True)
class TrainingPlan:
    window: int  # frames (features) or samples (waveform), the last axis
    max_epochs: int
    patience: int
    batch_size: int = 16
    learning_rate: float = 1e-3
    weight_decay: float = 1e-4
    crops_per_clip: int = 1
    dev_max_windows: int = 4  # per dev clip during early stopping (the final dev EER uses every window)

    def as_dict(self) -> dict:
        return asdict(self)


def set_deterministic(seed: int) -> None:
    import torch

    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(THREADS)


def _random_crop(x: np.ndarray, window: int, rng: np.random.Generator) -> np.ndarray:
    n = x.shape[-1]
    if n <= window:
        return cut_windows(x, window)[0]
    start = int(rng.integers(0, n - window + 1))
    return x[..., start : start + window]


def _dev_scores(net, inputs: list[np.ndarray], window: int, max_windows: int) -> np.ndarray:
    import torch

    net.eval()
    out = []
    with torch.no_grad():
        for x in inputs:
            logits = net(torch.from_numpy(cut_windows(x, window)[:max_windows])).numpy()
            out.append(float(np.mean(logits[:, 1] - logits[:, 0])))
    return np.array(out)


def train_network(
    net,
    train_inputs: list[np.ndarray],
    train_targets: np.ndarray,
    dev_inputs: list[np.ndarray],
    dev_targets: np.ndarray,
    plan: TrainingPlan,
    seed: int,
    name: str,
) -> dict:
    """Train ``net`` in place (leaves the best epoch's weights loaded); returns the training record."""
    import torch

    set_deterministic(seed)
    opt = torch.optim.Adam(net.parameters(), lr=plan.learning_rate, weight_decay=plan.weight_decay)
    loss_fn = torch.nn.CrossEntropyLoss()
    bona_idx = np.flatnonzero(train_targets == 1)
    spoof_idx = np.flatnonzero(train_targets == 0)
    n_per_class = min(len(bona_idx), len(spoof_idx))
    best, best_state, history, since_best = None, None, [], 0
    t0 = time.perf_counter()
    for epoch in range(1, plan.max_epochs + 1):
        rng = np.random.default_rng([seed, epoch])
        chosen = np.concatenate(
            [rng.choice(bona_idx, n_per_class, replace=False), rng.choice(spoof_idx, n_per_class, replace=False)]
        )
        chosen = np.repeat(chosen, plan.crops_per_clip)
        rng.shuffle(chosen)
        net.train()
        losses = []
        for i in range(0, len(chosen), plan.batch_size):
            idx = chosen[i : i + plan.batch_size]
            x = torch.from_numpy(np.stack([_random_crop(train_inputs[j], plan.window, rng) for j in idx]))
            y = torch.from_numpy(train_targets[idx].astype(np.int64))
            opt.zero_grad()
            loss = loss_fn(net(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        margins = _dev_scores(net, dev_inputs, plan.window, plan.dev_max_windows)
        eer = equal_error_rate(margins[dev_targets == 1], margins[dev_targets == 0])
        dev_loss = balanced_log_loss(margins, dev_targets)
        history.append(
            {
                "epoch": epoch,
                "train_loss": round(float(np.mean(losses)), 5),
                "dev_eer": round(eer, 5),
                "dev_loss": round(dev_loss, 5),
                "seconds": round(time.perf_counter() - t0, 1),
            }
        )
        print(
            f"{name}: epoch {epoch} train loss {history[-1]['train_loss']:.4f} dev EER {eer:.4f} "
            f"dev loss {dev_loss:.4f} ({history[-1]['seconds']:.0f} s)",
            flush=True,
        )
        if best is None or (eer, dev_loss) < best:
            best, since_best = (eer, dev_loss), 0
            best_state = {k: v.detach().clone() for k, v in net.state_dict().items()}
            best_epoch = epoch
        else:
            since_best += 1
            if since_best >= plan.patience:
                break
    net.load_state_dict(best_state)
    net.eval()
    return {
        "epochs": best_epoch,
        "epochs_run": len(history),
        "history": history,
        "plan": plan.as_dict(),
        "torch_threads": THREADS,
    }


def export_onnx(net, example: np.ndarray, path: Path, check_inputs: list[np.ndarray]) -> float:
    """Export ``net`` (eval mode) with a dynamic batch axis; returns the largest |torch - onnxruntime| logit gap."""
    import onnxruntime as ort
    import torch

    net.eval()
    torch.onnx.export(
        net,
        (torch.from_numpy(example[None]),),
        str(path),
        input_names=["input"],
        output_names=["logits"],
        dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
        opset_version=17,
        dynamo=False,
        do_constant_folding=True,
    )
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    gap = 0.0
    with torch.no_grad():
        for x in check_inputs:
            ref = net(torch.from_numpy(x)).numpy()
            got = session.run(None, {"input": x})[0]
            gap = max(gap, float(np.max(np.abs(ref - got))))
    if gap > 1e-2:
        raise RuntimeError(f"{path}: ONNX export disagrees with torch by {gap:.3g} logits")
    return gap


def torch_version() -> str:
    import torch

    return torch.__version__


ONNX_FILE = "model.onnx"


def fit_network(
    build_net,
    featurize,
    plan: TrainingPlan,
    train: list,
    dev: list,
    out_dir: Path,
    seed: int,
    name: str,
    max_epochs: int | None = None,
) -> dict:
    """Featurize the clips once, build the network from the training features (``build_net(train_x)``,
    with the torch seed set just before, so initialisation is reproducible), train it and export it to
    ``out_dir/model.onnx``; returns the trainer's ``fit`` result."""
    import torch

    from .data import load_waveform

    if max_epochs is not None:
        plan = TrainingPlan(**{**plan.as_dict(), "max_epochs": max_epochs})
    t0 = time.perf_counter()
    train_x = [featurize(load_waveform(r)) for r in train]
    dev_x = [featurize(load_waveform(r)) for r in dev]
    print(f"{name}: featurized {len(train_x)} + {len(dev_x)} clips in {time.perf_counter() - t0:.0f} s", flush=True)
    set_deterministic(seed)
    net = build_net(train_x)
    record = train_network(
        net, train_x, np.array([r.target for r in train]), dev_x, np.array([r.target for r in dev]), plan, seed, name
    )
    example = cut_windows(dev_x[0], plan.window)[0]
    gap = export_onnx(net, example, out_dir / ONNX_FILE, [cut_windows(x, plan.window)[:4] for x in dev_x[:8]])
    n_params = int(sum(p.numel() for p in net.parameters() if p.requires_grad))
    return {
        "files": [ONNX_FILE],
        "window": plan.window,
        "parameter_count": n_params,
        "onnx_max_logit_gap": gap,
        "torch_version": torch.__version__,
        "hyperparameters": plan.as_dict(),
        **record,
    }


def raw_waveform_fit(name: str, make_net, plan: TrainingPlan):
    """The ``fit`` of a detector whose network reads the 16 kHz waveform itself (rawnet2, aasist)."""

    def fit(train: list, dev: list, out_dir: Path, seed: int, max_epochs: int | None = None, **_) -> dict:
        return fit_network(
            lambda _features: make_net(),
            lambda x: x.astype(np.float32),
            plan,
            train,
            dev,
            out_dir,
            seed,
            name,
            max_epochs,
        )

    return fit

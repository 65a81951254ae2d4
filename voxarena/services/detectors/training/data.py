"""Training data for every detector, read from an orchestrator run directory.

``make train-detectors`` first runs the orchestrator on ``configs/train-detectors.yaml``: bona fide
clips are the training speakers' utterances (``manifest.jsonl``), spoofed clips are what the "seen"
generators made from them (``generations.jsonl``). Speakers (never utterances) are split into train
and dev with a seed, so a dev speaker's bona fide and spoofed clips are all in dev. Evaluation
speakers (LibriSpeech test-*) are disjoint from the training corpus (train-clean-100) by
construction. Every clip's sha256 is checked on reading; the rows' canonical hash is the training
manifest hash recorded with the weights.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from voxarena.codec import read_audio_file, resample
from voxarena.hashing import sha256_file

SAMPLE_RATE = 16000


class TrainingDataError(ValueError):
    """The run directory cannot supply training data; the message names the file or clip."""


@dataclass(frozen=True)
class TrainingClip:
    id: str
    path: str
    sha256: str
    label: str  # "bonafide" | "spoof"
    speaker: str
    generator: str  # "" for bona fide
    split: str  # "train" | "dev"

    @property
    def target(self) -> int:
        return 1 if self.label == "bonafide" else 0

    def record(self) -> dict:
        """The committed manifest row: paths are machine-specific, content hashes are not."""
        return {
            "id": self.id,
            "sha256": self.sha256,
            "label": self.label,
            "speaker": self.speaker,
            "generator": self.generator,
            "split": self.split,
        }


def _read_jsonl(path: Path) -> list[dict]:
    if not path.exists():
        raise TrainingDataError(f"{path}: missing; build the data with `orchestrator run configs/train-detectors.yaml`")
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _generations(run_dirs: list[Path], items: dict) -> list[dict]:
    """The ok generation rows of every run directory (audio paths made absolute); a clip made in two runs
    must be the same bytes."""
    out: dict[str, dict] = {}
    for run_dir in run_dirs:
        gen_path = run_dir / "generations.jsonl"
        for g in _read_jsonl(gen_path) if gen_path.exists() else []:
            if g.get("status") != "ok":
                continue
            if g["item"] not in items:
                raise TrainingDataError(
                    f"{gen_path}: {g['id']} is made from {g['item']}, not in {run_dirs[0]}'s manifest"
                )
            if g["id"] in out and out[g["id"]]["audio_sha256"] != g["audio_sha256"]:
                raise TrainingDataError(f"{g['id']}: {out[g['id']]['audio']} and {run_dir / g['audio']} differ")
            out[g["id"]] = {**g, "audio": str(run_dir / g["audio"])}
    return list(out.values())


def build_training_manifest(
    run_dir: Path | list[Path], dev_fraction: float, seed: int, generators: list[str] | None = None
) -> list[TrainingClip]:
    """All clips of the run, labelled and split by speaker, sorted by id.

    ``run_dir`` may be several runs over the same manifest (e.g. one per generator, made apart):
    their manifests must be identical and their clips are pooled."""
    run_dirs = [run_dir] if isinstance(run_dir, Path) else list(run_dir)
    items = {r["id"]: r for r in _read_jsonl(run_dirs[0] / "manifest.jsonl")}
    for other in run_dirs[1:]:
        theirs = {r["id"]: r["audio_sha256"] for r in _read_jsonl(other / "manifest.jsonl")}
        if theirs != {k: r["audio_sha256"] for k, r in items.items()}:
            raise TrainingDataError(f"{other}: its manifest is not {run_dirs[0]}'s; pool runs of one manifest only")
    speakers = sorted({r["speaker"] for r in items.values()})
    if len(speakers) < 2:
        raise TrainingDataError(f"{run_dirs[0]}: need at least 2 speakers to split train/dev, found {len(speakers)}")
    rng = np.random.default_rng(seed)
    n_dev = min(len(speakers) - 1, max(1, int(round(dev_fraction * len(speakers)))))
    dev = set(rng.choice(speakers, size=n_dev, replace=False).tolist())
    split = {s: "dev" if s in dev else "train" for s in speakers}
    rows = [
        TrainingClip(i["id"], i["audio_path"], i["audio_sha256"], "bonafide", i["speaker"], "", split[i["speaker"]])
        for i in items.values()
    ]
    for g in _generations(run_dirs, items):
        if generators is not None and g["generator"] not in generators:
            continue
        speaker = items[g["item"]]["speaker"]
        rows.append(
            TrainingClip(g["id"], g["audio"], g["audio_sha256"], "spoof", speaker, g["generator"], split[speaker])
        )
    rows.sort(key=lambda r: r.id)
    for split_name in ("train", "dev"):
        labels = {r.label for r in rows if r.split == split_name}
        if labels != {"bonafide", "spoof"}:
            raise TrainingDataError(f"{run_dirs[0]}: the {split_name} split has only {sorted(labels) or 'no'} clips")
    return rows


def manifest_sha256(rows: list[TrainingClip]) -> str:
    canonical = "".join(
        json.dumps({k: v for k, v in r.record().items() if k != "generator"}, sort_keys=True) + "\n" for r in rows
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def write_manifest(rows: list[TrainingClip], path: Path) -> None:
    path.write_text("".join(json.dumps(r.record(), sort_keys=True) + "\n" for r in rows))


def load_waveform(row: TrainingClip) -> np.ndarray:
    """The clip at 16 kHz mono float32, after checking its bytes against the recorded sha256."""
    if sha256_file(row.path) != row.sha256:
        raise TrainingDataError(f"{row.id}: {row.path} does not match its recorded sha256 {row.sha256}")
    clip = read_audio_file(row.path, row.id)
    return resample(clip.samples, clip.sample_rate, SAMPLE_RATE).astype(np.float32)


def equal_error_rate(bonafide: np.ndarray, spoof: np.ndarray) -> float:
    """EER via scikit-learn's ROC (independent of the scorer service's implementation)."""
    from sklearn.metrics import roc_curve

    y = np.r_[np.ones(len(bonafide)), np.zeros(len(spoof))]
    fpr, tpr, _ = roc_curve(y, np.r_[bonafide, spoof])
    fnr = 1 - tpr
    i = int(np.nanargmin(np.abs(fnr - fpr)))
    return float((fpr[i] + fnr[i]) / 2)


def balanced_log_loss(margins: np.ndarray, targets: np.ndarray) -> float:
    """Cross-entropy (nats) per class, averaged over the two classes; margin = log-odds of bona fide."""
    margins, targets = np.asarray(margins, float), np.asarray(targets)
    bona = np.mean(np.logaddexp(0, -margins[targets == 1]))
    spoof = np.mean(np.logaddexp(0, margins[targets == 0]))
    return float((bona + spoof) / 2)


def cllr(bonafide_llr: np.ndarray, spoof_llr: np.ndarray) -> float:
    """Cost of log-likelihood ratio (Brümmer), in bits."""
    b, s = np.asarray(bonafide_llr, float), np.asarray(spoof_llr, float)
    return float((np.mean(np.logaddexp(0, -b)) + np.mean(np.logaddexp(0, s))) / (2 * np.log(2)))

"""Offline commands on files: ASVspoof score/key files and composite scores from any metrics table.

They use the pure statistics core the scorer uses (``voxarena.stats.detection``,
``voxarena.stats.composite``) directly: no model is loaded, so no service is needed.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from voxarena.orchestrator.metrics.composite import composite_table
from voxarena.orchestrator.store.records import DetectionRecord
from voxarena.orchestrator.store.run_store import detector_label, read_records
from voxarena.stats import composite, detection


class InputFileError(ValueError):
    pass


def _read_tsv(path: Path, columns: tuple[str, str]) -> dict[str, str]:
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such file") from None
    if not lines:
        raise InputFileError(f"{path}: empty file")
    header = lines[0].split("\t")
    if tuple(h.strip() for h in header) != columns:
        raise InputFileError(f"{path}: header must be {'<TAB>'.join(columns)!r}, got {lines[0]!r}")
    out: dict[str, str] = {}
    for n, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        parts = line.split("\t")
        if len(parts) != 2:
            raise InputFileError(f"{path}:{n}: expected 2 tab-separated fields, got {len(parts)}")
        key, value = parts[0].strip(), parts[1].strip()
        if key in out:
            raise InputFileError(f"{path}:{n}: duplicate filename {key!r}")
        out[key] = value
    return out


def asvspoof_detection_metrics(scores_path: Path, keys_path: Path, costs: detection.CostModel) -> dict:
    """Metrics of an ASVspoof 5 score file against its key file (``filename<TAB>cm-score`` / ``cm-label``)."""
    scores = _read_tsv(scores_path, ("filename", "cm-score"))
    keys = _read_tsv(keys_path, ("filename", "cm-label"))
    only_scores, only_keys = sorted(set(scores) - set(keys)), sorted(set(keys) - set(scores))
    if only_scores or only_keys:
        parts = []
        if only_scores:
            parts.append(f"{len(only_scores)} id(s) scored but not in the keys (e.g. {', '.join(only_scores[:5])})")
        if only_keys:
            parts.append(f"{len(only_keys)} id(s) in the keys but not scored (e.g. {', '.join(only_keys[:5])})")
        raise InputFileError("score and key files disagree: " + "; ".join(parts))
    bona, spoof = [], []
    for fid in sorted(keys):
        label = keys[fid]
        try:
            value = float(scores[fid])
        except ValueError:
            raise InputFileError(f"{scores_path}: {fid}: score {scores[fid]!r} is not a number") from None
        if not math.isfinite(value):
            raise InputFileError(f"{scores_path}: {fid}: score {scores[fid]!r} is not finite")
        if label == "bonafide":
            bona.append(value)
        elif label == "spoof":
            spoof.append(value)
        else:
            raise InputFileError(f"{keys_path}: {fid}: label {label!r} is neither 'bonafide' nor 'spoof'")
    try:
        m = detection.detection_metrics(np.array(bona), np.array(spoof), costs)
    except ValueError as e:
        raise InputFileError(str(e)) from None
    return {k: m[k] for k in ("eer", "min_dcf", "act_dcf", "cllr", "min_cllr", "n_bonafide", "n_spoof")}


def export_asvspoof(run_dir: Path, out_dir: Path) -> list[Path]:
    """One ``<detector>.scores.tsv`` per detector (``<detector>@<condition>.scores.tsv`` per channel
    condition) and one shared ``keys.tsv`` from a run's one-shot detections (I2D iterations stay out)."""
    detections = read_records(run_dir / "detections.jsonl", DetectionRecord)
    latest = {k: r for k, r in detections.items() if r.i2d_iteration == 1}
    out_dir.mkdir(parents=True, exist_ok=True)
    written, keys = [], {}
    for det, cond in sorted({(r.detector, r.channel) for r in latest.values()}):
        ok = sorted(
            (r for r in latest.values() if r.detector == det and r.channel == cond and r.ok),
            key=lambda r: r.clip,
        )
        path = out_dir / f"{detector_label(det, cond)}.scores.tsv"
        path.write_text("filename\tcm-score\n" + "".join(f"{r.clip}\t{r.score!r}\n" for r in ok))
        written.append(path)
        keys.update({r.clip: r.kind for r in ok})
    keys_path = out_dir / "keys.tsv"
    keys_path.write_text("filename\tcm-label\n" + "".join(f"{k}\t{v}\n" for k, v in sorted(keys.items())))
    return written + [keys_path]


def _read_table(path: Path, *keys: str) -> list[dict]:
    """The rows of a CSV that has one of ``keys`` as a column."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except FileNotFoundError:
        raise InputFileError(f"{path}: no such file") from None
    if not rows or not any(k in rows[0] for k in keys):
        wanted = " or ".join(repr(k) for k in keys)
        raise InputFileError(f"{path}: needs a {wanted} column (got {', '.join(rows[0]) if rows else 'no rows'})")
    return rows


def _number(path: Path, row: dict, col: str, key: str) -> float:
    raw = (row.get(col) or "").strip()
    if raw.lower() in ("", "nan", "n/a", "na"):
        return math.nan
    try:
        return float(raw)
    except ValueError:
        raise InputFileError(f"{path}: {row[key]}: {col}={raw!r} is not a number") from None


def parse_weights(spec: str | None, default: dict[str, float]) -> dict[str, float]:
    if not spec:
        return dict(default)
    out = {}
    for part in spec.split(","):
        name, _, value = part.partition("=")
        try:
            out[name.strip()] = float(value)
        except ValueError:
            raise InputFileError(f"--weights: {part!r} is not NAME=NUMBER") from None
    return out


def composite_generators(path: Path, kind: str, weights: dict[str, float], eps: float) -> dict[str, float]:
    """F_TTS / F_reconstruction from the paper's layout (a ``system`` column) or a run's own
    ``metrics/generator_metrics.csv`` (``generator`` and ``tasks``: the systems the run's composite compares)."""
    rows = _read_table(path, "system", "generator")
    key = "system" if "system" in rows[0] else "generator"
    if key == "generator":
        if "tasks" not in rows[0]:
            raise InputFileError(f"{path}: a run's generator metrics need a 'tasks' column")
        rows = list(composite_table(rows, kind).values())
        if not rows:
            raise InputFileError(f"{path}: no generator for the {kind} composite (tasks column)")
    missing = [m for m in weights if m not in rows[0]]
    if missing:
        raise InputFileError(f"{path}: missing column(s) {', '.join(missing)} needed by the {kind} composite")
    table = {r[key]: {m: _number(path, r, m, key) for m in weights} for r in rows}
    try:
        return composite.generator_scores(table, weights, eps)
    except composite.CompositeError as e:
        raise InputFileError(f"{path}: {e}") from None


def composite_detectors(
    pairs_path: Path, params_path: Path, alpha: float, challenge_path: Path | None
) -> dict[str, float]:
    pairs = []
    for r in _read_table(pairs_path, "detector"):
        pairs.append(
            {
                "detector": r["detector"],
                "generator": r["generator"],
                **{m: _number(pairs_path, r, m, "detector") for m in ("eer", "cllr", "min_dcf")},
            }
        )
    params = {
        r["detector"]: _number(params_path, r, "params_m", "detector") for r in _read_table(params_path, "detector")
    }
    challenge = None
    if challenge_path:
        challenge = {
            r["generator"]: _number(challenge_path, r, "r", "generator")
            for r in _read_table(challenge_path, "generator")
        }
    try:
        return composite.detector_scores(pairs, params, alpha, challenge)
    except composite.CompositeError as e:
        raise InputFileError(str(e)) from None

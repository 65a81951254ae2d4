"""Comparing two runs: are they the same protocol (``compare-check``), and their timings (``compare-timing``).

Two runs are comparable when they share the manifest (same items, references and seeds), the run
seed, the tasks, the I2D protocol, the steps of every channel condition both declare, the scorer
fingerprint (model hashes, normaliser, resampler, versions) and, for each service present in both,
its name, version and weights hash, and its image id when both runs launched it from an image.
Anything else that differs is a reason to refuse, and every reason is listed.

Timings are compared scope by scope: a service's timing scope says what its wall time covers, and
two different scopes are not the same quantity. The first request of each service (cold caches,
lazy loading, JIT) is kept apart from the steady-state rest.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any


class IncomparableRuns(ValueError):
    def __init__(self, differences: list[str]) -> None:
        super().__init__("; ".join(differences))
        self.differences = differences


def _record(run_dir: Path) -> dict:
    path = run_dir / "run.json"
    if not path.exists():
        raise FileNotFoundError(f"{run_dir}: not a run directory (no run.json)")
    return json.loads(path.read_text())


def _fingerprint(run_dir: Path) -> dict | None:
    path = run_dir / "metrics" / "fingerprint.json"
    return json.loads(path.read_text())["fingerprint"] if path.exists() else None


def protocol_differences(run_a: Path, run_b: Path) -> list[str]:
    """Why two runs are not the same measurement: ``design_differences`` and, of the services both ran, a
    different model identity or image (``service_differences``)."""
    return design_differences(run_a, run_b) + service_differences(
        _record(run_a)["services"], _record(run_b)["services"]
    )


def design_differences(run_a: Path, run_b: Path) -> list[str]:
    """Why two runs do not measure on the same protocol, whatever models they ran: manifest, run seed, tasks,
    channel conditions, I2D protocol, scorer fingerprint. Runs without any are one series of a leaderboard, in
    which a service's version or weights may change from run to run."""
    a, b = _record(run_a), _record(run_b)
    out = []
    if a["manifest"]["sha256"] != b["manifest"]["sha256"]:
        out.append(
            f"manifest differs ({a['manifest']['sha256'][:12]}, {a['manifest']['items']} items vs "
            f"{b['manifest']['sha256'][:12]}, {b['manifest']['items']} items)"
        )
    if a["seeds"]["run_seed"] != b["seeds"]["run_seed"]:
        out.append(f"run seed differs ({a['seeds']['run_seed']} vs {b['seeds']['run_seed']})")
    ta, tb = a["config"]["protocol"]["tasks"], b["config"]["protocol"]["tasks"]
    if ta != tb:
        out.append(f"tasks differ ({ta} vs {tb})")
    ca, cb = a["config"].get("conditions", {}), b["config"].get("conditions", {})
    for name in sorted(set(ca) & set(cb)):
        if ca[name] != cb[name]:
            out.append(f"channel condition {name!r} differs ({ca[name]} vs {cb[name]})")
    ia, ib = a["config"]["protocol"].get("i2d"), b["config"]["protocol"].get("i2d")
    if ia != ib:
        out.append(f"I2D protocol differs ({ia} vs {ib})")
    fa, fb = _fingerprint(run_a), _fingerprint(run_b)
    if fa is None or fb is None:
        out.append(
            "scorer fingerprint missing in " + ", ".join(str(r) for r, f in ((run_a, fa), (run_b, fb)) if f is None)
        )
    elif fa != fb:
        keys = sorted(k for k in set(fa) | set(fb) if fa.get(k) != fb.get(k))
        out.append(
            "scorer fingerprint differs: " + ", ".join(f"{k} ({fa.get(k)!r} vs {fb.get(k)!r})" for k in keys[:8])
        )
    return out


def model_identity(info: dict) -> dict[str, Any]:
    """What makes a service's answers those of one model (its GetInfo as run.json records it): name,
    version, weights hash, and the calibration a detector's scores go through, which a refit
    (``training --refit-calibration``) changes without touching the weights."""
    model = info.get("model", {})
    return {
        "name": model.get("name"),
        "version": model.get("version"),
        "weights_sha256": model.get("weights_sha256"),
        "calibration": model.get("metadata", {}).get("calibration"),
    }


def identity_changes(old: dict, new: dict) -> list[tuple[str, Any, Any]]:
    """(key, old value, new value) for each part of ``model_identity`` that differs."""
    a, b = model_identity(old), model_identity(new)
    return [(key, a[key], b[key]) for key in a if a[key] != b[key]]


def service_differences(a: dict, b: dict) -> list[str]:
    """Of the services two runs both have (run.json ``services``): a different model identity
    (``model_identity``) or image id."""
    out = []
    for name in sorted(set(a) & set(b)):
        for key, was, is_ in identity_changes(a[name]["info"], b[name]["info"]):
            out.append(f"{name}: {key} differs ({was!r} vs {is_!r})")
        out += _image_difference(name, a[name].get("image"), b[name].get("image"))
    return out


def _image_difference(name: str, a: dict | None, b: dict | None) -> list[str]:
    """A service launched from an image in both runs must have run the same image (its id: the digest
    of its config, the same on every machine), whatever tag named it."""
    if not a or not b or a.get("id") == b.get("id"):
        return []
    return [f"{name}: image differs ({a.get('ref')} {a.get('id')} vs {b.get('ref')} {b.get('id')})"]


def check_comparable(run_a: Path, run_b: Path) -> None:
    differences = protocol_differences(run_a, run_b)
    if differences:
        raise IncomparableRuns(differences)


def _timings(run_dir: Path) -> dict[tuple[str, str], list[float]]:
    """(service, scope) -> wall seconds of every successful generation and detection, in call order."""
    services = _record(run_dir).get("services", {})
    out: dict[tuple[str, str], list[tuple[str, float]]] = {}
    path = run_dir / "generations.jsonl"
    for line in path.read_text().splitlines() if path.exists() else []:
        row = json.loads(line)
        t = row.get("timing")
        if row.get("status") == "ok" and t:
            out.setdefault((row["generator"], t.get("scope", "")), []).append(
                (t.get("start", ""), float(t["wall_seconds"]))
            )
    path = run_dir / "detections.jsonl"
    for i, line in enumerate(path.read_text().splitlines() if path.exists() else []):
        row = json.loads(line)
        if row.get("status") == "ok" and "wall_seconds" in row:
            scope = services.get(row["detector"], {}).get("info", {}).get("model", {}).get("timing_scope", "")
            out.setdefault((row["detector"], scope), []).append((f"{i:012d}", float(row["wall_seconds"])))
    return {k: [w for _, w in sorted(v)] for k, v in out.items()}


def compare_timing(run_a: Path, run_b: Path) -> list[dict]:
    """One row per (service, scope) timed in both runs: first call apart, median of the rest, ratio b/a."""
    ta, tb = _timings(run_a), _timings(run_b)
    rows = []
    for key in sorted(set(ta) | set(tb)):
        service, scope = key
        if key not in ta or key not in tb:
            only = run_a if key in ta else run_b
            rows.append(
                {
                    "service": service,
                    "scope": scope,
                    "comparable": False,
                    "note": f"timed with this scope only in {only}",
                }
            )
            continue
        a, b = ta[key], tb[key]
        row = {
            "service": service,
            "scope": scope,
            "comparable": True,
            "n_a": len(a),
            "n_b": len(b),
            "first_a": a[0],
            "first_b": b[0],
        }
        if len(a) > 1 and len(b) > 1:
            ma, mb = statistics.median(a[1:]), statistics.median(b[1:])
            row.update({"median_rest_a": ma, "median_rest_b": mb, "ratio_b_over_a": mb / ma if ma > 0 else None})
        rows.append(row)
    return rows

"""A manual attack run: ``python -m voxarena.attack --detector HOST:PORT --clip WAV --queries 100
--snr-db 30 --seed 1 --out DIR`` writes ``DIR/attacked.wav``, ``DIR/queries.jsonl`` (one row per query)
and ``DIR/result.json`` (settings, scores before and after, SNR). Exit 2 on a bad argument, 1 when the
detector fails or answers badly."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import soundfile as sf

from voxarena.codec import AudioFormatError, clip_to_wav_bytes, read_audio_file
from voxarena.hashing import sha256_file

from .client import DetectorScore, DirectCaller
from .perturbation import AttackArgumentError, Budget
from .search import AttackQueryError, SearchSettings, attack


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m voxarena.attack", description=__doc__.split("\n")[0])
    p.add_argument("--detector", required=True, help="the detector service's HOST:PORT (plaintext gRPC)")
    p.add_argument("--clip", required=True, type=Path, help="the mono audio file to attack")
    p.add_argument("--out", required=True, type=Path, help="directory for attacked.wav, queries.jsonl, result.json")
    p.add_argument("--queries", type=int, default=100, help="query budget, the original's query included")
    p.add_argument("--snr-db", type=float, default=30.0, help="minimum SNR of the perturbation, dB")
    p.add_argument("--max-gain-db", type=float, default=6.0, help="bound on every band gain, +- dB")
    p.add_argument("--bands", type=int, default=8, help="number of bands of the filterbank")
    p.add_argument("--no-noise", action="store_true", help="band gains only, no shaped noise")
    p.add_argument("--batch", type=int, default=4, help="candidates per ScoreBatch call")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--deadline", type=float, default=60.0, help="seconds per ScoreBatch call")
    p.add_argument("--parameter", action="append", default=[], metavar="KEY=VALUE", help="detector option")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        options = dict(kv.split("=", 1) for kv in args.parameter)
    except ValueError:
        print(f"error: --parameter: expected KEY=VALUE, got {args.parameter}", file=sys.stderr)
        return 2
    try:
        clip = read_audio_file(args.clip)
    except (AudioFormatError, sf.SoundFileError, OSError) as e:
        print(f"error: --clip: {args.clip}: {e}", file=sys.stderr)
        return 2
    caller = DirectCaller(args.detector, args.deadline)
    try:
        budget = Budget(snr_db=args.snr_db, max_gain_db=args.max_gain_db)
        settings = SearchSettings(args.queries, args.batch, args.seed, args.bands, not args.no_noise)
        result = attack(clip, DetectorScore(caller, args.detector, options), budget, settings)
    except AttackArgumentError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except AttackQueryError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    finally:
        caller.close()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "attacked.wav").write_bytes(clip_to_wav_bytes(result.clip))
    (args.out / "queries.jsonl").write_text(result.log_jsonl())
    summary = {
        "detector": args.detector,
        "clip": str(args.clip),
        "clip_sha256": sha256_file(args.clip),
        "budget": {"snr_db": budget.snr_db, "max_gain_db": budget.max_gain_db},
        "settings": vars(settings) | {"detector_parameters": options},
        "method": "random search, adaptive step (voxarena.attack.search)",
        "original_score": result.original_score,
        "score": result.score,
        "queries": result.queries,
        "best_query": result.best_index,
        "snr_db": None if result.snr_db == float("inf") else result.snr_db,
    }
    (args.out / "result.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
    print(
        f"{args.clip}: score {result.original_score:.4f} -> {result.score:.4f} after {result.queries} queries, "
        f"SNR {result.snr_db:.3f} dB (budget {budget.snr_db:g} dB); wrote {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

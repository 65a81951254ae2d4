"""Train a detector's weights from an orchestrator run directory: the training pipeline's command line.

    make train-detectors                      # builds the data, then trains every detector
    python -m voxarena.services.detectors.training --detector rawnet2 --data runs/train-detectors \\
        --out voxarena/services/detectors/rawnet2/weights

The data run (``configs/train-detectors.yaml``) holds bona fide clips of the training speakers and
spoofed clips from the seen generators. Speakers are split into train and dev (seeded); the detector
trains on train (neural ones stop early on dev EER); the calibration to LLRs is fitted on
leave-one-attack-out dev scores. ``metadata.json`` in the weights directory records it all
(``voxarena.services.detectors.training.api``).

    python -m voxarena.services.detectors.training --detector lfcc-gmm --data runs/train-detectors --refit-calibration

refits only the calibration of the committed weights (same data run, checked by its manifest hash).

The orchestrator's race runs this command (never the package's code in its own process) with
``--keep-current`` (weights already trained on the same data are kept), ``--loao-dir`` (where the folds
go), ``--as-command`` (the race's own command, recorded in the metadata) and ``--quiet``; started with
``VOXARENA_PARENT_PID`` it dies with the race (``voxarena.lifecycle``), so a killed race leaves no
training behind to race its resumption.
"""

from __future__ import annotations

import argparse
import importlib
import json
import shlex
import sys
from pathlib import Path

from voxarena.lifecycle import die_with_parent

from .api import DEFAULT_SEED, TRAINERS, current_training, refit_calibration, train_detector


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m voxarena.services.detectors.training",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--detector", required=True, choices=sorted(TRAINERS))
    p.add_argument(
        "--data",
        required=True,
        type=Path,
        nargs="+",
        help="orchestrator run directory with the training clips (or several runs of one manifest)",
    )
    p.add_argument("--out", type=Path, help="weights directory (default: the detector's own weights/)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED)
    p.add_argument("--dev-fraction", type=float, default=0.1, help="share of training speakers held out as dev")
    p.add_argument("--max-epochs", type=int, help="override the detector's epoch budget (neural detectors)")
    p.add_argument(
        "--refit-calibration",
        action="store_true",
        help="keep the weights in --out and refit only their calibration (leave-one-attack-out)",
    )
    p.add_argument(
        "--keep-current",
        action="store_true",
        help="keep the weights in --out when they are intact, calibrated and trained on this data (same seed and "
        "dev fraction); train only otherwise",
    )
    p.add_argument("--loao-dir", type=Path, help="where the leave-one-attack-out folds go (default: DATA/.loao/DET)")
    p.add_argument("--as-command", help="the command recorded in the metadata (default: this one)")
    p.add_argument("--quiet", action="store_true", help="do not print the metadata at the end (it is in --out)")
    return p


def main(argv: list[str] | None = None) -> None:
    die_with_parent()  # started by a race: a killed race must not leave its training running
    argv = sys.argv[1:] if argv is None else argv
    args = _parser().parse_args(argv)
    trainer_file = importlib.import_module(TRAINERS[args.detector][0]).__file__
    if args.out is None and trainer_file is None:
        raise SystemExit(f"{args.detector}: its trainer module has no file; give --out")
    out = args.out or Path(str(trainer_file)).parent / "weights"
    command = args.as_command or shlex.join(["python", "-m", "voxarena.services.detectors.training", *argv])
    keep = args.keep_current and not args.refit_calibration
    meta = current_training(args.detector, args.data, out, args.seed, args.dev_fraction) if keep else None
    if meta is not None:
        print(f"{args.detector}: the weights in {out} are trained on this data, kept", file=sys.stderr)
    elif args.refit_calibration:
        meta = refit_calibration(args.detector, args.data, out, command)
    else:
        meta = train_detector(
            args.detector,
            args.data,
            out,
            args.seed,
            args.dev_fraction,
            args.max_epochs,
            command,
            loao_dir=args.loao_dir,
        )
    if not args.quiet:
        print(json.dumps(meta, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()

"""The scorer's process: its command line, and the gRPC server it runs (``python -m voxarena.scorers``)."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from voxarena.lifecycle import die_with_parent
from voxarena.sdk.server import (
    add_service_arguments,
    create_server,
    run_until_signalled,
    server_security,
    service_metrics,
)
from voxarena.v1 import scorer_pb2, scorer_pb2_grpc

from .quality import SHORT_CLIPS, SHORT_CLIPS_ENV
from .service import SCORER_VERSION, ScorerServicer


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    """The service arguments and the scorer's own; a bad value ends the process with the option named."""
    parser = argparse.ArgumentParser(description="VoxArena scorer service")
    add_service_arguments(parser)
    parser.add_argument(
        "--clip-workers",
        type=int,
        default=int(os.environ.get("VOXARENA_CLIP_WORKERS", "0")),
        help="clips measured at once, over all calls (or $VOXARENA_CLIP_WORKERS; default 0: the usable cores)",
    )
    parser.add_argument(
        "--dnsmos-short-clips",
        default=os.environ.get(SHORT_CLIPS_ENV, "windows"),
        help=f"DNSMOS of clips under 9.01 s: 'windows' (dnsmos_local.py's, the default) or 'one-window' (faster, "
        f"not the reference's numbers; the fingerprint says so: voxarena/scorers/quality.py) (or ${SHORT_CLIPS_ENV})",
    )
    args = parser.parse_args(argv)
    if args.clip_workers < 0:
        parser.error(f"--clip-workers must be 0 (the usable cores) or more, not {args.clip_workers}")
    if args.dnsmos_short_clips not in SHORT_CLIPS:
        parser.error(f"--dnsmos-short-clips {args.dnsmos_short_clips!r}: choose one of {', '.join(SHORT_CLIPS)}")
    return args


def main(argv: list[str] | None = None) -> None:
    die_with_parent()
    args = parse_arguments(argv)
    os.environ[SHORT_CLIPS_ENV] = args.dnsmos_short_clips  # the metric and its fingerprint read it
    logging.basicConfig(
        level=args.log_level.upper(), stream=sys.stderr, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    servicer = ScorerServicer(clip_workers=args.clip_workers)
    metrics = service_metrics(args, args.host, "scorer", "scorer", SCORER_VERSION)
    if metrics is not None:
        servicer.count_metrics(metrics.registry)
    name = scorer_pb2.DESCRIPTOR.services_by_name["ScorerService"].full_name
    running = create_server(
        [(name, lambda s: scorer_pb2_grpc.add_ScorerServiceServicer_to_server(servicer, s))],
        f"{args.host}:{args.port}",
        max_message_mb=args.max_message_mb,
        workers=args.workers,
        max_queue=args.max_queue,
        security=server_security(args),
        metrics=metrics,
    )
    run_until_signalled(running, servicer.load, "scorer")

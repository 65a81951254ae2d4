"""``voxarena-conformance ADDRESS``: the conformance checker as a vendor runs it, with only voxarena-sdk installed.

The same checks, options, report and exit codes as ``orchestrator conformance`` (both call
``run_conformance``): 0 when no check fails, 1 when any does, 2 for a bad option (an unreadable
certificate or probe recording). The table is plain text (no rich): the SDK keeps its dependencies
to what a model service needs.

    voxarena-conformance localhost:50051 [--json report.json] [--timeout 120] [--probe-audio speech.wav]
        [--tls-ca ca.pem [--tls-cert me.pem --tls-key me.key] [--tls-server-name NAME]] [--token-env VAR]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from voxarena.codec import AudioFormatError
from voxarena.transport import ClientSecurity, TransportConfigError

from .session import Check, probes_from_file, run_conformance

STATUSES = ("PASS", "FAIL", "WARN", "SKIP")


def exit_code(checks: list[Check], strict: bool = False) -> int:
    """1 when a MUST rule is broken (a FAIL), or with ``strict`` a SHOULD rule too (a WARN); else 0."""
    return 1 if any(c.status == "FAIL" or (strict and c.status == "WARN") for c in checks) else 0


def rule_label(c: Check) -> str:
    return f"{c.rule.grade} [{c.rule.id}]" if c.rule else ""


def json_report(address: str, checks: list[Check]) -> dict[str, Any]:
    """The ``--json`` report: the address, a count per status and every check with its rule (id, grade,
    the rule's text and where the .proto states it) and what was sent and got."""
    return {
        "address": address,
        "summary": {status: sum(c.status == status for c in checks) for status in STATUSES},
        "checks": [
            {
                "name": c.name,
                "status": c.status,
                "rule": c.rule.id if c.rule else "",
                "grade": c.rule.grade if c.rule else "",
                "rule_text": c.rule.text if c.rule else "",
                "rule_where": c.rule.where if c.rule else "",
                "sent": c.sent,
                "got": c.got,
                "detail": c.detail,
            }
            for c in checks
        ],
    }


def summary(checks: list[Check]) -> str:
    counts = ", ".join(f"{sum(c.status == s for c in checks)} {s}" for s in STATUSES)
    return f"conformance: {counts}"


def text_table(address: str, checks: list[Check]) -> str:
    """The checks as an aligned plain-text table under a title (each with the rule it tests), the rules
    broken in full with where the .proto states them, then the one-line summary."""
    width = max([len("check"), *(len(c.name) for c in checks)])
    rules = max([len("rule"), *(len(rule_label(c)) for c in checks)])
    lines = [f"conformance of {address}", f"{'check':<{width}}  {'rule':<{rules}}  result  detail"]
    lines += [f"{c.name:<{width}}  {rule_label(c):<{rules}}  {c.status:<6}  {c.detail}".rstrip() for c in checks]
    broken = {c.rule.id: c.rule for c in checks if c.rule and c.status in ("FAIL", "WARN")}
    if broken:
        lines.append("rules broken (proto/voxarena/v1):")
        lines += [f"  {r.grade} [{r.id}] ({r.where}): {r.text}" for r in broken.values()]
    lines.append(summary(checks))
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="voxarena-conformance",
        description="Check a running generator, detector, scorer or transform against the VoxArena contract "
        "(the MUST and SHOULD rules of proto/voxarena/v1); exit code 1 when a MUST rule is broken.",
    )
    p.add_argument("address", help="host:port of a running generator, detector, scorer or transform")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per call (default 120)")
    p.add_argument("--json", dest="json_out", type=Path, help="also write the report as JSON")
    p.add_argument("--strict", action="store_true", help="a broken SHOULD rule (WARN) fails too: exit code 1")
    p.add_argument("--tls-ca", type=Path, help="speak TLS, trusting this CA (PEM)")
    p.add_argument("--tls-cert", type=Path, help="client certificate for mutual TLS (PEM)")
    p.add_argument("--tls-key", type=Path, help="key of --tls-cert (PEM)")
    p.add_argument("--tls-server-name", help="name the server certificate carries, if not the host")
    p.add_argument("--token-env", help="environment variable holding the bearer token to send")
    p.add_argument(
        "--probe-audio",
        type=Path,
        help="mono recording (>= 5 s) to cut the probe clips from, for services that refuse the synthetic ones",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        security = ClientSecurity.from_settings(
            str(args.tls_ca) if args.tls_ca else None,
            str(args.tls_cert) if args.tls_cert else None,
            str(args.tls_key) if args.tls_key else None,
            args.token_env,
            args.tls_server_name,
        )
        probes = probes_from_file(str(args.probe_audio)) if args.probe_audio else None
    except (TransportConfigError, AudioFormatError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except RuntimeError as e:  # soundfile's LibsndfileError: unreadable or missing file
        print(f"error: --probe-audio {args.probe_audio}: {e}", file=sys.stderr)
        return 2
    checks = run_conformance(args.address, args.timeout, security, probes)
    print(text_table(args.address, checks), flush=True)
    if args.json_out:
        args.json_out.write_text(json.dumps(json_report(args.address, checks), indent=2) + "\n")
    return exit_code(checks, args.strict)


if __name__ == "__main__":
    sys.exit(main())

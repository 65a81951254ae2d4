"""How a run stands: complete, or incomplete with its failed rows counted by kind; and the exit code
that says so, the same for ``orchestrator run`` and ``orchestrator status``.

A run is complete when every planned call is done, none failed and the metrics are written. An
incomplete run is told apart by what a rerun can do about it: transient failures, pending work or
missing metrics are redone by a plain rerun (exit 3); permanent failures only (a service error, an
invalid response, a refused or unreadable input, a chain cut by one) stay until ``--retry-failed``
(exit 4). Exit 2 stays what it was: the run could not be done or read at all (a config, dataset,
service start or run-directory error; ``status`` of a directory that is not a run).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from voxarena.orchestrator.store.failures import Failure

EXIT_COMPLETE = 0
EXIT_ERROR = 2
EXIT_RETRY = 3
EXIT_PERMANENT = 4

RETRIED_KINDS = frozenset({Failure.TRANSIENT.value})


@dataclass(frozen=True)
class Outcome:
    failed: Counter = field(default_factory=Counter)  # failure kind -> failed rows
    pending: int = 0
    metrics_written: bool = True

    @classmethod
    def of_coverage(cls, coverage: list[dict], metrics_written: bool) -> Outcome:
        """From ``status``'s coverage rows (each with ``failure_kinds`` and ``pending``)."""
        failed: Counter = Counter()
        for row in coverage:
            failed.update(row["failure_kinds"])
        return cls(failed, sum(row["pending"] for row in coverage), metrics_written)

    @property
    def complete(self) -> bool:
        return not self.failed and not self.pending and self.metrics_written

    @property
    def retryable(self) -> bool:
        """A plain rerun has something to do: transient failures, pending work or the metrics."""
        return bool(self.pending or not self.metrics_written or RETRIED_KINDS & set(self.failed))

    @property
    def exit_code(self) -> int:
        if self.complete:
            return EXIT_COMPLETE
        return EXIT_RETRY if self.retryable else EXIT_PERMANENT

    def counts(self) -> str:
        """``"3 failed (2 transient, 1 input), 4 pending, no metrics"``: what is missing, by kind."""
        parts = []
        if self.failed:
            kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(self.failed.items(), key=lambda kv: (-kv[1], kv[0])))
            parts.append(f"{sum(self.failed.values())} failed ({kinds})")
        if self.pending:
            parts.append(f"{self.pending} pending")
        if not self.metrics_written:
            parts.append("no metrics written")
        return ", ".join(parts)

    def line(self) -> str:
        """The verdict, one line: ``complete``, or ``incomplete: <counts>: <what to do>``."""
        if self.complete:
            return "complete"
        if self.retryable:
            advice = "rerun `orchestrator run` with the same config and --out to resume and retry"
        else:
            advice = "permanent failures only; `orchestrator run ... --retry-failed` redoes them"
        return f"incomplete: {self.counts()}: {advice}"

    def as_dict(self) -> dict:
        return {
            "complete": self.complete,
            "failed_by_kind": dict(sorted(self.failed.items())),
            "pending": self.pending,
            "metrics_written": self.metrics_written,
            "exit_code": self.exit_code,
            "summary": self.line(),
        }

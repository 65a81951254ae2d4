"""Reading a JSON Lines file whole: one object per non-blank line, a bad line named by file and number."""

from __future__ import annotations

import json
from pathlib import Path


def read_json_lines(path: Path, error: type[Exception]) -> list[dict]:
    """The objects of ``path``'s non-blank lines, in order; ``error`` ("path:line: not JSON (why)") on a bad one."""
    rows = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise error(f"{path}:{n}: not JSON ({e.msg})") from None
    return rows

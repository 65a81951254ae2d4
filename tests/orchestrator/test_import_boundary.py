"""The orchestrator imports no scorer module: what it needs of the metrics (the statistics core, the
metric directions, the default list) is on the contract side, and the rest comes from the scorer
service over gRPC. So the orchestrator image, which holds no scorer, runs every command."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ORCHESTRATOR = Path(__file__).resolve().parents[2] / "orchestrator"


def scorer_imports(source: str, filename: str) -> list[str]:
    """``file:line: statement`` of every import of ``scorers`` or a module under it, at any depth."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        if any(n == "scorers" or n.startswith("scorers.") for n in names):
            found.append(f"{filename}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_orchestrator_module_imports_the_scorer():
    sources = sorted(ORCHESTRATOR.glob("*.py"))
    assert len(sources) > 10  # the package is where this test thinks it is
    found = [hit for path in sources for hit in scorer_imports(path.read_text(), path.name)]
    assert not found, "orchestrator imports scorer modules:\n" + "\n".join(found)


@pytest.mark.parametrize(
    "source",
    [
        "import scorers",
        "import scorers.registry as r",
        "from scorers import detection",
        "from scorers.composite import TTS_WEIGHTS",
        "def f():\n    from scorers.detection import CostModel",
        "import os, scorers.i2d",
    ],
)
def test_the_check_sees_every_form_of_import(source):
    assert scorer_imports(source, "x.py")


@pytest.mark.parametrize(
    "source",
    [
        "from voxarena.stats import detection",
        "from .metrics import composite_table",
        "import scorers_extra",
        "x = 'scorers'",
        "from . import scorers",
    ],
)
def test_the_check_passes_other_imports(source):
    assert not scorer_imports(source, "x.py")

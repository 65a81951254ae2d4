"""The orchestrator imports no scorer module: what it needs of the metrics (the statistics core, the
metric directions, the default list) is on the contract side, and the rest comes from the scorer
service over gRPC. So the orchestrator image, which holds no scorer, runs every command."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ORCHESTRATOR = Path(__file__).resolve().parents[2] / "voxarena" / "orchestrator"
PACKAGE = "voxarena.orchestrator"
SCORERS = "voxarena.scorers"


def scorer_imports(source: str, filename: str) -> list[str]:
    """``file:line: statement`` of every import of ``voxarena.scorers`` or a module under it, at any depth."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            # a relative import resolved against the orchestrator package (``from ..scorers import x``)
            base = PACKAGE.split(".")[: len(PACKAGE.split(".")) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names = [module, *(f"{module}.{a.name}" for a in node.names)]
        else:
            continue
        if any(n == SCORERS or n.startswith(SCORERS + ".") for n in names):
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
        "import voxarena.scorers",
        "import voxarena.scorers.registry as r",
        "from voxarena.scorers import detection",
        "from voxarena import scorers",
        "from ..scorers.registry import REGISTRY",
        "from .. import scorers",
        "def f():\n    from voxarena.scorers.service import detection_intervals",
        "import os, voxarena.scorers.asr",
    ],
)
def test_the_check_sees_every_form_of_import(source):
    assert scorer_imports(source, "x.py")


@pytest.mark.parametrize(
    "source",
    [
        "from voxarena.stats import detection",
        "from .metrics_composite import composite_table",
        "import voxarena.scorers_extra",
        "from voxarena import stats",
        "x = 'voxarena.scorers'",
        "from . import scorers",
        "import scorers",
    ],
)
def test_the_check_passes_other_imports(source):
    assert not scorer_imports(source, "x.py")

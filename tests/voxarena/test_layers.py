"""Imports flow one way (docs: CONVENTIONS, "The shape of the system"): every import of every module under
``sdk/src/voxarena``, ``voxarena/`` and ``benchmarks/``, at the top or inside a function, goes to the
importer's own layer or one below it:

    contract < shared < stats < services < tools < orchestrator < benchmarks

- contract: the vendor's wheel, ``sdk/src/voxarena`` (stubs, SDK, conformance, codec, tasks, transport,
  lifecycle); it imports nothing of the project.
- shared: the facts and the signal processing both sides of the contract use: ``hashing`` (file sha256),
  ``metric_catalogue`` (every metric's identity: direction, unit, default, inputs), ``catalogue`` (every
  service's identity),
  ``dsp`` (the channel DSP the transform services and the orchestrator's conditions run).
- stats: the pure statistics core.
- services: the model services, the scorer, ``converted`` (loading converted models and their source
  weights, serving side) and ``attack`` (the black-box attack, a client of any detector).
- tools: ``convert`` (build time: exports the served models' checkpoints to ONNX, reading their
  serving-side facts) and ``deploy`` (the k8s manifests, from the catalogue).
- orchestrator: knows models by the catalogue only and talks to them over gRPC, so it imports no model
  code either (``MODEL_CODE``: no service, no scorer module, no converter), whatever the order would allow,
  and its image, which holds none of them, runs every command; nothing but benchmarks imports it.
- benchmarks: measure everything.

Inside a layer the packages import each other without a cycle. Inside the orchestrator the rooms keep the
order in ``ROOMS``: errors and Ctrl-C at the bottom, then the core rooms, then report < race < cli. The
core rooms (store, fleet, run, metrics) have no clean order yet; what stands in the way of
store < fleet < run < metrics (or with metrics below run) is:

- store/clips.py builds a clip from ``run.manifest``'s ManifestItem (store -> run);
- fleet/fleet.py takes ``run.config``'s RunConfig, ServiceConfig, TlsConfig and ``metrics.compare``'s
  identity_changes (fleet -> run, fleet -> metrics), while run.config builds on ``fleet.service_config``;
- metrics reads ``run.config`` and ``run.manifest`` (fusion, i2d, run_metrics), while run/pipeline.py,
  merge.py and offline.py call the metrics (run <-> metrics).

Config and manifest (with service_config) in a room of their own below store, and identity_changes beside
the fleet, would give  spec < store < fleet < metrics < run < report < race < cli.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# (source root, the folder under it whose modules are checked)
ROOTS = ((REPO / "sdk" / "src", "voxarena"), (REPO, "voxarena"), (REPO, "benchmarks"))


@dataclass(frozen=True)
class Layer:
    name: str
    packages: tuple[str, ...]  # the modules and packages (with everything under them) in the layer


LAYERS = (
    Layer(
        "contract",
        (
            "voxarena.v1",
            "voxarena.sdk",
            "voxarena.conformance",
            "voxarena.codec",
            "voxarena.tasks",
            "voxarena.transport",
            "voxarena.lifecycle",
            "voxarena.segments",
            "voxarena.streaming",
            "voxarena.attribution",
        ),
    ),
    Layer("shared", ("voxarena.hashing", "voxarena.metric_catalogue", "voxarena.catalogue", "voxarena.dsp")),
    Layer("stats", ("voxarena.stats",)),
    Layer("services", ("voxarena.services", "voxarena.scorers", "voxarena.converted", "voxarena.attack")),
    Layer("tools", ("voxarena.convert", "voxarena.deploy")),
    Layer("orchestrator", ("voxarena.orchestrator",)),
    Layer("benchmarks", ("benchmarks",)),
)
# What the orchestrator may not import although its layer is above: the models' own code.
MODEL_CODE = ("voxarena.services", "voxarena.scorers", "voxarena.converted", "voxarena.convert")
ROOMS = (
    Layer("base", ("voxarena.orchestrator", "voxarena.orchestrator.errors", "voxarena.orchestrator.ctrl_c")),
    Layer(
        "core",
        (
            "voxarena.orchestrator.store",
            "voxarena.orchestrator.fleet",
            "voxarena.orchestrator.run",
            "voxarena.orchestrator.metrics",
        ),
    ),
    Layer("report", ("voxarena.orchestrator.report",)),
    Layer("race", ("voxarena.orchestrator.race",)),
    Layer("cli", ("voxarena.orchestrator.cli",)),
    Layer("entry", ("voxarena.orchestrator.__main__",)),
)


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    is_package: bool


@dataclass(frozen=True)
class Import:
    importer: str
    line: int
    target: str  # the module it loads, resolved (relative imports, ``from pkg import submodule``)


def modules() -> dict[str, Module]:
    found = {}
    for base, folder in ROOTS:
        for path in sorted((base / folder).rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            name = ".".join(parts[:-1] if is_package else parts)
            found[name] = Module(name, path, is_package)
    return found


def import_targets(source: str, module: str, is_package: bool, known: set[str]) -> Iterator[tuple[int, str]]:
    """(line, module) of every project module an import in ``source`` loads, wherever the import is."""
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield node.lineno, sub if sub in known else base


def project_imports() -> list[Import]:
    mods = modules()
    known = set(mods)
    found = (
        Import(m.name, line, target)
        for m in mods.values()
        for line, target in import_targets(m.path.read_text(), m.name, m.is_package, known)
        if target.split(".")[0] in ("voxarena", "benchmarks")
    )
    return list(dict.fromkeys(found))  # ``from pkg import a, b`` loads pkg once


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def placed(module: str, order: tuple[Layer, ...]) -> tuple[int, str] | None:
    """(rank, package) of the longest package of ``order`` that holds ``module``; None: not in any."""
    best = None
    for rank, layer in enumerate(order):
        for package in layer.packages:
            if _within(module, package) and (best is None or len(package) > len(best[1])):
                best = (rank, package)
    return best


def layer_name(module: str) -> str:
    where = placed(module, LAYERS)
    return LAYERS[where[0]].name if where else "none"


def order_violations(imports: list[Import], order: tuple[Layer, ...], scope: str = "") -> list[str]:
    """Every import in ``scope`` that goes up ``order`` or out of it, said with both modules and layers."""
    chain = " < ".join(layer.name for layer in order)
    out = []
    for imp in imports:
        if scope and not (_within(imp.importer, scope) and _within(imp.target, scope)):
            continue
        src, dst = placed(imp.importer, order), placed(imp.target, order)
        if src is None or dst is None:
            missing = imp.importer if src is None else imp.target
            out.append(f"{imp.importer}:{imp.line} imports {imp.target}: {missing} is in no layer of {chain}")
        elif dst[0] > src[0]:
            out.append(
                f"{imp.importer}:{imp.line} (layer {order[src[0]].name}) imports {imp.target} "
                f"(layer {order[dst[0]].name}): imports go down {chain}"
            )
    return out


@pytest.fixture(scope="module")
def imports() -> list[Import]:
    return project_imports()


def test_every_module_is_in_a_layer_and_the_wheel_is_the_contract():
    mods = modules()
    assert len(mods) > 200 and "voxarena.orchestrator.run.pipeline" in mods  # the tree is where we think
    unplaced = [m for m in mods if placed(m, LAYERS) is None]
    assert not unplaced, "modules in no layer (add their package to LAYERS): " + ", ".join(unplaced)
    sdk = REPO / "sdk" / "src"
    wrong = []
    for m in mods.values():
        if (layer_name(m.name) == "contract") != m.path.is_relative_to(sdk):
            wrong.append(f"{m.name} ({m.path.relative_to(REPO)}) is in layer {layer_name(m.name)}")
    assert not wrong, "the contract layer is exactly the SDK's wheel:\n" + "\n".join(wrong)


def test_imports_go_down_the_layers(imports):
    found = order_violations(imports, LAYERS)
    assert not found, "\n".join(found)


def test_the_orchestrator_imports_no_model_code(imports):
    found = [
        f"{i.importer}:{i.line} (layer orchestrator) imports {i.target} (model code, layer {layer_name(i.target)}): "
        "the orchestrator knows models by the catalogue and reaches them over gRPC"
        for i in imports
        if _within(i.importer, "voxarena.orchestrator") and any(_within(i.target, p) for p in MODEL_CODE)
    ]
    assert not found, "\n".join(found)


def test_no_package_imports_another_that_imports_it_back(imports):
    """A cycle among the layers' packages (``voxarena.services`` <-> ``voxarena.convert`` was one), found
    as a package reaching itself through the import graph."""
    graph: dict[str, dict[str, str]] = {}
    for i in imports:
        src, dst = placed(i.importer, LAYERS), placed(i.target, LAYERS)
        if src and dst and src[1] != dst[1]:
            graph.setdefault(src[1], {}).setdefault(dst[1], f"{i.importer}:{i.line} imports {i.target}")
    cycles = []
    for start in graph:
        path, todo, seen = {start: [start]}, [start], {start}
        while todo:
            node = todo.pop()
            for nxt in graph.get(node, {}):
                if nxt == start:
                    hops = path[node] + [start]
                    cycles.append(" -> ".join(hops) + ": " + "; ".join(graph[a][b] for a, b in zip(hops, hops[1:])))
                elif nxt not in seen:
                    seen.add(nxt)
                    path[nxt] = path[node] + [nxt]
                    todo.append(nxt)
    assert not cycles, "\n".join(cycles)


def test_the_orchestrator_rooms_keep_their_order(imports):
    found = order_violations(imports, ROOMS, scope="voxarena.orchestrator")
    assert not found, "\n".join(found)


# ---------------------------------------------------------------- the checker itself

KNOWN = set(modules())


def targets(source: str, module: str = "voxarena.orchestrator.run.sample") -> set[str]:
    return {t for _, t in import_targets(source, module, False, KNOWN)}


@pytest.mark.parametrize(
    "source",
    [
        "import voxarena.scorers",
        "import voxarena.scorers.registry as r",
        "from voxarena.scorers import registry",
        "from voxarena import scorers",
        "from ...scorers.registry import REGISTRY",
        "from ... import scorers",
        "def f():\n    from voxarena.scorers.service import detection_intervals",
        "if True:\n    import os, voxarena.scorers.asr",
        "class C:\n    def m(self):\n        from voxarena.scorers import service as s",
    ],
)
def test_the_checker_sees_every_form_of_import(source):
    found = order_violations([Import("voxarena.stats.x", 1, t) for t in targets(source)], LAYERS)
    assert any("imports voxarena.scorers" in f and "(layer services)" in f for f in found), found


@pytest.mark.parametrize(
    "source",
    [
        "from voxarena.stats import detection",
        "from . import config",
        "import voxarena.scorers_extra",
        "from voxarena import stats",
        "x = 'voxarena.scorers'",
        "import scorers",
    ],
)
def test_the_checker_passes_other_imports(source):
    assert not any(_within(t, "voxarena.scorers") for t in targets(source))


def test_a_message_names_both_modules_and_both_layers():
    found = order_violations(
        [Import("voxarena.services.transforms.channel.model", 12, "voxarena.orchestrator.run.channel")], LAYERS
    )
    assert found == [
        "voxarena.services.transforms.channel.model:12 (layer services) imports voxarena.orchestrator.run.channel "
        "(layer orchestrator): imports go down contract < shared < stats < services < tools < orchestrator < benchmarks"
    ]
    assert "is in no layer" in order_violations([Import("voxarena.stats.x", 3, "voxarena.newthing")], LAYERS)[0]

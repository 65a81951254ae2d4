"""The README's services table, written by ``make generate`` between two markers in ``README.md``.

A row's name, role, folder and install profile come from the catalogue; its family, tasks, native rate and
licence from the model class's GetInfo facts (class attributes of ``<module>.model``'s class, found by
``voxarena.services.model_class``), so the table says what the service itself answers. The classes are
imported, not parsed: a model module imports numpy, scipy and the SDK at its top and its engine only in
``load()``, so importing all of them takes about two seconds and needs only the core dependencies, and
computed or inherited facts (``SAMPLE_RATE`` constants, mbrola's tasks from espeak-ng's class) come out as
GetInfo reports them. The scorer has no model class: its licence is read (with ``ast``, without importing
its metrics) from the ``licence=`` its ``service.py`` puts in GetInfo.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

from voxarena.catalogue import Service
from voxarena.sdk import DetectorModel, GeneratorModel, TransformModel
from voxarena.services.model_class import ModelClassError, model_class

from .compose import CatalogueError
from .header import generated_by

README = "README.md"
BEGIN = f"<!-- {generated_by('this table')} Also made from each service's model.py (its GetInfo facts). -->"
END = "<!-- end of the generated services table -->"
COLUMNS = ("service", "role", "family", "tasks", "native rate", "licence", "install profile")


def _khz(rate: int) -> str:
    return f"{rate / 1000:g}"


def native_rate(cls: type) -> str:
    """The native rate(s) GetInfo declares: the class's, and any voice's own (flite's kal is 8 kHz)."""
    own = [c for c in cls.__mro__ if c.__module__ not in ("voxarena.sdk.model", "builtins")]  # not the role's default
    declared = any("native_sample_rate" in vars(c) for c in own)
    rate = int(cls.native_sample_rate)  # type: ignore[attr-defined]
    if issubclass(cls, TransformModel) and rate == 0:
        return "any"  # the SDK's meaning of 0 for a transform
    if not declared:  # an instance settles it in load(), e.g. from its checkpoint
        return f"set by load() (class default {_khz(rate)} kHz)"
    rates = {rate} | {v.sample_rate for v in getattr(cls, "voices", ()) if v.sample_rate}
    return " / ".join(_khz(r) for r in sorted(rates)) + " kHz"


def _tasks(svc: Service, cls: type) -> str:
    if issubclass(cls, GeneratorModel):
        return ", ".join(cls.tasks)
    if issubclass(cls, DetectorModel):
        # A trained detector serves LLRs through the calibration its training fitted (loaded with its weights).
        return "score (LLR)" if cls.calibrated or svc.trainable else "score (not calibrated)"
    return "transform"


def _family(cls: type) -> str:
    family = str(cls.kind if issubclass(cls, TransformModel) else cls.family)  # type: ignore[attr-defined]
    return family or "set by load() (from the checkpoint)"  # an adapter's, e.g. hf-tts


def scorer_licence(svc: Service) -> str:
    """The ``licence="..."`` the scorer's ``service.py`` gives GetInfo."""
    spec = importlib.util.find_spec(svc.module)
    if spec is None or not spec.submodule_search_locations:
        raise CatalogueError(f"{svc.name}: module {svc.module} is not a package")
    path = Path(next(iter(spec.submodule_search_locations))) / "service.py"
    found = [
        kw.value.value
        for node in ast.walk(ast.parse(path.read_text(), str(path)))
        if isinstance(node, ast.Call)
        for kw in node.keywords
        if kw.arg == "licence" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str)
    ]
    if len(found) != 1:
        raise CatalogueError(f"{svc.name}: {path} sets licence= {len(found)} times; the table needs one")
    return str(found[0])


def _install(svc: Service) -> str:
    return svc.profile + (f"; compose profile `{svc.compose_profile}`" if svc.compose_profile else "")


def row(svc: Service) -> list[str]:
    """One table row: the catalogue's facts and the model class's."""
    link = f"[{svc.name}]({svc.folder}/README.md)"
    if svc.role == "scorer":
        return [link, svc.role, "-", "metrics", "-", scorer_licence(svc), _install(svc)]
    try:
        cls = model_class(svc.module)
    except ModelClassError as e:
        raise CatalogueError(f"{svc.name}: {e}") from e
    if cls.name != svc.name:  # type: ignore[attr-defined]
        raise CatalogueError(f"{svc.name}: its model class {cls.__name__} answers GetInfo as {cls.name!r}")  # type: ignore[attr-defined]
    facts = [_family(cls), _tasks(svc, cls), native_rate(cls), cls.licence]  # type: ignore[attr-defined]
    return [link, svc.role, *facts, _install(svc)]


def table(services: tuple[Service, ...]) -> str:
    """The markdown table of every served service (not the orchestrator, a client), catalogue order."""
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    for svc in services:
        if svc.role != "orchestrator":
            lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in row(svc)) + " |")
    return "\n".join(lines) + "\n"


def splice(readme: str, services: tuple[Service, ...]) -> str:
    """``readme`` with its generated block (from a ``<!-- ...GENERATED by... -->`` line to the end marker,
    whatever the header said before) replaced by the header and the table."""
    block = re.compile(rf"^<!-- [^\n]*GENERATED by [^\n]*-->\n.*?^{re.escape(END)}", re.M | re.S)
    found = block.findall(readme)
    if len(found) != 1:
        raise CatalogueError(
            f"{README}: {len(found)} generated services tables (a GENERATED comment line, then {END!r})"
        )
    return block.sub(lambda _: f"{BEGIN}\n{table(services)}{END}", readme)

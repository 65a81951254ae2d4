"""``make generate``: every file made from the service catalogue, written (or checked) in one go.

    python -m voxarena.deploy.generate            # write them into this checkout
    python -m voxarena.deploy.generate --check    # exit 1 naming each file that differs (nothing written)
    python -m voxarena.deploy.generate --out DIR  # write them under DIR instead

From ``voxarena/catalogue.py``: ``docker-compose.yml`` and its mTLS overlay (``voxarena.deploy.compose``),
``compose/swarm.yml`` (``voxarena.deploy.swarm``, from the compose file), the kustomize tree ``deploy/k8s``
(``voxarena.deploy.k8s``, from the compose file, ``configs/compose-smoke.yaml`` and
``compose/nightly/nightly.sh``) and the README's services table (``voxarena.deploy.readme_table``, with each
model class's GetInfo facts). Each row is checked first: a unique name, its folder (``model.py``,
``__main__.py``, ``README.md``) and its extra in ``pyproject.toml``. ``render`` takes the catalogue and the
root its other inputs are read from, so a test can add a row and generate into a temporary directory.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

import tomllib
import yaml

from voxarena.catalogue import SERVICES, Service

from . import k8s, monitoring, swarm
from .compose import COMPOSE_FILE, MTLS_FILE, CatalogueError, render_compose, render_mtls
from .header import GENERATOR
from .readme_table import README, splice

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = "pyproject.toml"
# Every served package holds these (and model.py, but the scorer, which serves metrics, not a model class).
FOLDER_FILES = ("__main__.py", "README.md")
ERRORS = (CatalogueError, swarm.StackError, k8s.ComposeError, OSError)


def package_dir(svc: Service) -> Path:
    spec = importlib.util.find_spec(svc.module)
    if spec is None or not spec.submodule_search_locations:
        raise CatalogueError(f"{svc.name}: module {svc.module} is not an importable package (its folder)")
    return Path(next(iter(spec.submodule_search_locations)))


def check_rows(services: tuple[Service, ...], source: Path) -> None:
    """Each row names a unique service, an existing folder and a pyproject extra; else an error naming it."""
    extras = tomllib.loads((source / PYPROJECT).read_text())["project"].get("optional-dependencies", {})
    seen: set[str] = set()
    for svc in services:
        if svc.name in seen:
            raise CatalogueError(f"{svc.name}: two catalogue rows have this name")
        seen.add(svc.name)
        if svc.extra is not None and svc.extra not in extras:
            raise CatalogueError(
                f"{svc.name}: extra {svc.extra!r} is not in {PYPROJECT} [project.optional-dependencies]"
            )
        if svc.trainable and svc.role != "detector":
            raise CatalogueError(f"{svc.name}: trainable, but a {svc.role}; only detectors are trained")
        if svc.role == "orchestrator":  # a client, started by its console script
            continue
        folder = package_dir(svc)
        needed = [*FOLDER_FILES, *(["model.py"] if svc.role != "scorer" else [])]
        needed += ["train.py"] if svc.trainable else []
        missing = [f for f in needed if not (folder / f).is_file()]
        if missing:
            raise CatalogueError(f"{svc.name}: {folder} has no {', '.join(missing)}")


def render(services: tuple[Service, ...] = SERVICES, source: Path = ROOT) -> dict[str, str]:
    """Path (relative to the repository root) -> the text ``make generate`` writes there."""
    check_rows(services, source)
    compose_text = render_compose(services)
    compose = yaml.safe_load(compose_text)
    files = {
        COMPOSE_FILE: compose_text,
        MTLS_FILE: render_mtls(services),
        swarm.STACK_FILE: swarm.render(compose, services),
        monitoring.PROMETHEUS_FILE: monitoring.render_prometheus(services),
    }
    files.update({f"{k8s.K8S_DIR}/{p}": text for p, text in k8s.render(services, compose, source).items()})
    files[README] = splice((source / README).read_text(), services)
    return files


def stale(files: dict[str, str], out: Path) -> list[str]:
    """Generated files under ``out/deploy/k8s`` that the catalogue no longer makes (a removed service's);
    a file without the generated header is not ours and is left alone."""
    tree = out / k8s.K8S_DIR
    found = [str(p.relative_to(out)) for p in sorted(tree.rglob("*.yaml"))] if tree.is_dir() else []
    return [p for p in found if p not in files and (out / p).read_text().startswith(k8s.HEADER)]


def differences(files: dict[str, str], out: Path) -> list[str]:
    """What ``write`` would change under ``out``, one line per file."""
    problems = [f"missing {p}" for p in files if not (out / p).is_file()]
    problems += [f"differs: {p}" for p in files if (out / p).is_file() and (out / p).read_text() != files[p]]
    return problems + [f"no longer generated: {p}" for p in stale(files, out)]


def write(files: dict[str, str], out: Path) -> list[str]:
    """Write ``files`` under ``out`` (only those that change) and remove the stale ones; returns what changed."""
    changed = []
    for path in stale(files, out):
        (out / path).unlink()
        changed.append(path)
    for path, text in files.items():
        target = out / path
        if target.is_file() and target.read_text() == text:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        changed.append(path)
    return changed


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m voxarena.deploy.generate", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a committed file differs; write nothing")
    parser.add_argument("--out", type=Path, default=ROOT, help="the root to write under (default: this checkout)")
    args = parser.parse_args(argv)
    try:
        files = render()
        if args.check:
            problems = differences(files, args.out)
            for line in problems:
                print(f"{line}: run {GENERATOR.split(' (')[0]}", file=sys.stderr)
            return 1 if problems else 0
        changed = write(files, args.out)
    except ERRORS as e:
        print(f"generate: {e}", file=sys.stderr)
        return 2
    print(f"{len(files)} files generated, {len(changed)} changed" + "".join(f"\n  {p}" for p in changed))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

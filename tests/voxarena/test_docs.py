"""The manual (mkdocs.yml, docs/) and the README that is its front door.

- The site builds with ``mkdocs build --strict``, so a broken link or anchor, a page left out of the nav or a
  link outside docs/ fails here (mkdocs.yml's ``validation`` turns each of those into a warning).
- The README's relative links reach files that exist, and its ``page.md#anchor`` links reach a heading.
- Every size claim ("`path` (under N lines)", "`dir/`, every module under N lines") is true by ``wc -l``,
  and no other "N-line" claim is written where this test cannot check it.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
TEXTS = [REPO / "README.md", *sorted(DOCS.glob("*.md"))]

# "`path` (under N lines)" for one file, "`dir/`, every module under N lines" for every .py below dir.
SIZE_CLAIM = re.compile(r"`(?P<path>[\w./-]+)`,? \(?(?P<every>every module )?under (?P<limit>\d+) lines")
ANY_LINE_COUNT = re.compile(r"\b\d+[- ]lines?\b")
LINK = re.compile(r"\]\((?P<target>[^)\s]+)\)")


def test_the_manual_builds_strict_without_a_warning(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None:
        pytest.skip("mkdocs is not installed: it comes with the test profile (pip install -e './sdk' -e '.[test]')")
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"), "--site-dir", str(site)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "WARNING" not in output, output
    for page in DOCS.glob("*.md"):
        assert (site / page.with_suffix(".html").name).is_file(), f"{page.name} was not built"


def slug(heading: str) -> str:
    """The anchor mkdocs (Python-Markdown's toc) gives a heading."""
    text = re.sub(r"[`*_\[\]]|\(([^)]*)\)", lambda m: m.group(1) or "", heading)
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(page: Path) -> set[str]:
    return {slug(line.lstrip("#").strip()) for line in page.read_text().splitlines() if line.startswith("#")}


def test_the_readme_links_reach_files_and_headings() -> None:
    readme = REPO / "README.md"
    targets = [m.group("target") for m in LINK.finditer(readme.read_text())]
    assert any(t.startswith("docs/") for t in targets), "the README links into the manual"
    for target in targets:
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (REPO / path) if path else readme
        assert file.exists(), f"README.md links to {target}: no such file"
        if anchor:
            assert anchor in anchors(file), f"README.md links to {target}: no such heading in {path}"


def test_the_heading_slugs_match_mkdocs() -> None:
    assert slug("When a call fails: retries, resume, exit codes") == "when-a-call-fails-retries-resume-exit-codes"
    assert slug("Calibration: what actDCF and Cllr mean here") == "calibration-what-actdcf-and-cllr-mean-here"
    assert slug("Deadlines, retries, batches: `execution:`") == "deadlines-retries-batches-execution"


def lines(path: Path) -> int:
    return len(path.read_text().splitlines())


def test_every_size_claim_is_true() -> None:
    claims = [(text, m) for text in TEXTS for m in SIZE_CLAIM.finditer(text.read_text())]
    assert len(claims) >= 3, "the README and the vendor's guide state module sizes"
    for text, claim in claims:
        path, limit = REPO / claim["path"], int(claim["limit"])
        files = sorted(path.rglob("*.py")) if claim["every"] else [path]
        assert files and all(f.is_file() for f in files), f"{text.name}: {claim['path']} names no file"
        over = {str(f.relative_to(REPO)): lines(f) for f in files if lines(f) >= limit}
        assert not over, f"{text.name} says {claim['path']} is under {limit} lines: {over}"


def test_no_line_count_is_stated_where_it_is_not_checked() -> None:
    for text in TEXTS:
        content = text.read_text()
        checked = {claim.start("limit") for claim in SIZE_CLAIM.finditer(content)}
        for number in ANY_LINE_COUNT.finditer(content):
            assert number.start() in checked, f"{text.name}: '{number.group()}' is not in a checked size claim"

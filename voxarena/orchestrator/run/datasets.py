"""``orchestrator datasets fetch NAME``: download a public corpus, verify its checksum, unpack it.

For users with internet access (this project's own tests and CI read the shared local copy). Each
corpus has a URL, its size and the archive's sha256 (published by the corpus or computed from the
official archive whose published md5 matches); a download that does not match is deleted and
reported, never unpacked. Downloads resume into ``NAME.part``; an archive already present and
verified is not fetched again. Members that would unpack outside the destination are refused.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Corpus:
    name: str
    url: str
    sha256: str
    size: int | None
    licence: str
    layout: str  # the importer that reads it after unpacking


OPENSLR_12 = "https://www.openslr.org/resources/12"
LIBRISPEECH_LICENCE = "CC BY 4.0 (LibriSpeech, V. Panayotov et al. 2015)"
CORPORA = {
    c.name: c
    for c in (
        Corpus(
            "librispeech-test-clean",
            f"{OPENSLR_12}/test-clean.tar.gz",
            "39fde525e59672dc6d1551919b1478f724438a95aa55f874b576be21967e6c23",
            346_663_984,
            LIBRISPEECH_LICENCE,
            "librispeech",
        ),
        Corpus(
            "librispeech-test-other",
            f"{OPENSLR_12}/test-other.tar.gz",
            "d09c181bba5cf717b3dee7d4d592af11a3ee3a09e08ae025c5506f6ebe961c29",
            328_757_843,
            LIBRISPEECH_LICENCE,
            "librispeech",
        ),
        Corpus(
            "librispeech-dev-clean",
            f"{OPENSLR_12}/dev-clean.tar.gz",
            "76f87d090650617fca0cac8f88b9416e0ebf80350acb97b343a85fa903728ab3",
            None,
            LIBRISPEECH_LICENCE,
            "librispeech",
        ),
        Corpus(
            "librispeech-dev-other",
            f"{OPENSLR_12}/dev-other.tar.gz",
            "12661c48e8c3fe1de2c1caa4c3e135193bfb1811584f11f569dd12645aa84365",
            None,
            LIBRISPEECH_LICENCE,
            "librispeech",
        ),
        Corpus(
            "librispeech-train-clean-100",
            f"{OPENSLR_12}/train-clean-100.tar.gz",
            "d4ddd1d5a6ab303066f14971d768ee43278a5f2a0aa43dc716b0e64ecbbbf6e2",
            None,
            LIBRISPEECH_LICENCE,
            "librispeech",
        ),
    )
}


class FetchError(RuntimeError):
    pass


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _download(url: str, part: Path, progress: Callable[[int, int | None], None] | None) -> None:
    done = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={done}-"} if done else {})
    with urllib.request.urlopen(request, timeout=60) as resp:
        if done and resp.status != 206:  # the server ignored the range: start over
            done = 0
        total = resp.headers.get("Content-Length")
        total = int(total) + done if total is not None else None
        with open(part, "ab" if done else "wb") as out:
            while chunk := resp.read(1 << 20):
                out.write(chunk)
                done += len(chunk)
                if progress:
                    progress(done, total)


def _safe_extract(archive: Path, dest: Path) -> None:
    root = dest.resolve()
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            target = (dest / member.name).resolve()
            if not str(target).startswith(str(root) + os.sep) and target != root:
                raise FetchError(f"{archive}: member {member.name!r} would unpack outside {dest}; refusing")
            if member.issym() or member.islnk():
                raise FetchError(f"{archive}: member {member.name!r} is a link; refusing")
        if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4: the library's own safety net as well
            tar.extractall(dest, filter="data")
        else:
            tar.extractall(dest)


def fetch(
    name: str, dest: Path, url: str | None = None, progress: Callable[[int, int | None], None] | None = None
) -> Path:
    """Download (or reuse), verify and unpack corpus ``name`` under ``dest``; returns ``dest``."""
    if name not in CORPORA:
        raise FetchError(f"unknown corpus {name!r}; available: {', '.join(sorted(CORPORA))}")
    corpus = CORPORA[name]
    dest.mkdir(parents=True, exist_ok=True)
    archive = dest / Path(corpus.url).name
    marker = dest / f".{name}.unpacked"
    if marker.exists() and marker.read_text().strip() == corpus.sha256:
        return dest
    if not (archive.exists() and _sha256(archive) == corpus.sha256):
        part = archive.with_name(archive.name + ".part")
        try:
            _download(url or corpus.url, part, progress)
        except OSError as e:
            raise FetchError(f"{name}: download from {url or corpus.url} failed: {e} (rerun to resume)") from None
        actual = _sha256(part)
        if actual != corpus.sha256:
            part.unlink()
            raise FetchError(
                f"{name}: checksum mismatch: sha256 {actual}, expected {corpus.sha256}; the download was deleted"
            )
        shutil.move(part, archive)
    _safe_extract(archive, dest)
    marker.write_text(corpus.sha256 + "\n")
    return dest

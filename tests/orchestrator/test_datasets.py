"""``datasets fetch`` against a local HTTP server serving an archive the test makes: verified,
unpacked, reused, resumed; a wrong checksum or an escaping member is refused."""

from __future__ import annotations

import functools
import hashlib
import http.server
import io
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import pytest

from voxarena.orchestrator.run import datasets
from voxarena.orchestrator.run.datasets import Corpus, FetchError, fetch

REPO = Path(__file__).resolve().parents[2]


def make_archive(path: Path, members: dict[str, bytes]) -> str:
    with tarfile.open(path, "w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def server(tmp_path):
    root = tmp_path / "www"
    root.mkdir()

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(root)))
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield root, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def register(monkeypatch, url: str, sha: str, name: str = "tiny") -> None:
    monkeypatch.setitem(datasets.CORPORA, name, Corpus(name, url, sha, None, "CC0", "librispeech"))


def test_fetch_verifies_unpacks_and_reuses(server, tmp_path, monkeypatch):
    root, base = server
    sha = make_archive(
        root / "tiny.tar.gz",
        {"LibriSpeech/test-x/1/2/1-2-0000.flac": b"fLaC", "LibriSpeech/test-x/1/2/1-2.trans.txt": b"1-2-0000 HELLO\n"},
    )
    register(monkeypatch, f"{base}/tiny.tar.gz", sha)
    dest = tmp_path / "data"
    fetch("tiny", dest)
    assert (dest / "LibriSpeech/test-x/1/2/1-2.trans.txt").read_text() == "1-2-0000 HELLO\n"
    (root / "tiny.tar.gz").unlink()  # a second fetch needs no network
    fetch("tiny", dest)


def test_resumes_a_partial_download(server, tmp_path, monkeypatch):
    root, base = server
    sha = make_archive(root / "tiny.tar.gz", {"a/b.txt": b"x" * 100_000})
    register(monkeypatch, f"{base}/tiny.tar.gz", sha)
    dest = tmp_path / "data"
    dest.mkdir()
    data = (root / "tiny.tar.gz").read_bytes()
    (dest / "tiny.tar.gz.part").write_bytes(data[: len(data) // 2])
    fetch("tiny", dest)
    assert (dest / "a/b.txt").stat().st_size == 100_000


def test_checksum_mismatch_is_refused_and_deleted(server, tmp_path, monkeypatch):
    root, base = server
    make_archive(root / "tiny.tar.gz", {"a.txt": b"a"})
    register(monkeypatch, f"{base}/tiny.tar.gz", "0" * 64)
    with pytest.raises(FetchError, match="checksum mismatch.*deleted"):
        fetch("tiny", tmp_path / "data")
    assert not list((tmp_path / "data").iterdir())


def test_member_escaping_the_destination_is_refused(server, tmp_path, monkeypatch):
    root, base = server
    sha = make_archive(root / "evil.tar.gz", {"../evil.txt": b"x"})
    register(monkeypatch, f"{base}/evil.tar.gz", sha)
    with pytest.raises(FetchError, match="outside"):
        fetch("tiny", tmp_path / "data")
    assert not (tmp_path / "evil.txt").exists()


def test_unknown_corpus_and_cli(tmp_path):
    with pytest.raises(FetchError, match="unknown corpus 'nope'; available: librispeech-dev-clean"):
        fetch("nope", tmp_path)
    out = subprocess.run(
        [sys.executable, "-m", "voxarena.orchestrator", "datasets", "list"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0 and "librispeech-test-clean" in out.stdout and "39fde525" not in out.stdout
    bad = subprocess.run(
        [sys.executable, "-m", "voxarena.orchestrator", "datasets", "fetch", "nope", "--dest", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 1 and "unknown corpus 'nope'" in bad.stderr


class RangeServer:
    """Serves one archive, honouring ``Range: bytes=N-`` (206 + Content-Range) unless told not to, and
    records every request's Range header and the bytes it sent."""

    def __init__(self, data: bytes, honour_range: bool = True) -> None:
        self.data, self.honour_range = data, honour_range
        self.ranges: list[str | None] = []
        self.sent = 0
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                header = self.headers.get("Range")
                outer.ranges.append(header)
                start = 0
                if header and outer.honour_range:
                    assert header.startswith("bytes=") and header.endswith("-"), header
                    start = int(header[len("bytes=") : -1])
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(outer.data) - 1}/{len(outer.data)}")
                else:
                    self.send_response(200)
                body = outer.data[start:]
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                outer.sent += len(body)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/tiny.tar.gz"


@pytest.mark.parametrize("honour_range", [True, False])
def test_a_partial_download_resumes_with_a_range_request(tmp_path, monkeypatch, honour_range):
    archive = tmp_path / "tiny.tar.gz"
    import random

    rng = random.Random(0)
    sha = make_archive(archive, {"a/b.bin": bytes(rng.getrandbits(8) for _ in range(200_000))})  # incompressible
    data = archive.read_bytes()
    served = RangeServer(data, honour_range)
    try:
        register(monkeypatch, served.url, sha)
        dest = tmp_path / "data"
        dest.mkdir()
        half = len(data) // 2
        (dest / "tiny.tar.gz.part").write_bytes(data[:half])
        fetch("tiny", dest)
    finally:
        served.httpd.shutdown()
    # The one request asked for the rest of the file, from the first byte the .part did not have.
    assert served.ranges == [f"bytes={half}-"]
    if honour_range:
        assert served.sent == len(data) - half  # only the missing half crossed the network
    else:
        assert served.sent == len(data)  # a server that ignores ranges: started over, still right
    assert (dest / "a/b.bin").stat().st_size == 200_000
    assert hashlib.sha256((dest / "tiny.tar.gz").read_bytes()).hexdigest() == sha

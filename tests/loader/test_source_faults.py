"""Remote sources fail clearly: transient errors are retried with backoff, a stalled server times out,
an unreachable one says so (not "taxonomy file missing"), an endless index is refused, and names asked
for outside the source's coverage are reported. Against Python's own HTTP server on 127.0.0.1."""

from __future__ import annotations

import contextlib
import http.server
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import vignette
import vignette_bench.loader.reader as loader_reader
import vignette_bench.loader.sources as loader_sources
from vignette_bench.dataset_builder.sample import build_sample


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sample(
        tmp_path_factory.mktemp("remote") / "src", size=48, identities=("muslim", "hindu"), activities=("cooking",)
    )


@contextlib.contextmanager
def serve(root: Path, behaviour) -> Iterator[str]:
    """Serve ``root`` with Range support; ``behaviour(handler, path) -> bool`` may answer instead (True)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def do_HEAD(self) -> None:
            self.do_GET(head=True)

        def do_GET(self, head: bool = False) -> None:
            rel = self.path.split("?", 1)[0].lstrip("/")
            if behaviour(self, rel):
                return
            path = root / rel
            if not path.is_file():
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            data = path.read_bytes()
            rng = self.headers.get("Range")
            start, end = 0, len(data)
            if rng:
                a, b = rng.removeprefix("bytes=").split("-")
                start, end = int(a), min(int(b) + 1 if b else len(data), len(data))  # clamp, as real servers do
            self.send_response(206 if rng else 200)
            self.send_header("Content-Length", str(end - start))
            self.send_header("Accept-Ranges", "bytes")
            if rng:
                self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
            self.end_headers()
            if not head:
                self.wfile.write(data[start:end])

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture()
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader_sources, "READ_TIMEOUT_S", 1.0)
    monkeypatch.setattr(loader_sources, "CONNECT_TIMEOUT_S", 1.0)
    monkeypatch.setattr(loader_sources, "BACKOFF_S", 0.01)


def test_transient_errors_are_retried(folder: Path, quick: None) -> None:
    failures = {"n": 0}

    def flaky(handler, rel: str) -> bool:
        if rel.endswith("index.parquet") and failures["n"] < 2:
            failures["n"] += 1
            handler.send_response(503)
            handler.send_header("Content-Length", "0")
            handler.end_headers()
            return True
        return False

    with serve(folder, flaky) as url:
        ds = vignette.load_dataset(url, "identity_contrast")
        assert len(ds) > 0 and ds[0]["image"].size == (672, 336)
    assert failures["n"] == 2


def test_a_stalled_server_times_out_with_the_url_named(folder: Path, quick: None) -> None:
    def stall(handler, rel: str) -> bool:
        if rel.endswith("index.parquet"):
            handler.send_response(200)
            handler.send_header("Content-Length", "100000")
            handler.end_headers()
            time.sleep(5)
            return True
        return False

    with serve(folder, stall) as url:
        start = time.perf_counter()
        with pytest.raises(vignette.SourceError, match=r"renders/index.parquet: .*attempt\(s\)"):
            vignette.load_dataset(url, "identity_contrast")
        assert time.perf_counter() - start < 30


def test_an_unreachable_source_says_so_not_taxonomy_missing(quick: None) -> None:
    with pytest.raises(
        vignette.SourceError, match=r"http://127.0.0.1:9/renders/index.parquet: .*check the URL and the network"
    ):
        vignette.load_dataset("http://127.0.0.1:9", "identity_contrast")


def test_an_endless_index_is_refused(folder: Path, quick: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader_reader, "MAX_INDEX_BYTES", 2048)
    with serve(folder, lambda h, r: False) as url:
        with pytest.raises(vignette.SourceError, match=r"index.parquet: larger than 2,048 bytes"):
            vignette.load_dataset(url, "identity_contrast")


def test_names_outside_the_sources_coverage_are_reported(folder: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="vignette"):
        ds = vignette.load_dataset(folder, "identity_contrast", activities=["cooking", "swimming"])
    assert len(ds) > 0
    assert "no renders of activities ['swimming']" in caplog.text

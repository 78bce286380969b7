"""HTTP faults through the real CLI (issue 35): a server that accepts and then says nothing, and one
that streams an endless chunked body with no Content-Length, end in `error:` naming the URL within
the deadline and the byte cap, in every command that reads a URL (the loader, `build verify`)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import vignette
import vignette_bench.dataset_builder.verify as verify_mod
import vignette_bench.loader.reader as loader_reader
import vignette_bench.loader.sources as loader_sources
import vignette_bench.remote as remote
from tests.loader.test_source_faults import serve
from vignette_bench.cli import main as vignette_cli


@pytest.fixture()
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deadlines of seconds, not minutes: the behaviour (an end, not a hang) is what is tested."""
    for module in (remote, loader_sources):
        monkeypatch.setattr(module, "READ_TIMEOUT_S", 1.0)
        monkeypatch.setattr(module, "CONNECT_TIMEOUT_S", 1.0)
        monkeypatch.setattr(module, "READ_DEADLINE_S", 3.0)
    monkeypatch.setattr(loader_sources, "RETRIES", 1)


@contextlib.contextmanager
def silent_server() -> Iterator[str]:
    """Accepts every connection, reads the request, and never sends a byte."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                continue
            held.append(conn)  # kept open, never answered

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        for c in held:
            c.close()
        server.close()


def test_build_verify_against_a_silent_server_ends_in_error(quick: None, capsys) -> None:
    """Before: `vignette build verify --source http://HOST/x` printed nothing for 480 s."""
    with silent_server() as url:
        start = time.monotonic()
        code = vignette_cli(["build", "verify", "--source", f"{url}/x"])
        took = time.monotonic() - start
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and f"{url}/x/renders/index.parquet" in err, err
    assert "Traceback" not in err and took < 20


def test_the_loader_against_a_silent_server_ends_in_error(quick: None) -> None:
    with silent_server() as url:
        start = time.monotonic()
        with pytest.raises(vignette.SourceError, match=r"renders/index.parquet"):
            vignette.load_dataset(url, "identity_contrast")
        assert time.monotonic() - start < 30


def _endless_chunked(sent: dict[str, int]):
    """Ignores Range and HEAD's question of size: a chunked body of zeros with no Content-Length (1 GiB)."""

    def behaviour(handler, rel: str) -> bool:
        if not rel.endswith("index.parquet"):
            return False
        handler.send_response(200)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        if handler.command == "HEAD":
            return True
        chunk = b"\0" * 65536
        try:
            for _ in range(16384):
                handler.wfile.write(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
                sent["bytes"] += len(chunk)
        except OSError:  # the reader hung up: what is tested
            pass
        handler.close_connection = True
        return True

    return behaviour


def test_a_chunked_index_without_length_is_capped_by_the_loader(
    source: Path, quick: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: the cap was a Range header; a server ignoring it was read whole (12.7 GB in 150 s)."""
    monkeypatch.setattr(loader_reader, "MAX_INDEX_BYTES", 2 * 2**20)
    monkeypatch.setattr(remote, "READ_DEADLINE_S", 60.0)
    monkeypatch.setattr(loader_sources, "READ_DEADLINE_S", 60.0)
    sent = {"bytes": 0}
    with serve(source, _endless_chunked(sent)) as url:
        with pytest.raises(vignette.SourceError, match=r"index.parquet: larger than 2,097,152 bytes"):
            vignette.load_dataset(url, "identity_contrast")
    assert sent["bytes"] < 64 * 2**20  # stopped near the cap, not at the end of the gigabyte


def test_a_chunked_index_without_length_is_capped_by_build_verify(
    source: Path, quick: None, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    monkeypatch.setattr(verify_mod, "MAX_INDEX_BYTES", 2 * 2**20)
    monkeypatch.setattr(remote, "READ_DEADLINE_S", 60.0)
    sent = {"bytes": 0}
    with serve(source, _endless_chunked(sent)) as url:
        code = vignette_cli(["build", "verify", "--source", url])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and "larger than 2,097,152 bytes" in err, err
    assert sent["bytes"] < 64 * 2**20


def test_a_trickling_index_meets_the_deadline(source: Path, quick: None, capsys) -> None:
    """One byte every 0.5 s never trips the between-bytes timeout; the deadline ends it."""

    def trickle(handler, rel: str) -> bool:
        if not rel.endswith("index.parquet"):
            return False
        handler.send_response(200)
        handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()
        if handler.command == "GET":
            try:
                for _ in range(60):
                    handler.wfile.write(b"1\r\n\0\r\n")
                    handler.wfile.flush()
                    time.sleep(0.5)
            except OSError:
                pass
            handler.close_connection = True
        return True

    with serve(source, trickle) as url:
        start = time.monotonic()
        code = vignette_cli(["build", "verify", "--source", url])
        took = time.monotonic() - start
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and "index.parquet" in err and took < 20, (err, took)

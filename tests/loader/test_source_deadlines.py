"""Remote reads end in time and say why (issue 24, item 5): a trickling server meets a deadline, each
retry prints a line, an empty exception text is replaced by its cause, an index whose declared size
is over the cap is refused before its body is read, and offline mode is not retried."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

import vignette
import vignette_bench.loader.reader as loader_reader
import vignette_bench.loader.sources as loader_sources
from tests.loader.test_source_faults import folder, serve  # noqa: F401 — the shared fixture and server


@pytest.fixture()
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loader_sources, "READ_TIMEOUT_S", 1.0)
    monkeypatch.setattr(loader_sources, "CONNECT_TIMEOUT_S", 1.0)
    monkeypatch.setattr(loader_sources, "BACKOFF_S", 0.01)
    monkeypatch.setattr(loader_sources, "READ_DEADLINE_S", 3.0, raising=False)  # absent before the deadline


def test_a_trickling_server_meets_the_deadline(folder: Path, quick: None) -> None:  # noqa: F811
    def trickle(handler, rel: str) -> bool:
        if rel.endswith("index.parquet") and handler.command == "GET":
            handler.send_response(200)
            handler.send_header("Content-Length", "100000")
            handler.end_headers()
            for _ in range(120):  # one byte every 0.25 s: never 1 s without data, 30 s in all
                try:
                    handler.wfile.write(b"x")
                    handler.wfile.flush()
                except OSError:
                    return True
                time.sleep(0.25)
            return True
        return False

    with serve(folder, trickle) as url:
        start = time.perf_counter()
        with pytest.raises(vignette.SourceError, match=r"renders/index.parquet: .*deadline 3 s"):
            vignette.load_dataset(url, "identity_contrast")
        assert time.perf_counter() - start < 15


def test_each_retry_prints_a_line_and_an_empty_cause_is_named(folder: Path, quick: None, capsys) -> None:  # noqa: F811
    def stall(handler, rel: str) -> bool:
        if rel.endswith("index.parquet") and handler.command == "GET":
            handler.send_response(200)
            handler.send_header("Content-Length", "100000")
            handler.end_headers()
            time.sleep(3)
            return True
        return False

    with serve(folder, stall) as url:
        with pytest.raises(vignette.SourceError) as e:
            vignette.load_dataset(url, "identity_contrast")
    message = str(e.value)
    assert "()" not in message and "Timeout" in message and ("within the timeout" in message or ": " in message)
    err = capsys.readouterr().err
    retries = [line for line in err.splitlines() if "retrying in" in line]
    attempts = int(message.split(" attempt(s)")[0].rsplit("after ", 1)[1])
    assert len(retries) == attempts - 1 >= 1 and "index.parquet" in retries[0]


def test_a_declared_size_over_the_cap_is_refused_before_reading(
    folder: Path,  # noqa: F811
    quick: None,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(loader_reader, "MAX_INDEX_BYTES", 4096)
    sent = {"bytes": 0}

    def endless(handler, rel: str) -> bool:
        if not rel.endswith("index.parquet"):
            return False
        handler.send_response(200)  # Range ignored, as a misconfigured server does
        handler.send_header("Content-Length", str(10 * 2**30))
        handler.end_headers()
        if handler.command == "GET":
            try:
                for _ in range(2000):  # up to 128 MiB: an old reader took it all
                    handler.wfile.write(b"\0" * 65536)
                    sent["bytes"] += 65536
            except OSError:
                pass
        return True

    with serve(folder, endless) as url:
        with pytest.raises(
            vignette.SourceError, match=r"larger than 4,096 bytes \(the server declares 10,737,418,240\)"
        ):
            vignette.load_dataset(url, "identity_contrast")
    assert sent["bytes"] == 0  # refused from the HEAD: no body was asked for


def test_offline_mode_is_not_retried(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(loader_sources, "BACKOFF_S", 1.0)
    start = time.perf_counter()
    with pytest.raises(vignette.SourceError, match="offline mode"):
        loader_sources.Source("hf://datasets/org/not-cached").read("renders/index.parquet", max_bytes=100)
    assert time.perf_counter() - start < 5 and "retrying" not in capsys.readouterr().err

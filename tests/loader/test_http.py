"""vignette over a real HTTP server on 127.0.0.1 that honours Range requests (and counts bytes).

``serve_folder`` is also used by benchmarks/loader_bench.py.
"""

from __future__ import annotations

import contextlib
import http.server
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from vignette_bench.taxonomy import load_taxonomy


@dataclass
class Traffic:
    """What the server sent: one (path, range header or '', body bytes) per request."""

    requests: list[tuple[str, str, int]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def bytes_sent(self) -> int:
        return sum(n for _, _, n in self.requests)

    def reset(self) -> None:
        with self.lock:
            self.requests.clear()


def _handler(root: Path, traffic: Traffic, honour_range: bool) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a real server

        def log_message(self, *args: object) -> None:  # quiet
            pass

        def _resolve(self) -> Path | None:
            rel = self.path.split("?", 1)[0].lstrip("/")
            path = (root / rel).resolve()
            return path if path.is_file() and root in path.parents else None

        def _send(self, body_range: tuple[int, int] | None, path: Path, head: bool) -> None:
            size = path.stat().st_size
            start, end = body_range if body_range else (0, size)
            self.send_response(206 if body_range else 200)
            self.send_header("Content-Length", str(end - start))
            self.send_header("Accept-Ranges", "bytes" if honour_range else "none")
            if body_range:
                self.send_header("Content-Range", f"bytes {start}-{end - 1}/{size}")
            self.end_headers()
            if head:
                return
            with open(path, "rb") as f:
                f.seek(start)
                body = f.read(end - start)
            self.wfile.write(body)
            with traffic.lock:
                traffic.requests.append((str(path.relative_to(root)), self.headers.get("Range", ""), len(body)))

        def _serve(self, head: bool) -> None:
            path = self._resolve()
            if path is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            size = path.stat().st_size
            m = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", ""))
            if not (honour_range and m) or (m and not m.group(1) and not m.group(2)):
                self._send(None, path, head)
                return
            if m.group(1):
                start, end = int(m.group(1)), (int(m.group(2)) + 1 if m.group(2) else size)
            else:  # suffix range: the last N bytes
                start, end = max(0, size - int(m.group(2))), size
            end = min(end, size)
            if start >= size:
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{size}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self._send((start, end), path, head)

        def do_GET(self) -> None:  # noqa: N802
            self._serve(head=False)

        def do_HEAD(self) -> None:  # noqa: N802
            self._serve(head=True)

    return Handler


@contextlib.contextmanager
def serve_folder(root: Path | str, honour_range: bool = True) -> Iterator[tuple[str, Traffic]]:
    """Serve a folder on 127.0.0.1 (a free port) in a thread; yields (base URL, traffic)."""
    traffic = Traffic()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(Path(root).resolve(), traffic, honour_range))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", traffic
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# ------------------------------------------------------------------------------------------ tests

vignette = pytest.importorskip("vignette")


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from vignette_bench.dataset_builder.sample import build_sample

    return build_sample(tmp_path_factory.mktemp("http") / "src")


def _index_rows(source: Path) -> dict[str, dict]:
    import pyarrow.parquet as pq

    return {r["key"]: r for r in pq.read_table(source / "renders" / "index.parquet").to_pylist()}


def test_range_server_serves_ranges(source: Path) -> None:
    import fsspec

    shard = sorted((source / "renders").glob("*.tar"))[0]
    with serve_folder(source) as (url, traffic):
        fs = fsspec.filesystem("http")
        got = fs.cat_file(f"{url}/renders/{shard.name}", start=100, end=612)
    assert got == shard.read_bytes()[100:612]
    assert traffic.bytes_sent == 512


def test_filtered_streaming_slice_reads_only_the_renders_it_needs(source: Path) -> None:
    rows = _index_rows(source)
    with serve_folder(source) as (url, traffic):
        ds = vignette.load_dataset(
            url,
            "identity_activity_contrast",
            streaming=True,
            gender="female",
            dimensions="religion",
            activities=["cooking", "driving", "teaching"],
        )
        pairs = list(ds)
        assert len(pairs) == 3 * 6 and all(p["image"].size == (672, 336) for p in pairs)
        needed = {k for p in pairs for k in (p["key_left"], p["key_right"])}
        by_file: dict[str, int] = {}
        for path, rng, n in traffic.requests:
            by_file[path] = by_file.get(path, 0) + n
            if path.endswith(".tar"):
                assert rng, "every shard read must be a ranged read"
    index_bytes = (source / "renders" / "index.parquet").stat().st_size
    taxonomy_bytes = sum(p.stat().st_size for p in (source / "taxonomy").iterdir())
    render_bytes = sum(rows[k]["length"] for k in needed)
    shard_reads = sum(n for p, n in by_file.items() if p.endswith(".tar"))
    # each needed render read once (cache), with its 512-byte tar header and nothing else
    assert shard_reads == render_bytes + 512 * len(needed)
    assert by_file["renders/index.parquet"] == index_bytes
    shards = {rows[k]["shard"] for k in needed}
    assert shard_reads < sum((source / s).stat().st_size for s in shards)
    assert sum(by_file.values()) == shard_reads + index_bytes + taxonomy_bytes


def test_random_access_over_http_is_two_ranged_reads(source: Path) -> None:
    space = vignette.PairSpace(load_taxonomy(), "identity_contrast", gender="female", dimensions="religion")
    with serve_folder(source) as (url, traffic):
        reader = vignette.RenderReader(vignette.RenderIndex.load(vignette.Source(url)))
        composer = vignette.Composer(reader)
        spec = next(
            s
            for s in (space[i] for i in range(len(space)))
            if s.key_left in reader.index.locations and s.key_right in reader.index.locations
        )
        traffic.reset()
        image = composer.pair(spec.key_left, spec.key_right)
        assert image.size == (672, 336) and image.format == "PNG"
        assert [p for p, _, _ in traffic.requests] == ["renders/female-religion-00000.tar"] * 2
        assert all(r.startswith("bytes=") for _, r, _ in traffic.requests)
        traffic.reset()
        composer.pair(spec.key_left, spec.key_right)
        assert traffic.requests == []  # both renders came from the LRU cache


def test_a_server_that_ignores_range_is_reported(source: Path) -> None:
    with serve_folder(source, honour_range=False) as (url, _):
        reader = vignette.RenderReader(vignette.RenderIndex.load(vignette.Source(url)))
        key = next(iter(reader.index.locations))
        with pytest.raises(vignette.CorruptRenderError, match="ignores HTTP Range"):
            reader.read(key)


def test_missing_source_file_names_the_url(tmp_path: Path) -> None:
    (tmp_path / "taxonomy").mkdir()
    with serve_folder(tmp_path) as (url, _):
        with pytest.raises(FileNotFoundError, match=re.escape(f"{url}/renders/index.parquet")):
            vignette.RenderIndex.load(vignette.Source(url))


def test_renders_config_over_http_uses_the_index_shard_list(source: Path) -> None:
    with serve_folder(source) as (url, _):
        ds = vignette.load_dataset(url, "renders", split="test", streaming=True)
        first = next(iter(ds))
    assert first["__key__"] and first["jpg"].size == (256, 256)

"""A local stand-in for the Hugging Face Hub's HTTP API, serving one folder as a dataset repo.

The Hub cannot be reached here, so `huggingface_hub.HfFileSystem` (what `hf://` paths use) is pointed at
this server with ``HF_ENDPOINT``. It answers the calls HfFileSystem makes for reading a dataset repo:
the revision lookup, ``paths-info`` and ``tree`` listings, and ``resolve`` file downloads with Range
requests (through ``serve_folder``'s handler, so bytes are counted the same way as for plain HTTP).
Used by tests/loader/test_hub.py and benchmarks/loader_bench.py.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import json
import threading
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

from tests.loader.test_http import Traffic, _handler

REVISION = "0123456789abcdef0123456789abcdef01234567"  # the one commit this stand-in serves


def _entry(root: Path, path: Path) -> dict:
    rel = str(path.relative_to(root))
    if path.is_dir():
        return {"type": "directory", "path": rel, "oid": hashlib.sha1(rel.encode()).hexdigest()}
    return {"type": "file", "path": rel, "size": path.stat().st_size, "oid": hashlib.sha1(rel.encode()).hexdigest()}


def _hub_handler(root: Path, repo: str, traffic: Traffic) -> type[http.server.BaseHTTPRequestHandler]:
    files = _handler(root, traffic, honour_range=True)
    api = f"/api/datasets/{repo}"
    resolve = f"/datasets/{repo}/resolve/"

    class Hub(files):  # type: ignore[misc,valid-type]
        def _json(self, body: object, status: int = 200) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            with traffic.lock:
                traffic.requests.append((self.path, "api", len(data)))

        def _resolve(self) -> Path | None:
            url = urllib.parse.unquote(self.path.split("?", 1)[0])
            if not url.startswith(resolve):
                return None
            rel = url[len(resolve) :].split("/", 1)[1] if "/" in url[len(resolve) :] else ""
            path = (root / rel).resolve()
            return path if path.is_file() and root in path.parents else None

        def send_response(self, code: int, message: str | None = None) -> None:
            super().send_response(code, message)
            if self.path.startswith(resolve):  # what the Hub sends with a file: its commit and etag
                self.send_header("X-Repo-Commit", REVISION)
                self.send_header("ETag", '"' + hashlib.sha1(self.path.encode()).hexdigest() + '"')

        def do_GET(self) -> None:  # noqa: N802
            url = urllib.parse.unquote(self.path.split("?", 1)[0])
            if url == api or url.startswith(f"{api}/revision/"):
                self._json({"id": repo, "sha": REVISION, "private": False, "siblings": []})
            elif url.startswith(f"{api}/tree/"):
                rel = url[len(f"{api}/tree/") :].split("/", 1)[1] if "/" in url[len(f"{api}/tree/") :] else ""
                folder = (root / rel).resolve()
                if not folder.is_dir() or (folder != root and root not in folder.parents):
                    self._json({"error": "not found"}, 404)
                    return
                self._json([_entry(root, p) for p in sorted(folder.iterdir())])
            elif url.startswith(resolve):
                super().do_GET()
            else:
                self._json({"error": f"not served by the stand-in: {url}"}, 404)

        def do_HEAD(self) -> None:  # noqa: N802
            super().do_HEAD()

        def do_POST(self) -> None:  # noqa: N802
            url = urllib.parse.unquote(self.path.split("?", 1)[0])
            body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0)).decode()
            if not url.startswith(f"{api}/paths-info/"):
                self._json({"error": f"not served by the stand-in: {url}"}, 404)
                return
            try:
                paths = json.loads(body)["paths"]
            except (ValueError, KeyError):
                paths = urllib.parse.parse_qs(body).get("paths", [])
            out = []
            for rel in paths:
                p = (root / rel).resolve()
                if p.exists() and (p == root or root in p.parents):
                    out.append(_entry(root, p))
            self._json(out)

    return Hub


@contextlib.contextmanager
def serve_hub(root: Path | str, repo: str = "vignette-test/vignette") -> Iterator[tuple[str, Traffic]]:
    """Serve `root` as dataset repo `repo` on 127.0.0.1; yields (endpoint URL, traffic)."""
    traffic = Traffic()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _hub_handler(Path(root).resolve(), repo, traffic))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", traffic
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

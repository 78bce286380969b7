"""Debian's nginx serving a folder on 127.0.0.1, with an access log of the bytes each request sent.

Software nobody here wrote, as the static file server a source is most often published on. Used by
tests/loader/test_nginx.py and benchmarks/source_bytes.py; both skip or say so when nginx is missing
(`make sysdeps` installs it).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass
class NginxLog:
    path: Path

    def requests(self) -> list[tuple[str, str, int]]:
        """(uri, Range header or '-', body bytes sent) per request so far."""
        out = []
        for line in self.path.read_text().splitlines():
            uri, rng, sent = line.rsplit(" ", 2)
            out.append((uri, rng, int(sent)))
        return out

    @property
    def bytes_sent(self) -> int:
        return sum(n for *_, n in self.requests())


def nginx_binary() -> str | None:
    return shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.path.exists(p)), None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serve_nginx(root: Path | str) -> Iterator[tuple[str, NginxLog]]:
    """Start nginx in the foreground on a free port serving `root`; yields (base URL, access log)."""
    binary = nginx_binary()
    if binary is None:
        raise FileNotFoundError("nginx is not installed (apt-get install nginx-light, or `make sysdeps`)")
    with tempfile.TemporaryDirectory(prefix="nginx-") as tmp:
        work, port = Path(tmp), _free_port()
        log = work / "access.log"
        # as root, workers would switch to `nobody`, who cannot read pytest's 0700 temp folders
        user = "user root;" if os.geteuid() == 0 else ""
        temps = "\n".join(f"  {k}_temp_path {work}/{k};" for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        (work / "nginx.conf").write_text(
            f"""{user}
daemon off;
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/error.log;
events {{ worker_connections 64; }}
http {{
  log_format bytes '$request_uri $http_range $body_bytes_sent';
  access_log {log} bytes;
{temps}
  server {{
    listen 127.0.0.1:{port};
    root {Path(root).resolve()};
    location / {{ }}
  }}
}}
"""
        )
        proc = subprocess.Popen(
            [binary, "-c", str(work / "nginx.conf"), "-p", str(work)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 10
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"nginx exited: {proc.stderr.read().decode() if proc.stderr else ''}")
                with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
                if time.monotonic() > deadline:
                    raise RuntimeError("nginx did not start listening within 10 s")
                time.sleep(0.05)
            log.touch()
            yield f"http://127.0.0.1:{port}", NginxLog(log)
        finally:
            proc.terminate()
            proc.wait(timeout=10)

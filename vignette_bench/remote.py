"""Whole-file reads of any URL or path with one deadline and one byte cap (bottom layer: the taxonomy,
the loader, the builder and the runtime all read through it).

A server that accepts and then sends nothing, sends a byte every few seconds, ignores Range, or
streams a chunked body with no Content-Length ends in a `SourceError` naming the URL within
`READ_DEADLINE_S`, holding at most the cap in memory.
"""

from __future__ import annotations

import time
from typing import Any

from vignette_bench.errors import VignetteError, known_failure

CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 60.0  # between two bytes
READ_DEADLINE_S = 120.0  # one request, from connecting to the last byte: a stall or a trickle ends here


class SourceError(VignetteError):
    """A source cannot be read (network, size); the message names the URL and what to check."""


def http_options(
    url: str,
    connect_s: float | None = None,
    read_s: float | None = None,
    total_s: float | None = None,
) -> dict[str, Any]:
    """fsspec storage options that give an http(s) URL the deadlines (nothing for other URLs): every
    command's reads of an index, shard, taxonomy or entry use them, so none waits on a silent server."""
    if not str(url).startswith(("http://", "https://")):
        return {}
    import aiohttp

    # aiohttp's default waits 300 s on a stalled server and then raises a bare TimeoutError
    timeout = aiohttp.ClientTimeout(  # total: a trickle of 1 byte / 2 s never trips sock_read
        total=total_s or READ_DEADLINE_S,
        sock_connect=connect_s or CONNECT_TIMEOUT_S,
        sock_read=read_s or READ_TIMEOUT_S,
    )
    return {"client_kwargs": {"timeout": timeout}}


def read_capped(
    fs: Any, path: str, url: str, max_bytes: int, started: float | None = None, deadline_s: float | None = None
) -> bytes:
    """A whole file streamed in 1 MiB pieces, refused once it passes `max_bytes` or the read deadline.
    A server that ignores Range and sends a chunked body with no Content-Length was read whole before
    the cap applied (12.7 GB in 150 s); now at most max_bytes + 1 MiB is ever held."""
    started = time.monotonic() if started is None else started
    deadline_s = deadline_s or READ_DEADLINE_S
    # one streamed GET over HTTP (block_size 0; a size given skips fsspec's HEAD, which the caller did)
    extra = {"block_size": 0, "size": max_bytes + 1} if url.startswith(("http://", "https://")) else {}
    chunks: list[bytes] = []
    total = 0
    with fs.open(path, "rb", **extra) as f:
        declared = getattr(getattr(f, "r", None), "content_length", None)  # an HTTP response's Content-Length
        if isinstance(declared, int) and declared > max_bytes:
            raise SourceError(
                f"{url}: larger than {max_bytes:,} bytes (the server declares {declared:,}); is this the right source?"
            )
        while piece := f.read(1 << 20):
            total += len(piece)
            if total > max_bytes:
                raise SourceError(f"{url}: larger than {max_bytes:,} bytes; is this the right source?")
            if time.monotonic() - started > deadline_s:
                raise SourceError(
                    f"{url}: {total:,} bytes in {deadline_s:.0f} s, then the read deadline passed (a server "
                    "this slow cannot serve the file); check the URL and the network, or use a local copy"
                )
            chunks.append(piece)
    return b"".join(chunks)


def read_url(url: str, max_bytes: int) -> bytes:
    """One whole file at any fsspec URL or local path, within the deadlines and `max_bytes`: absent is a
    FileNotFoundError, any other failure a SourceError naming the URL (no retries: Source.read retries)."""
    import fsspec

    url = str(url)
    fs, path = fsspec.core.url_to_fs(url, **http_options(url))
    try:
        return read_capped(fs, path, url, max_bytes)
    except (FileNotFoundError, SourceError):
        raise
    except Exception as e:  # aiohttp's and fsspec's network errors, a folder where a file should be
        if known_failure(e) is None:  # a bug keeps its traceback
            raise
        why = (
            f"{type(e).__name__}: {e}"
            if str(e).strip()
            else (
                f"{type(e).__name__} (no reply within the deadlines: {CONNECT_TIMEOUT_S:.0f} s to connect, "
                f"{READ_TIMEOUT_S:.0f} s between bytes, {READ_DEADLINE_S:.0f} s per request)"
            )
        )
        raise SourceError(f"{url}: cannot be read ({why}); check the URL and the network") from e

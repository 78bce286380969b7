"""Sources: one fsspec code path for a local folder, a base URL or a Hub dataset repo.

``resolve_source`` turns what a user passes into a root URL; ``Source.read`` reads a file or a byte
range of it, retrying transient network errors and naming the URL in every failure.
"""

from __future__ import annotations

import os
import re
import sys
import time
from typing import Any

from vignette_bench import remote
from vignette_bench.formats.vocabulary import DEFAULT_SOURCE as DEFAULT_SOURCE
from vignette_bench.loader.errors import VignetteError
from vignette_bench.remote import SourceError

__all__ = ["DEFAULT_SOURCE", "Source", "SourceError", "describe", "resolve_source"]


CONNECT_TIMEOUT_S = remote.CONNECT_TIMEOUT_S
READ_TIMEOUT_S = remote.READ_TIMEOUT_S
RETRIES = 3  # transient network errors: retried with exponential backoff
BACKOFF_S = 0.5
READ_DEADLINE_S = remote.READ_DEADLINE_S  # one read, every attempt and backoff together
MAX_INDEX_BYTES = 512 * 1024**2  # the full index is ~7 MB

# ------------------------------------------------------------------------------------- sources


def resolve_source(path: str | os.PathLike[str] | None) -> str:
    """A source root URL: a local folder, any fsspec URL (http(s)://, hf://, file://) or a Hub id."""
    if path is None or str(path) == "vignette":
        return DEFAULT_SOURCE
    text = str(path)
    if "://" in text:
        return text.rstrip("/")
    if os.path.isdir(text):
        return os.path.abspath(text)
    if re.fullmatch(r"[\w.-]+/[\w.-]+", text) and not os.path.exists(text):
        return f"hf://datasets/{text}"
    raise VignetteError(
        f"source {text!r} not found: not a folder, not a URL (http://..., hf://datasets/ID) and not a Hub dataset id (owner/name)"
    )


class Source:
    """One fsspec code path for every source; counts requests and bytes; safe across fork."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.root = resolve_source(path)
        self._fs: Any = None
        self._pid = -1
        self.requests = 0
        self.bytes_read = 0

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root, "_fs": None, "_pid": -1, "requests": 0, "bytes_read": 0}

    def _filesystem(self) -> tuple[Any, str]:
        import fsspec

        if self._fs is None or self._pid != os.getpid():  # a forked worker gets its own client
            deadlines = dict(connect_s=CONNECT_TIMEOUT_S, read_s=READ_TIMEOUT_S, total_s=READ_DEADLINE_S)
            self._fs, self._base = fsspec.core.url_to_fs(self.root, **remote.http_options(self.root, **deadlines))
            self._pid = os.getpid()
        return self._fs, self._base

    def url(self, relative: str) -> str:
        return f"{self.root}/{relative}"

    @property
    def _range_options(self) -> dict[str, Any]:
        # HfFileSystem reads through a buffered file whose default read-ahead (a 5 MiB block) turned each
        # ranged read of a render into a read to the end of its shard (15.6x the bytes): fetch the range only.
        return {"cache_type": "none"} if self.root.startswith("hf://") else {}

    def read(
        self, relative: str, start: int | None = None, end: int | None = None, max_bytes: int | None = None
    ) -> bytes:
        """Bytes of a file (or of [start, end)): one request, retried with backoff on transient network
        errors; FileNotFoundError names the URL; other failures end in a SourceError naming URL and cause.
        ``max_bytes`` refuses a whole-file read larger than that (an endless or wrong file)."""
        fs, base = self._filesystem()
        url = self.url(relative)
        network = "://" in self.root and not self.root.startswith("file://")
        retries = RETRIES if network else 0
        started = time.monotonic()
        if max_bytes is not None and start is None and end is None and self.root.startswith(("http://", "https://")):
            self._check_declared_size(fs, f"{base}/{relative}", url, max_bytes)
        for attempt in range(retries + 1):
            try:
                if max_bytes is not None and start is None and end is None:
                    data = remote.read_capped(fs, f"{base}/{relative}", url, max_bytes, started, READ_DEADLINE_S)
                else:
                    data = fs.cat_file(f"{base}/{relative}", start=start, end=end, **self._range_options)
                break
            except FileNotFoundError as e:
                raise FileNotFoundError(f"{url}: not found in source {self.root}") from e
            except SourceError:
                raise
            except Exception as e:  # aiohttp's errors are OSErrors, TimeoutErrors or aiohttp.ClientErrors
                if type(e).__name__ == "OfflineModeIsEnabled":  # asking again cannot help
                    raise SourceError(
                        f"{url}: the Hub is in offline mode (HF_HUB_OFFLINE=1) and this file is not cached; "
                        "unset HF_HUB_OFFLINE or use a local copy of the source"
                    ) from e
                network_error = isinstance(e, (OSError, TimeoutError, ConnectionError)) or type(
                    e
                ).__module__.startswith("aiohttp")
                if not network_error:
                    raise SourceError(f"{url}: {describe(e)}") from e
                status = getattr(getattr(e, "response", None), "status_code", None)  # the Hub client's HTTP errors
                if status in (401, 403, 404):  # asking again cannot help
                    raise SourceError(
                        f"{url}: HTTP {status} ({type(e).__name__}); check the repo id, its revision and your "
                        "token (HF_TOKEN) for a private or gated repo"
                    ) from e
                delay = BACKOFF_S * 2**attempt
                spent = time.monotonic() - started
                if attempt == retries or spent + delay >= READ_DEADLINE_S:
                    raise SourceError(
                        f"{url}: {describe(e)}, after {attempt + 1} attempt(s) in {spent:.0f} s "
                        f"(deadline {READ_DEADLINE_S:.0f} s); check the URL and the network, or use a local copy "
                        "of the source"
                    ) from e
                print(
                    f"vignette: {url}: {describe(e)}; retrying in {delay:.1f} s (attempt {attempt + 2} of {retries + 1})",
                    file=sys.stderr,
                    flush=True,
                )
                time.sleep(delay)
        self.requests += 1
        self.bytes_read += len(data)
        return data

    @staticmethod
    def _check_declared_size(fs: Any, path: str, url: str, max_bytes: int) -> None:
        """Refuse a file whose declared size (Content-Length of a HEAD) is over the cap, before any body is read."""
        try:
            size = fs.size(path)
        except Exception:  # noqa: BLE001 — no size known: the capped ranged read below decides
            return
        if isinstance(size, int) and size > max_bytes:
            raise SourceError(
                f"{url}: larger than {max_bytes:,} bytes (the server declares {size:,}); is this the right source?"
            )


def describe(error: BaseException) -> str:
    """An exception's type and message; where the message is empty (aiohttp's and fsspec's timeouts), its cause."""
    text = str(error).strip()
    if text:
        return f"{type(error).__name__}: {text}"
    inner = error.__cause__ or error.__context__
    if inner is not None and str(inner).strip():
        return f"{type(error).__name__} ({type(inner).__name__}: {str(inner).strip()})"
    if isinstance(error, TimeoutError) or "Timeout" in type(error).__name__:
        return (
            f"{type(error).__name__} (no reply within the timeout: {CONNECT_TIMEOUT_S:.0f} s to connect, "
            f"{READ_TIMEOUT_S:.0f} s between bytes, {READ_DEADLINE_S:.0f} s per request)"
        )
    return f"{type(error).__name__} (no message)"

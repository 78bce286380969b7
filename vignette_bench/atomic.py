"""Whole files written atomically (bottom layer: any stage may use it): a temporary file beside the target,
fsync'ed, then renamed over it, so a reader or a crash meets the old file or the new one, and a full disk
leaves the old file (or nothing), never a truncated one; the temporary is removed when the write fails.

Temp names carry their writer (host and pid), so a later process can tell a dead writer's leftovers
from a live one's: `.<name>.<host>-<pid>[.<8 hex>].tmp`.
"""

from __future__ import annotations

import os
import re
import socket
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["atomic_write", "write_bytes", "write_text"]

_TEMP_NAME = re.compile(r"^\.(?P<name>.+)\.(?P<host>[^.]+)-(?P<pid>\d+)(\.[0-9a-f]{8})?\.tmp$")


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9_]", "_", socket.gethostname()) or "host"


def _writer() -> str:
    return f"{_host()}-{os.getpid()}"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def atomic_write(path: Path, write: Callable[[Path], Any]) -> Path:
    """`write(tmp)` to a temp file beside `path`, fsync it, then os.replace: readers see the old file or the new."""
    tmp = path.with_name(f".{path.name}.{_writer()}.{uuid.uuid4().hex[:8]}.tmp")  # unique per writer (ranks, threads)
    try:
        write(tmp)
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)
    return path


def _fsync_dir(folder: Path) -> None:
    """Make the rename itself durable (POSIX); where a folder cannot be opened (Windows) the rename stands as is."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_text(path: Path, text: str) -> Path:
    """`path.write_text(text)` (UTF-8), atomically."""
    return atomic_write(Path(path), lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_bytes(path: Path, data: bytes) -> Path:
    """`path.write_bytes(data)`, atomically."""
    return atomic_write(Path(path), lambda tmp: tmp.write_bytes(data))

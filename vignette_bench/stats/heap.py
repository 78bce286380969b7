"""Freed large arrays reused while a metric computes, not handed back to the system and faulted in again.

Why: at 10M answers a metric allocates and frees dozens of arrays of ~100 MB (one value per cell). glibc
serves each block above its mmap threshold (at most 32 MB) with a fresh mmap and unmaps it on free, so
every such array is faulted in and zeroed by the kernel page by page. At 10M answers on the benchmark
machine: log_odds 390k minor page faults without this block, 47k with it, 10.9 -> 9.8 s CPU (every module
fewer faults by 3-10x; `benchmarks/metrics_bench.py --heap-compare`, BENCHMARKS.md). Inside
`reuse_freed_memory()` glibc takes blocks up to 1 GB from its heap and does not trim the heap, so a freed
array's pages serve the next one; on leaving, the thresholds return to glibc's steady state for a
long-running process (mmap above 32 MB, trim above 64 MB) and `malloc_trim` gives the free pages back, so
the process does not keep the peak. Elsewhere (not glibc: macOS, musl, Windows) it does nothing.
"""

from __future__ import annotations

import ctypes
import functools
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # mallopt parameters (malloc.h)
INSIDE_MMAP, INSIDE_TRIM = 1 << 30, (1 << 31) - 1
AFTER_MMAP, AFTER_TRIM = 32 << 20, 64 << 20  # where glibc's dynamic thresholds settle (64-bit)
_lock = threading.Lock()
_depth = 0


@functools.lru_cache(maxsize=1)
def _glibc() -> Any:
    """The process's C library when it is glibc (it has the three functions used here), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    if not all(hasattr(libc, f) for f in ("gnu_get_libc_version", "mallopt", "malloc_trim")):
        return None
    return libc


@contextmanager
def reuse_freed_memory() -> Iterator[None]:
    """Within this block (re-entrant, any thread), freed large blocks stay in glibc's heap for reuse."""
    global _depth
    libc = _glibc()
    if libc is None:
        yield
        return
    with _lock:
        _depth += 1
        if _depth == 1:
            libc.mallopt(M_MMAP_THRESHOLD, INSIDE_MMAP)
            libc.mallopt(M_TRIM_THRESHOLD, INSIDE_TRIM)
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                libc.mallopt(M_MMAP_THRESHOLD, AFTER_MMAP)
                libc.mallopt(M_TRIM_THRESHOLD, AFTER_TRIM)
                libc.malloc_trim(0)

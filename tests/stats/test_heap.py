"""reuse_freed_memory: inside the block large arrays come from glibc's heap and stay there when freed (so the
next array reuses their pages); after it they are mapped afresh again, and the freed pages are given back."""

from __future__ import annotations

import ctypes
import resource

import numpy as np
import pytest

from vignette_bench.stats import heap

pytestmark = pytest.mark.skipif(
    heap._glibc() is None or not hasattr(heap._glibc(), "mallinfo2"),
    reason="glibc >= 2.33 only (elsewhere it does nothing)",
)
BLOCK = 200 << 20  # above glibc's largest automatic mmap threshold (32 MB)


class _Mallinfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in (
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        )
    ]


def _mapped_bytes() -> int:
    """Bytes glibc holds in blocks mapped one by one (outside its heap)."""
    fn = heap._glibc().mallinfo2
    fn.restype = _Mallinfo2
    return int(fn().hblkhd)


def _mapped_while_held() -> int:
    """How much of a 200 MB array glibc maps as a block of its own (rather than serving it from the heap)."""
    before = _mapped_bytes()
    a = np.ones(BLOCK, dtype=np.uint8)
    grew = _mapped_bytes() - before
    del a
    return grew


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * resource.getpagesize() / 2**20


def test_large_arrays_come_from_the_heap_inside_and_the_pages_go_back_after():
    assert _mapped_while_held() >= BLOCK  # outside: a mapping of its own, unmapped (and zeroed anew) each time
    with heap.reuse_freed_memory():
        with heap.reuse_freed_memory():  # re-entrant: the inner block leaves the settings alone
            pass
        assert _mapped_while_held() == 0  # from the heap, and kept there when freed
        assert _mapped_while_held() == 0
        rss_inside = _rss_mb()
    assert rss_inside - _rss_mb() > 100  # malloc_trim gave the freed pages back when the block ended
    assert _mapped_while_held() >= BLOCK


def test_the_settings_are_restored_even_when_the_block_raises():
    with pytest.raises(RuntimeError), heap.reuse_freed_memory():
        assert _mapped_while_held() == 0
        raise RuntimeError("boom")
    assert heap._depth == 0
    assert _mapped_while_held() >= BLOCK

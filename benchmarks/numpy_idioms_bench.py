"""The numpy idioms the statistics core relies on, timed side by side on arrays of a 10M-answer chunk's size.

    .venv/bin/python benchmarks/numpy_idioms_bench.py

Each pair computes the same values (checked); the ratio is what the comments in vignette_bench/stats cite
(`take` for large gathers, `compress` for boolean row selection, `np.where` for zeroing, column arithmetic
for two-component row dots). Best of 15 per variant, interleaved, one process.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from vignette_bench.stats.clustered import _row_dot, _row_sums  # noqa: E402

ROWS = 500_000  # (target, cluster) rows of one `split_contrasts` chunk at 10M answers


def best(fns: list[Callable[[], np.ndarray]], rounds: int = 15) -> list[float]:
    times = [float("inf")] * len(fns)
    for _ in range(rounds):
        for i, fn in enumerate(fns):
            t = time.perf_counter()
            fn()
            times[i] = min(times[i], time.perf_counter() - t)
    return times


def compare(label: str, slow: Callable[[], np.ndarray], fast: Callable[[], np.ndarray], exact: bool = True) -> None:
    a, b = slow(), fast()
    same = bool(np.array_equal(a, b)) if exact else bool(np.allclose(a, b, rtol=1e-15, atol=0))
    t_slow, t_fast = best([slow, fast])
    print(f"{label:58s} {1e3 * t_slow:7.2f} ms -> {1e3 * t_fast:6.2f} ms  x{t_slow / t_fast:4.1f}  same: {same}")


def main() -> None:
    rng = np.random.default_rng(0)
    print(f"numpy {np.__version__}, {ROWS:,} rows")
    n_targets = 300
    per_target = rng.random((n_targets, 2))
    row_target = np.sort(rng.integers(0, n_targets, ROWS))
    compare(
        "rows of a (targets, 2) array per row: x[idx] vs x.take",
        lambda: per_target[row_target],
        lambda: per_target.take(row_target, axis=0),
    )
    values = rng.random(4 * ROWS)
    perm = rng.permutation(4 * ROWS)
    compare("1-D int64 permutation (2M): v[perm] vs v.take", lambda: values[perm], lambda: values.take(perm))
    table = rng.random((ROWS, 4))
    mask = rng.random(ROWS) < 0.5
    compare(
        "(rows, 4) boolean row selection: x[mask] vs x.compress",
        lambda: table[mask],
        lambda: table.compress(mask, axis=0),
    )
    n = rng.integers(0, 3, (ROWS, 4)).astype(float)
    N = rng.random((ROWS, 4)) + 1.0
    a = np.array([0.5, 0.5, -0.5, -0.5])

    def masked_write() -> np.ndarray:
        w = a / N
        w[n <= 0] = 0.0
        return w

    compare("(rows, 4) zero where n <= 0: masked write vs np.where", masked_write, lambda: np.where(n > 0, a / N, 0.0))
    for k in (2, 4):
        x, y = rng.random((ROWS, k)), rng.random((ROWS, k))
        compare(
            f"row dot, {k} columns: einsum vs _row_dot",
            lambda x=x, y=y: np.einsum("ck,ck->c", x, y),
            lambda x=x, y=y: _row_dot(x, y),
        )
        compare(
            f"row sum, {k} columns: einsum vs _row_sums",
            lambda x=x: np.einsum("ck->c", x),
            lambda x=x: _row_sums(x),
        )


if __name__ == "__main__":
    main()

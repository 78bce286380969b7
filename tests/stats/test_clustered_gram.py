"""The per-target sums of outer products behind the CR2 working scale and the Bell-McCaffrey df."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from vignette_bench.stats import clustered
from vignette_bench.stats.clustered import _Table


def _table(rows_per_target: int, targets: int, seed: int) -> _Table:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 2 * rows_per_target, targets)  # uneven: some targets with one cluster row
    target = np.repeat(np.arange(targets), sizes)
    cells = pd.DataFrame(
        {
            "target": rng.permutation(target),  # rows not grouped by target
            "cluster": rng.integers(0, 10 * targets, len(target)),
            "component": rng.integers(0, 3, len(target)),
            "y": rng.integers(0, 5, len(target)),
            "n": rng.integers(1, 6, len(target)),
        }
    )
    return _Table(cells, {0: 1.0, 1: -0.5, 2: -0.5})


def _plain(tab: _Table, left: np.ndarray, right: np.ndarray) -> np.ndarray:
    out = np.zeros((tab.T, left.shape[1], right.shape[1]))
    np.add.at(out, tab.cluster_target, left[:, :, None] * right[:, None, :])
    return out


@pytest.mark.parametrize(("rows_per_target", "block"), [(40, 65536), (3, 65536), (3, 7)])
def test_gram_and_row_quadratic_equal_the_plain_sums(monkeypatch, rows_per_target: int, block: int) -> None:
    """Both paths (a matrix product per target; windows of outer products when targets are small) and
    windows smaller than one target's rows give the plain sums."""
    monkeypatch.setattr(clustered, "_GRAM_BLOCK", block)
    tab = _table(rows_per_target, 50, seed=rows_per_target + block)
    rng = np.random.default_rng(1)
    left, right = rng.normal(size=(len(tab.n), 5)), rng.normal(size=(len(tab.n), 4))
    np.testing.assert_allclose(tab.gram(left, right), _plain(tab, left, right), rtol=1e-12, atol=1e-12)
    counts = tab.count_gram()
    np.testing.assert_allclose(counts, _plain(tab, tab.n, tab.n), rtol=1e-12)
    z = rng.normal(size=tab.n.shape)
    want = np.einsum("ci,cij,cj->c", z, counts[tab.cluster_target], z)
    np.testing.assert_allclose(tab.row_quadratic(z, counts), want, rtol=1e-12)

"""vignette_bench.stats.arrays: guarded division, sparse sums, columnar output."""

from __future__ import annotations

import numpy as np
import pandas as pd

from vignette_bench.stats import indicator, right_sparse, safe_div, to_lists


def test_safe_div_fills_where_the_denominator_is_zero():
    got = safe_div(np.array([1.0, 2.0, 3.0]), np.array([2.0, 0.0, 4.0]))
    assert got[0] == 0.5 and np.isnan(got[1]) and got[2] == 0.75
    assert safe_div(np.array([[1.0, 2.0]]), np.array([0.0, 4.0]), 0.0).tolist() == [[0.0, 0.5]]  # broadcasts


def test_indicator_and_right_sparse_equal_dense_products():
    rows, cols = np.array([0, 1, 2, 3]), np.array([1, 0, 1, 2])
    mat = indicator(rows, cols, (4, 3))
    dense = np.zeros((4, 3))
    dense[rows, cols] = 1.0
    np.testing.assert_array_equal(mat.toarray(), dense)
    x = np.random.default_rng(0).random((5, 4))
    np.testing.assert_allclose(right_sparse(x, mat), x @ dense)
    assert right_sparse(x, mat).shape == (5, 3)


def test_to_lists_round_trips_a_frame():
    frame = pd.DataFrame({"identity": ["a", "b"], "n": [1.0, 2.5]})
    out = to_lists(frame)
    assert out == {"identity": ["a", "b"], "n": [1.0, 2.5]}
    assert all(type(v) is list for v in out.values())
    pd.testing.assert_frame_equal(pd.DataFrame(out), frame)

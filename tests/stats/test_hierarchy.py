"""Two-level q-values: an identity's strata tested inside it (issue 33)."""

from __future__ import annotations

import numpy as np

from vignette_bench.stats.distributions import bh_adjust
from vignette_bench.stats.hierarchy import two_level_q


def test_groups_of_one_row_are_bh_over_identities():
    p = np.array([0.001, 0.02, 0.3, 0.04])
    assert np.allclose(two_level_q(p, np.array(["a", "b", "c", "d"], dtype=object), 0.05), bh_adjust(p))


def test_one_real_identity_does_not_loosen_the_threshold_for_the_others():
    # a real effect in three strata of "young" and one small p elsewhere: counted as 3 of 27 rows, BH would
    # pass p = 0.0074 (q = 0.0074 * 27 / 4 = 0.05); with identities as the unit it needs about 0.05 * 2 / 9 / 3
    names = [f"id{i}" for i in range(9) for _ in range(3)]
    p = np.full(27, 0.5)
    p[:3] = [1e-6, 1e-5, 1e-4]
    p[3] = 0.0070
    flat = bh_adjust(p)
    assert flat[3] < 0.05
    q = two_level_q(p, np.array(names, dtype=object), 0.05)
    assert (q[:3] < 0.05).all() and q[3] > 0.05


def test_rows_of_a_selected_identity_are_tested_within_it():
    names = np.array(["a", "a", "a", "b", "b", "b"], dtype=object)
    q = two_level_q(np.array([1e-4, 0.3, 0.02, 0.6, 0.7, 0.8]), names, 0.05)
    assert q[0] < 0.05 and q[1] > 0.05  # a's strong stratum found, its null stratum not
    assert (q[3:] > 0.05).all()

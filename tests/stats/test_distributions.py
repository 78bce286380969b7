"""vignette_bench.stats.distributions gives scipy.stats' values (it calls the same scipy.special functions)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from vignette_bench.stats import distributions as D

RNG = np.random.default_rng(7)
X = np.r_[RNG.normal(0, 5, 5000), 0.0, np.inf, -np.inf, 40.0]
DF = np.r_[np.exp(RNG.uniform(-1, 20, 5000)), 1.0, 2.0, 3.0, 7.0]
Q = np.r_[RNG.uniform(0, 1, 5000), 0.0, 1.0, 0.5, 0.025]


def test_t_and_normal_tails_equal_scipy_stats() -> None:
    np.testing.assert_array_equal(D.t_sf(X, DF), stats.t.sf(X, DF))
    np.testing.assert_array_equal(D.t_isf(Q, DF), stats.t.isf(Q, DF))
    np.testing.assert_array_equal(D.t_ppf(Q, DF), stats.t.ppf(Q, DF))
    np.testing.assert_array_equal(D.norm_sf(X), stats.norm.sf(X))
    np.testing.assert_array_equal(D.norm_isf(Q), stats.norm.isf(Q))
    np.testing.assert_array_equal(D.norm_ppf(Q), stats.norm.ppf(Q))
    np.testing.assert_array_equal(D.chi2_sf(np.abs(X), DF), stats.chi2.sf(np.abs(X), DF))
    assert D.t_isf(0.025, 7.0) == stats.t.isf(0.025, 7.0)  # scalars stay scalars


@pytest.mark.parametrize("m", [1, 2, 7, 50])
def test_bh_equals_false_discovery_control(m: int) -> None:
    p = RNG.uniform(0, 1, m) ** 3
    p[: m // 2] = p[0]  # ties
    np.testing.assert_array_equal(D.bh_adjust(p), stats.false_discovery_control(p, method="bh"))


def test_binomial_half_equals_binomtest() -> None:
    for n in (1, 2, 9, 10, 57, 300):
        for k in range(n + 1):
            assert D.binom_two_sided_half(k, n) == pytest.approx(stats.binomtest(k, n, 0.5).pvalue, rel=1e-11)
    assert D.binom_two_sided_half(0, 0) == 1.0

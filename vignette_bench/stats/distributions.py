"""The t, normal, chi-squared and binomial tails the tests use, from scipy.special.

These are the functions scipy.stats' ``t``, ``norm`` and ``chi2`` call themselves (stdtr/stdtrit, ndtr/ndtri,
chdtrc), so the values are the same to the bit (tests/stats/test_distributions.py); importing scipy.stats
instead costs ~0.4 s of CPU at every report's start-up.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special


def t_sf(x: Any, df: Any) -> Any:
    """P(T > x), T ~ t(df)."""
    return special.stdtr(df, np.negative(x))


def t_ppf(q: Any, df: Any) -> Any:
    """The q-quantile of t(df); exact ±inf at q = 1 / 0 (stdtrit returns +inf at q = 0 for df = 1)."""
    q = np.asarray(q, dtype=float)
    out = np.where(q == 0.0, -np.inf, np.where(q == 1.0, np.inf, special.stdtrit(df, q)))
    return out[()] if out.ndim == 0 else out


def t_isf(q: Any, df: Any) -> Any:
    """The x with P(T > x) = q."""
    return np.negative(t_ppf(q, df))


def norm_sf(x: Any) -> Any:
    return special.ndtr(np.negative(x))


def norm_ppf(q: Any) -> Any:
    return special.ndtri(q)


def norm_isf(q: Any) -> Any:
    return np.negative(special.ndtri(q))


def chi2_sf(x: Any, k: Any) -> Any:
    return special.chdtrc(k, x)


def chi2_isf(q: Any, k: Any) -> Any:
    """The x with P(X > x) = q, X ~ chi-squared(k)."""
    return special.chdtri(k, q)


def binom_two_sided_half(k: int, n: int) -> float:
    """Two-sided exact binomial test p-value of k successes in n at p = 1/2 (scipy.stats.binomtest's
    'minlike' p-value, which for the symmetric null is twice the smaller tail, capped at 1)."""
    if n <= 0:
        return 1.0
    if 2 * k == n:
        return 1.0
    lo = min(k, n - k)
    return float(min(1.0, 2.0 * special.bdtr(lo, n, 0.5)))


def bh_adjust(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg adjusted p-values, in the operations of scipy.stats.false_discovery_control."""
    p = np.asarray(p, dtype=float)
    m = p.size
    order = np.argsort(p)
    ps = p[order] * (m / np.arange(1, m + 1))
    ps = np.minimum.accumulate(ps[::-1])[::-1]
    out = np.empty(m)
    out[order] = ps
    return np.clip(out, 0.0, 1.0)

"""Tests and intervals on counts: Wilson intervals, Fisher's exact test, Benjamini-Hochberg, power.

Everything is vectorised over many tables or cells at once (numpy arrays in, arrays out).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vignette_bench.stats import distributions

Z95 = 1.959963984540054  # the two-sided 95% normal quantile


def wilson_interval(k: Any, n: Any, z: float = Z95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval for k successes out of n (arrays); NaN where n == 0."""
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / n
        denom = 1.0 + z * z / n
        centre = (p + z * z / (2.0 * n)) / denom
        half = z * np.sqrt(np.maximum(p * (1.0 - p), 0.0) / n + z * z / (4.0 * n * n)) / denom
    ok = n > 0
    return np.where(ok, np.clip(centre - half, 0.0, 1.0), np.nan), np.where(
        ok, np.clip(centre + half, 0.0, 1.0), np.nan
    )


def fisher_exact_two_sided(a: Any, b: Any, c: Any, d: Any, chunk_terms: int = 2_000_000) -> np.ndarray:
    """Two-sided Fisher exact p-values for many 2x2 tables [[a, b], [c, d]] at once.

    Same test as scipy.stats.fisher_exact: the p-value sums the hypergeometric probabilities of
    all tables (same margins) no more likely than the observed one. Probabilities are built from
    the exact ratio pmf(x+1)/pmf(x) over a window around the mode and the observed value; the
    window grows until the pmf's log-concavity bounds everything outside it below 1e-16 of the
    p-value. Work runs in chunks of about `chunk_terms` terms, so memory stays bounded. Ties are
    judged with R's relative tolerance 1e-7. A table with a zero row or column sum has p = 1.0
    (as scipy). Fractional (expected) counts are rounded first.
    """
    a, b, c, d = (np.rint(np.asarray(x, dtype=float)).astype(np.int64).ravel() for x in (a, b, c, d))
    p = np.ones(a.shape, dtype=float)
    live = np.flatnonzero(~((a + b == 0) | (c + d == 0) | (a + c == 0) | (b + d == 0)))
    if live.size == 0:
        return p
    a, n1, n2, n = a[live], (a + b)[live], (c + d)[live], (a + c)[live]
    big = (n1 + n2).astype(float)
    mode = ((n + 1) * (n1 + 1) / (n1 + n2 + 2)).astype(np.int64)
    sd = np.sqrt(n * (n1 / big) * (n2 / big) * np.maximum(big - n, 0.0) / np.maximum(big - 1.0, 1.0))
    half = np.ceil(np.sqrt((a - mode) ** 2 + 60.0 * sd**2)).astype(np.int64) + 10
    sup_lo, sup_hi = np.maximum(0, n - n2), np.minimum(n, n1)
    out = np.empty(len(a))
    todo = np.arange(len(a))
    while todo.size:
        lo = np.maximum(sup_lo[todo], np.minimum(a[todo], mode[todo] - half[todo]))
        hi = np.minimum(sup_hi[todo], np.maximum(a[todo], mode[todo] + half[todo]))
        ends = np.cumsum(hi - lo + 1)
        done = np.zeros(todo.size, dtype=bool)
        first = 0
        while first < todo.size:
            base = ends[first - 1] if first else 0
            last = max(int(np.searchsorted(ends, base + chunk_terms, side="right")), first + 1)
            sl = slice(first, last)
            t = todo[sl]
            out[t], done[sl] = _fisher_windows(a[t], n1[t], n2[t], n[t], lo[sl], hi[sl], sup_lo[t], sup_hi[t])
            first = last
        todo = todo[~done]
        half[todo] *= 4
    p[live] = out
    return p


def _fisher_windows(
    a: np.ndarray,
    n1: np.ndarray,
    n2: np.ndarray,
    n: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    sup_lo: np.ndarray,
    sup_hi: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """p-values summed over windows [lo, hi] (holding a and the mode), and whether each window sufficed."""
    length = hi - lo + 1
    starts = np.concatenate([[0], np.cumsum(length)[:-1]])
    seg = np.repeat(np.arange(len(a)), length)
    xf = (lo[seg] + (np.arange(int(length.sum())) - starts[seg])).astype(float)
    n1s, n2s, ns = n1[seg].astype(float), n2[seg].astype(float), n[seg].astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        step = np.log((n1s - xf) * (ns - xf)) - np.log((xf + 1.0) * (n2s - ns + xf + 1.0))
    del n1s, n2s, ns, xf
    last = starts + length - 1
    # Log-concavity: steps only fall, so the first and last real steps bound the decay outside.
    step_first = np.where(length > 1, step[starts], 0.0)
    step_last = np.where(length > 1, step[np.maximum(last - 1, 0)], 0.0)
    step[last] = 0.0
    # Make each window's steps sum to zero so the running sum restarts near 0 (no drift).
    step[last] = -np.add.reduceat(step, starts)
    logr = np.cumsum(step)
    before = np.where(starts > 0, logr[np.maximum(starts - 1, 0)], 0.0)
    logr -= step
    logr -= before[seg]
    logr -= np.maximum.reduceat(logr, starts)[seg]
    observed = logr[starts + (a - lo)]
    weight = np.exp(logr)
    extreme = logr <= observed[seg] + np.log1p(1e-7)
    tail = np.add.reduceat(weight * extreme, starts)
    total = np.add.reduceat(weight, starts)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        r_left, r_right = np.exp(-step_first), np.exp(step_last)
        out_left = np.where(lo > sup_lo, np.where(r_left < 1, weight[starts] * r_left / (1 - r_left), np.inf), 0.0)
        out_right = np.where(hi < sup_hi, np.where(r_right < 1, weight[last] * r_right / (1 - r_right), np.inf), 0.0)
    enough = out_left + out_right <= 1e-16 * tail
    return np.minimum(tail / total, 1.0), enough


def bh_qvalues(p: Any, tested: np.ndarray | None = None) -> np.ndarray:
    """Benjamini-Hochberg q-values over the tests in `tested` (default all); untested get q = 1.0."""
    p = np.asarray(p, dtype=float)
    q = np.ones(p.shape, dtype=float)
    mask = np.ones(p.shape, dtype=bool) if tested is None else np.asarray(tested, dtype=bool)
    if mask.any():
        q[mask] = distributions.bh_adjust(p[mask])
    return q


def fisher_with_bh(a: Any, b: Any, c: Any, d: Any, tested: Any, families: Any = None) -> tuple[np.ndarray, np.ndarray]:
    """Fisher p-values of the tables [[a, b], [c, d]] and their Benjamini-Hochberg q-values.

    Tables not `tested` (their estimate is undefined) get p = q = 1.0 and stay out of BH. BH runs
    over all tested tables, or within each value of `families` when given (one family each).
    """
    tested = np.asarray(tested, dtype=bool)
    p = fisher_exact_two_sided(a, b, c, d)
    p[~tested] = 1.0
    if families is None:
        return p, bh_qvalues(p, tested=tested)
    families = np.asarray(families)
    q = np.ones(len(p))
    for family in np.unique(families):
        member = families == family
        q[member] = bh_qvalues(p[member], tested=tested[member])
    return p, q


def significance_counts(p_values: Any, q_values: Any, alpha: float) -> dict[str, int]:
    """How many tests are significant at `alpha`: raw (p < alpha) and after Benjamini-Hochberg (q < alpha)."""
    alpha = float(alpha)
    return {
        "n_significant_raw": int((np.asarray(p_values) < alpha).sum()),
        "n_significant_bh": int((np.asarray(q_values) < alpha).sum()),
    }


def answers_needed(
    effect_points: float,
    baseline_percent: float = 50.0,
    alpha: float = 0.05,
    power: float = 0.8,
    n_tests: int = 1,
    two_sample: bool = False,
) -> int:
    """Answers per identity (per group when `two_sample`) to detect a shift of `effect_points`.

    Normal approximation for a two-sided test of one proportion against `baseline_percent`
    (selection frequency against chance) or of two proportions (PairComp, polarity).
    `n_tests` applies Bonferroni (alpha / n_tests): a safe stand-in for BH over that many tests.
    """
    p0 = baseline_percent / 100.0
    p1 = p0 + effect_points / 100.0
    if not (0.0 < p0 < 1.0 and 0.0 < p1 < 1.0 and effect_points != 0):
        raise ValueError(
            f"need 0 < baseline < 100 and 0 < baseline + effect < 100 and effect != 0, got baseline={baseline_percent}, effect={effect_points}"
        )
    if not (0.0 < alpha < 1.0 and 0.0 < power < 1.0 and n_tests >= 1):
        raise ValueError(f"need 0 < alpha < 1, 0 < power < 1, n_tests >= 1; got {alpha}, {power}, {n_tests}")
    za = distributions.norm_isf(alpha / (2.0 * n_tests))
    zb = distributions.norm_isf(1.0 - power)
    d = abs(p1 - p0)
    if two_sample:
        pbar = (p0 + p1) / 2.0
        n = (za * np.sqrt(2.0 * pbar * (1.0 - pbar)) + zb * np.sqrt(p0 * (1.0 - p0) + p1 * (1.0 - p1))) ** 2 / d**2
    else:
        n = (za * np.sqrt(p0 * (1.0 - p0)) + zb * np.sqrt(p1 * (1.0 - p1))) ** 2 / d**2
    return int(np.ceil(n))


def cell_variance(offered: np.ndarray, selected: np.ndarray, selected_sq: np.ndarray) -> np.ndarray:
    """Variance of a cell's selection rate from per-answer values x (0/1 or probabilities): var(x)/n.

    Two pseudo-answers (x = 1 and x = 0) are added for the variance only (Agresti-Caffo style),
    so that a cell at 0% or 100% does not claim zero uncertainty.
    """
    n = offered + 2.0
    mean = (selected + 1.0) / n
    v = np.maximum((selected_sq + 1.0) / n - mean * mean, 0.0) / n
    return np.where(offered > 0, v, 0.0)

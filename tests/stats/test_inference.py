"""vignette_bench.stats.inference: Fisher, BH, Wilson, the cell variance, counts and power, against scipy or by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from vignette_bench.stats import (
    Z95,
    answers_needed,
    bh_qvalues,
    cell_variance,
    fisher_exact_two_sided,
    fisher_with_bh,
    significance_counts,
    wilson_interval,
)


def test_z95_is_the_two_sided_95_percent_normal_quantile():
    assert Z95 == pytest.approx(stats.norm.isf(0.025), rel=1e-15)


def test_fisher_matches_scipy_on_many_tables():
    rng = np.random.default_rng(1)
    sym = rng.integers(0, 50, size=(300, 1))
    b = rng.integers(100, 1000, size=(200, 1))
    tables = np.vstack(
        [
            rng.integers(0, 30, size=(800, 4)),
            rng.integers(0, 3000, size=(60, 4)),
            rng.integers(0, 100_000, size=(4, 4)),
            np.hstack([sym, 100 - sym, 100 - sym, sym]),  # exact ties of the two tails
            np.hstack([b * 7 // 10, b - b * 7 // 10, 50_000 - b // 2, 50_000 - (b - b // 2)]),  # lopsided margins
            [
                [0, 0, 0, 0],
                [1, 0, 0, 0],
                [5, 0, 0, 5],
                [0, 7, 3, 0],
                [1000, 0, 0, 1000],
                [3, 1, 1, 3],
                [10, 10, 10, 10],
            ],
        ]
    )
    tables[:40, 0] = 0
    ours = fisher_exact_two_sided(*tables.T)
    ref = np.array([stats.fisher_exact([[a, b], [c, d]]).pvalue for a, b, c, d in tables])
    np.testing.assert_allclose(ours, ref, rtol=1e-9, atol=1e-300)


def test_fisher_small_chunks_and_windows_give_the_same_p_values():
    """Chunks of a few terms split the tables across many passes; the result must not change."""
    rng = np.random.default_rng(4)
    tables = rng.integers(0, 400, size=(50, 4))
    whole = fisher_exact_two_sided(*tables.T)
    chunked = fisher_exact_two_sided(*tables.T, chunk_terms=7)
    np.testing.assert_allclose(chunked, whole, rtol=1e-12)
    ref = np.array([stats.fisher_exact([[a, b], [c, d]]).pvalue for a, b, c, d in tables])
    np.testing.assert_allclose(chunked, ref, rtol=1e-9)


def test_fisher_zero_margins_and_rounded_expected_counts():
    p = fisher_exact_two_sided([0, 0, 5, 3], [0, 4, 0, 0], [3, 0, 2, 0], [4, 0, 0, 0])
    assert p.tolist() == [1.0, 1.0, 1.0, 1.0]  # a zero row or column sum: one possible table
    # Fractional (expected) counts are rounded to the nearest integer first.
    got = fisher_exact_two_sided([2.6], [7.2], [8.4], [1.4])[0]
    assert got == pytest.approx(stats.fisher_exact([[3, 7], [8, 1]]).pvalue, rel=1e-9)


def test_bh_matches_the_textbook_step_up():
    rng = np.random.default_rng(2)
    p = np.concatenate([rng.random(60), rng.random(15) * 1e-3])
    m = len(p)
    order = np.argsort(p)
    q_ref = np.empty(m)
    running = 1.0
    for rank in range(m, 0, -1):
        i = order[rank - 1]
        running = min(running, p[i] * m / rank)
        q_ref[i] = running
    np.testing.assert_allclose(bh_qvalues(p), q_ref, rtol=1e-12)
    tested = np.arange(m) % 2 == 0
    q = bh_qvalues(p, tested=tested)
    assert (q[~tested] == 1.0).all()
    np.testing.assert_allclose(q[tested], bh_qvalues(p[tested]))
    assert (bh_qvalues(p, tested=np.zeros(m, dtype=bool)) == 1.0).all()  # nothing tested: all q = 1


def test_wilson_interval_known_values():
    lo, hi = wilson_interval([0, 5, 10], [10, 10, 10])
    for got_lo, got_hi, k in zip(lo, hi, (0, 5, 10)):
        ref = stats.binomtest(k, 10).proportion_ci(method="wilson")
        assert (got_lo, got_hi) == pytest.approx((ref.low, ref.high))
    lo, hi = wilson_interval(0, 0)
    assert np.isnan(lo) and np.isnan(hi)
    # Another level: z for 99%.
    lo, hi = wilson_interval(7, 20, z=stats.norm.isf(0.005))
    ref = stats.binomtest(7, 20).proportion_ci(confidence_level=0.99, method="wilson")
    assert (float(lo), float(hi)) == pytest.approx((ref.low, ref.high))


def test_cell_variance_adds_one_pseudo_answer_each_way():
    # 0/1 answers: 3 chosen of 4 -> with pseudo-answers 4 of 6: var(x) = 4/6 - (4/6)^2, over n = 6.
    got = cell_variance(np.array([4.0, 0.0, 5.0]), np.array([3.0, 0.0, 5.0]), np.array([3.0, 0.0, 5.0]))
    assert got[0] == pytest.approx((4 / 6 - (4 / 6) ** 2) / 6)
    assert got[1] == 0.0  # an empty cell contributes nothing
    assert got[2] == pytest.approx((6 / 7 - (6 / 7) ** 2) / 7) and got[2] > 0  # 100% does not claim zero width
    # Probabilities: x = 0.6 on each of 10 answers (sum 6, sum of squares 3.6).
    x = np.array([0.6] * 10 + [1.0, 0.0])
    assert cell_variance(np.array([10.0]), np.array([6.0]), np.array([3.6]))[0] == pytest.approx(x.var() / 12)


def test_answers_needed_matches_the_formula_and_simulated_power():
    n = answers_needed(10, baseline_percent=50, alpha=0.05, power=0.8)
    assert n == 194  # ((1.96*0.5 + 0.8416*sqrt(0.24)) / 0.1)^2 = 193.6
    rng = np.random.default_rng(0)
    k = rng.binomial(n, 0.6, 800)
    power = np.mean([stats.binomtest(int(x), n, 0.5).pvalue < 0.05 for x in k])
    assert 0.74 < power < 0.86
    # Two proportions, 50% vs 60%, by hand: pooled sd under the null, unpooled under the alternative.
    za, zb = stats.norm.isf(0.025), stats.norm.isf(0.2)
    two = (za * np.sqrt(2 * 0.55 * 0.45) + zb * np.sqrt(0.25 + 0.24)) ** 2 / 0.01
    assert answers_needed(10, two_sample=True) == int(np.ceil(two)) == 388
    # Bonferroni over 100 tests: alpha / 100 two-sided.
    za100 = stats.norm.isf(0.05 / 200)
    assert answers_needed(10, n_tests=100) == int(np.ceil((za100 * 0.5 + zb * np.sqrt(0.24)) ** 2 / 0.01))
    assert answers_needed(-10) == int(np.ceil((za * 0.5 + zb * np.sqrt(0.24)) ** 2 / 0.01))  # 40% vs 50%
    with pytest.raises(ValueError):
        answers_needed(60, baseline_percent=50)
    with pytest.raises(ValueError):
        answers_needed(10, alpha=1.5)


def test_fisher_with_bh_leaves_untested_tables_out_and_runs_bh_per_family():
    rng = np.random.default_rng(6)
    tables = rng.integers(0, 40, size=(12, 4))
    tables[:3, 0] += 30  # a few clear effects
    tested = np.ones(12, dtype=bool)
    tested[[4, 9]] = False
    p, q = fisher_with_bh(*tables.T, tested)
    ref_p = np.array([stats.fisher_exact([[a, b], [c, d]]).pvalue for a, b, c, d in tables])
    np.testing.assert_allclose(p[tested], ref_p[tested], rtol=1e-9)
    assert (p[~tested] == 1.0).all() and (q[~tested] == 1.0).all()
    np.testing.assert_allclose(q[tested], stats.false_discovery_control(ref_p[tested], method="bh"), rtol=1e-9)
    families = np.arange(12) % 3
    p2, q2 = fisher_with_bh(*tables.T, tested, families=families)
    np.testing.assert_array_equal(p2, p)
    for f in range(3):
        member = (families == f) & tested
        np.testing.assert_allclose(q2[member], stats.false_discovery_control(ref_p[member], method="bh"), rtol=1e-9)
    assert (q2[~tested] == 1.0).all()


def test_significance_counts_counts_strictly_below_alpha():
    got = significance_counts([0.01, 0.05, 0.2, 0.049], np.array([0.04, 0.3, 0.5, 0.05]), 0.05)
    assert got == {"n_significant_raw": 2, "n_significant_bh": 1}
    assert significance_counts([], [], "0.1") == {"n_significant_raw": 0, "n_significant_bh": 0}

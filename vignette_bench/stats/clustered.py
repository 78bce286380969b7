"""Cluster-robust tests of ratio estimators: verdicts that survive shared images and side bias.

Why
---
Answers in a VIGNETTE run are not independent. Many questions share one pair image, each render
recurs in many pair images (random effects with sd ~1.1 on the logit scale in real models), and
models prefer a side. A test that counts answers as independent (binomial, Fisher) then flags
15-90% of null identities. Here the independent unit is a *cluster* (the identity's render, or
the pair image) and the dependence within a cluster is left arbitrary.

The estimator
-------------
`cells` holds one row per (target, cluster, component) with ``y`` = sum of outcomes (0/1
selections, or the model's probabilities in score mode) and ``n`` = number of offers. For each
target and component g: ``R_g = Y_g / N_g`` (sums over the target's clusters), and the estimate
is ``theta = sum_g a_g R_g`` with fixed coefficients ``a`` (the same for every target):

* side-balanced selection frequency: ``{"L": .5, "R": .5}``, null 0.5;
* PairComp-type difference: ``{("with", "L"): .5, ("with", "R"): .5, ("other", "L"): -.5,
  ("other", "R"): -.5}``, null 0.

Side balancing: if the model picks the left person with probability p_L whatever the identities,
R_L estimates p_L and R_R estimates 1 - p_L, so ``(R_L + R_R) / 2`` is 0.5 however unbalanced
the target's left share is. That is the assumption: the side effect is additive on the
probability scale after averaging over clusters (the same for every target); a logit-scale side
effect with cluster random effects symmetric about 0 satisfies it exactly under the null. The
pooled share ``Y / N`` does not: with p_L = 0.3, a target shown on the left 75% of the time
scores 0.4 under the null.

The test (default ``method="cr2"``)
-----------------------------------
theta is the offer-level least-squares fit of y on component indicators, so its linearisation
is ``psi_c = sum_g w_gc e_gc`` with ``w_gc = a_g / N_g`` and residual sums
``e_gc = Y_gc - R_g N_gc``. Then ``t = (theta - null) / se`` against a t distribution.

* ``method="cr1"``: ``se^2 = G/(G-1) sum_c psi_c^2``, t(G-1). Anti-conservative with few or
  unbalanced clusters: by simulation (benchmarks/clustered_calibration.py, 1-40 answers per
  cluster) raw p < 0.05 rates of 0.09-0.18 at G = 4-8 clusters per target, 0.07-0.09 at 10-30
  (0.2-0.25 at exactly 4 clusters with the side fixed per cluster) -- false accusations.
* Bell-McCaffrey CR2 with an independent-offers working model (``icc=0``): still 0.055-0.066
  under cluster sd 1.1-1.5 at 4-30 clusters (0.08 at exactly 4), because its bias correction
  assumes a cluster's variance grows like its size, while with a cluster random effect it grows
  like size squared.
* ``method="cr2"`` (default): the CR2 criterion of Bell & McCaffrey (2002) and Pustejovsky &
  Tipton (2018) under a working model in which offers have a common variance and any two offers
  of one cluster correlate ``icc``. Each cluster's squared influence is scaled by
  ``f_c = Var(w_c' eps_c) / E[(w_c' e_c)^2]`` (both under the working model; closed form in
  `_working_scale`), so ``se^2 = sum_c f_c psi_c^2`` is exactly unbiased when the working model
  holds and still consistent (f_c -> 1) when it does not. This is CR2's unbiasedness criterion
  met with one scalar per cluster for the tested contrast (CR2 proper uses a matrix per
  cluster); with icc = 0 and one component both give ``f_c = 1 / (1 - N_c / N)``. The reference is t with the Satterthwaite degrees of
  freedom of that variance under the same working model (Bell-McCaffrey df), which falls below
  G - 1 when clusters are unbalanced. The G x G matrix behind the df is diagonal plus rank 3K,
  so its traces cost O(G K^2) (checked against a brute-force offer-level computation in the
  tests). The working icc is estimated once from all cells (`estimate_icc`, an exact moment fit
  pooled over targets) unless given.
  Calibration (raw p < 0.05 under the null, 4-60 clusters per target, cluster sd 0-1.5,
  left-choice probability 0.3-0.7, left shares 0.25-0.75, side fixed per cluster or per answer,
  0/1 or score mode, also PairComp-type differences): 0.030-0.051 over the benchmark grid
  (Monte-Carlo se ~0.003), never above 0.05 + 3 se in tests/stats/test_clustered.py; a little
  conservative (0.03-0.045) at 4-8 clusters, where the t reference has ~2-5 df.

Two-way clustering (own x partner render)
-----------------------------------------
In a two-person question the answer depends on both people's renders. An identity's offers are
clustered by its own render, but the *partner's* render recurs across many of those clusters
(with few identities, every one of them), so own-render clusters are not independent: one-way
tests rejected 9-13% of null identities at nominal 5% with two identities (issue 27). Given a
``partner_cluster`` column (the other person's cluster of each cell), `cluster_contrasts` uses
the Cameron, Gelbach and Miller (2011) two-way variance V = V_own + V_partner - V_intersection
(intersection = the (own, partner) combination), computed for the K component rates, each term
with its own CR2 working-model correction (the same estimator clustered three ways), and made
positive semi-definite by setting negative eigenvalues to 0 (CGM, section 2.3). Reference: t with
min(df_own, df_partner) degrees of freedom (each term's Bell-McCaffrey df), which is at most
min(G_own, G_partner) - 1: the variance can be no better determined than from the less
replicated dimension (the usual G = min(G_1, G_2) rule, with Bell-McCaffrey's allowance for
unbalanced clusters). A target seen with fewer than 2 partner clusters is `too_few_clusters`.
Where partner_cluster equals cluster everywhere (no partner, or no render keys) the test is the
one-way one. Calibration: tests/metrics/test_crossed_calibration.py and
benchmarks/clustered_calibration.py --crossed (BENCHMARKS.md).

Few clusters: the wild bootstrap check (default)
------------------------------------------------
With ~8 clusters (an identity's renders at demo size, k = 1) the t reference is right at p < 0.05
but not in the tail that Simes and Benjamini-Hochberg use: a render's effect enters a softmax or a
logit, so cluster sums are skewed, and null family tests fell below p < 0.001 at 1.3x nominal
(factuality 2.9x), enough to put a bias verdict in 6.4% of null demo reports (BENCHMARKS.md). So
where a component is seen in fewer than FEW_CLUSTERS (30) clusters -- the usual "few clusters"
range, Cameron and Miller (2015) -- a p-value below SCREEN (0.05; a larger one cannot make a
verdict) must also pass the wild cluster restricted bootstrap (Webb six-point weights on the own
clusters, the null imposed, each sample studentised exactly like the data; `_wild_bootstrap_p`):
p = max(p_t, p_bootstrap). The maximum of two valid p-values is valid; it keeps the t test
wherever the bootstrap is the more liberal of the two (e.g. very few clusters, where Webb weights
have few distinct samples), and it costs one bootstrap per small-p target only. A sample's
cluster sums are linear in the weights, so each variance term is a quadratic form in them: t* is computed
from a (G, G, K, K) array summed once per target where that is cheaper than a pass over the target's
(own, partner) cells per draw (`_WildDesign`; two-way 10M-answer log-odds 106 -> 32 s CPU, BENCHMARKS.md). The WCR bootstrap
is the method MacKinnon, Nielsen and Webb (2023, "Cluster-robust inference: a guide to empirical
practice") recommend for few or unbalanced clusters; with two-way clustering the weights are drawn
on the own-render dimension, which has fewer clusters (MacKinnon, Nielsen and Webb 2021). The
alternatives measured on the same null reports did not reach the tail: CV3 (cluster jackknife)
equals this CR2 for balanced clusters (h_c = 1/G), and a df cap at (least replicated component's
clusters - 1) only trims factuality and changed no report. Measured (benchmarks/report_null_calibration.py):
null demo reports with a bias verdict 6.4% -> 0.8% (4 of 495; sample scale with one random order: 6.4%
with or without it, 4.6% once factuality also passes `label_permutation_check`), family tests below p < 0.001 0.13% ->
0.02%; PairComp with three identities 3.8-5.8% -> 2.6-3.9% raw. The CI stays the t interval
(it can exclude the null where the checked p does not); the refusal bounds use the t test (a target
with a verdict has p_t below alpha as well). ``wild=False`` (or `variance_setting`) gives the t test alone.
The draws do not depend on how the input is ordered or its clusters named: the random stream is seeded by the
target's own counts, and the c-th weight goes to the cluster of content rank c (`_content_ranks`), not to the
c-th cluster by label or first appearance (before, the count views' codes moved pinned p-values, e.g. 0.0188
-> 0.0158, by Monte Carlo variation alone).

Assumptions: clusters are independent (give the coarsest unit that recurs: if renders recur
across pair images, cluster by render; two-way: clusters independent along each dimension); the dependence within a cluster is arbitrary; the
coefficients do not depend on the data. Estimating icc pools all targets (one working model per
call); a poor working icc costs accuracy of the df and of the small-sample bias correction, not
consistency.

Flags (p_value = 1, se/statistic/CI/df NaN unless noted): ``too_few_clusters`` (G < 2, or a
component with a non-zero coefficient is seen in fewer than 2 clusters: its variance cannot be
estimated and CR1 would silently give it zero), ``missing_component`` (some N_g = 0: the
estimate is undefined, estimate NaN), ``zero_variance`` (every cluster agrees exactly, e.g. all
answers chose the target; se = 0 and no cluster-robust test exists). A flagged target is
reported, never accused.

Refusals
--------
In both functions ``n`` counts the valid (scored) offers of a cell and ``refused`` the offers
whose answer was invalid, so the refusal rate is ``refused / (n + refused)``.
`refusal_homogeneity`: are refusal rates the same across targets? A permutation test that moves
whole clusters: the target labels of a cluster are swapped with those of another cluster with as
many rows (a render: one target; a pair image: two), so any within-cluster dependence travels
with the cluster. Statistic: Pearson's X^2 of refusals by target. Valid under the null that a
cluster's refusals do not depend on which targets it shows (clusters exchangeable). The p-value is
Besag and Clifford's (1991) sequential Monte Carlo one: permutations are drawn until `stop_after`
reach the observed X^2 (p = stop_after / drawn) or all are drawn (p = (1 + exceed) / (B + 1)); it is
exactly valid like the fixed-count p-value, equal to it below (stop_after) / (B + 1), and stops after
about stop_after / p permutations (40 at p = 0.5) instead of B when refusals look homogeneous.
`refusal_bounds`: how far refusals could move each verdict -- every refusal scored as the answer
most and least favourable to a large estimate.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Callable, Hashable, Iterator, Mapping
from contextlib import contextmanager
from functools import partial
from typing import Any, Literal

import numpy as np
import pandas as pd

from vignette_bench.stats import distributions

Method = Literal["cr2", "cr1"]
# The variance and df rule of every test that does not name a method (the metric modules, the report);
# `variance_setting` swaps them so the calibration benchmarks can compare alternatives on the same data.
DEFAULT_METHOD: Method = "cr2"
WILD = True
SCREEN = 0.05  # a p-value at or above this cannot make a verdict (Simes, BH at q 0.05): no bootstrap needed
FEW_CLUSTERS = 30  # below this many clusters in a component, the t reference's tail is checked by the bootstrap
WILD_DRAWS, WILD_STOP, WILD_CHUNK, WILD_SEED = 9999, 20, 500, 20271
PERM_SEED = 20272  # `label_permutation_check`'s stream (seeded by the target's counts, like the wild check's)
FLAG_TOO_FEW = "too_few_clusters"
FLAG_MISSING = "missing_component"
FLAG_ZERO_VAR = "zero_variance"
OUTPUT_COLUMNS = [
    "target",
    "estimate",
    "se",
    "n_clusters",
    "n_offers",
    "df",
    "statistic",
    "p_value",
    "ci_low",
    "ci_high",
    "flag",
]


@contextmanager
def variance_setting(name: str) -> Iterator[None]:
    """Inside, tests that name no method use `name`: "cr2" or "cr1", with "+wild" for the wild bootstrap
    check (e.g. "cr2+wild", the default; see `cluster_contrasts`); "" keeps the default."""
    global DEFAULT_METHOD, WILD
    saved = DEFAULT_METHOD, WILD
    if name:
        method, *extras = name.split("+")
        if method not in ("cr1", "cr2") or not set(extras) <= {"wild"}:
            raise ValueError(f"unknown variance setting {name!r}: use cr2 or cr1, optionally +wild")
        DEFAULT_METHOD, WILD = method, "wild" in extras  # type: ignore[assignment]
    try:
        yield
    finally:
        DEFAULT_METHOD, WILD = saved


def variance_name() -> str:
    """The default's name in `variance_setting` terms."""
    return DEFAULT_METHOD + ("+wild" if WILD else "")


def _codes(values: pd.Series) -> tuple[np.ndarray, pd.Index]:
    """Codes in the sorted order of the values, not their first appearance: everything computed from them
    (a table's row order, which cluster gets which bootstrap weight) is the same however the input is ordered."""
    arr = values.to_numpy()
    if arr.dtype.kind in "iu":
        codes, uniques = _sorted_int_codes(arr)
        return codes, pd.Index(uniques)
    codes, uniques = pd.factorize(values, sort=True)
    return codes.astype(np.int64), pd.Index(uniques)


def _sorted_int_codes(arr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`pd.factorize(arr, sort=True)` of integers: where their range is small (codes from the count views,
    or products of such codes), a presence table and the rank of each present value: no hashing, no sort."""
    if len(arr) and int(arr.min()) >= 0 and int(arr.max()) < 2 * len(arr) + 65536:  # (a rank per possible value)
        present = np.zeros(int(arr.max()) + 1, dtype=bool)
        present[arr] = True
        uniques = np.flatnonzero(present)
        rank = np.empty(len(present), dtype=np.int64)  # written only where a value is present (no cumsum pass)
        rank[uniques] = np.arange(len(uniques))
        return rank[arr], uniques.astype(arr.dtype, copy=False)
    codes, uniques = pd.factorize(arr, sort=True)
    return codes.astype(np.int64), np.asarray(uniques)


def _component_codes(component: pd.Series, coefficients: Mapping[Hashable, float]) -> tuple[np.ndarray, np.ndarray]:
    """Index of each row's component among the non-zero coefficients (-1: not used)."""
    keys = [k for k, a in coefficients.items() if float(a) != 0.0]
    if not keys:
        raise ValueError("coefficients are all zero")
    lookup = {k: i for i, k in enumerate(keys)}
    # dict lookups row by row would be slow; factorize first, then map the few uniques
    codes, uniques = pd.factorize(component)
    per_unique = np.array([lookup.get(u, -1) for u in uniques], dtype=np.int64)
    comp = per_unique[codes] if len(codes) else np.zeros(0, dtype=np.int64)
    comp[codes < 0] = -1
    return comp, np.array([float(coefficients[k]) for k in keys])


def _check_cells(cells: pd.DataFrame, needed: tuple[str, ...]) -> None:
    missing = [c for c in needed if c not in cells.columns]
    if missing:
        raise ValueError(f"cells lack columns {missing}; need {list(needed)}")


class _Table:
    """Cells summed to (target, cluster) rows x K used components."""

    def __init__(self, cells: pd.DataFrame, coefficients: Mapping[Hashable, float]) -> None:
        _check_cells(cells, ("target", "cluster", "component", "y", "n"))
        comp, self.a = _component_codes(cells["component"], coefficients)
        keep = comp >= 0
        self.K = len(self.a)
        t_codes, self.targets = _codes(cells["target"])
        c_codes, self.cluster_uniques = _codes(cells["cluster"])
        if np.any(t_codes < 0) or np.any(c_codes < 0):
            raise ValueError("target and cluster must not be missing")
        yy = cells["y"].to_numpy(dtype=float)[keep]
        nn = cells["n"].to_numpy(dtype=float)[keep]
        if np.any(nn < 0) or np.any(~np.isfinite(yy)) or np.any(~np.isfinite(nn)):
            raise ValueError("n must be finite and >= 0, y finite")
        # one row per (target, cluster): a pair image shared by two targets counts for each
        stride = int(c_codes.max()) + 1 if len(c_codes) else 1
        tc = t_codes[keep] * stride + c_codes[keep].astype(np.int64)
        tc_codes, tc_uniques = _sorted_int_codes(tc)
        C = len(tc_uniques)
        self.T = len(self.targets)
        self.cluster_target = (tc_uniques // stride).astype(np.int64)
        idx = tc_codes * self.K + comp[keep]
        self.n = np.bincount(idx, weights=nn, minlength=C * self.K).reshape(C, self.K)
        self.y = np.bincount(idx, weights=yy, minlength=C * self.K).reshape(C, self.K)
        # clusters whose offers are all zero do not count
        live = self.n.sum(axis=1) > 0
        self.n, self.y, self.cluster_target = self.n[live], self.y[live], self.cluster_target[live]
        self.cluster_code = (tc_uniques % stride).astype(np.int64)[live]  # each row's code in cluster_uniques

    @classmethod
    def from_sums(
        cls,
        a: np.ndarray,
        n: np.ndarray,
        y: np.ndarray,
        cluster_target: np.ndarray,
        cluster_code: np.ndarray,
        targets: pd.Index,
        cluster_uniques: pd.Index,
    ) -> _Table:
        """A table from rows already summed: one per (target, cluster), sorted by target then cluster, (rows, K)
        sums in the order of `a` (the coefficients). `split_contrasts` builds these from integer codes: no
        frame, no factorize over tens of millions of rows. Rows without offers are dropped, as in __init__."""
        tab = cls.__new__(cls)
        live = _row_sums(n) > 0
        tab.a, tab.K, tab.targets, tab.T = np.asarray(a, dtype=float), len(a), targets, len(targets)
        tab.cluster_uniques = cluster_uniques
        if not live.all():
            n, y, cluster_target, cluster_code = n[live], y[live], cluster_target[live], cluster_code[live]
        tab.n, tab.y, tab.cluster_target, tab.cluster_code = n, y, cluster_target, cluster_code
        return tab

    def _segments_by_target(self) -> tuple[np.ndarray, np.ndarray]:
        """(segment starts, each segment's target): rows are sorted by target (both constructors sort them)."""
        if not hasattr(self, "_segments"):
            ct = self.cluster_target
            starts = np.flatnonzero(np.r_[True, ct[1:] != ct[:-1]]) if len(ct) else np.zeros(0, np.int64)
            self._segments = (starts, ct[starts])
        return self._segments

    def per_target(self, values: np.ndarray) -> np.ndarray:
        """Sum (clusters x ...) rows to (targets x ...)."""
        flat = values.reshape(len(values), int(np.prod(values.shape[1:])))
        out = np.zeros((self.T, flat.shape[1]))
        if len(flat):
            # one segmented sum over all columns (a bincount per column is slow when there are many)
            starts, targets = self._segments_by_target()
            out[targets] = np.add.reduceat(flat, starts, axis=0)
        return out.reshape((self.T,) + values.shape[1:])

    def totals(self) -> tuple[np.ndarray, np.ndarray]:
        """Per target the (targets, K) sums of n and of y; kept (the test and the callers' flags use them)."""
        if not hasattr(self, "_totals"):
            self._totals = (self.per_target(self.n), self.per_target(self.y))
        return self._totals

    def gram(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        """Per target, the sum over its rows of outer(left_c, right_c): (targets, p, q).

        One matrix product per target instead of a (rows, p, q) array of outer products: the
        Bell-McCaffrey sums need 3K x 3K per row, which at 10M answers was gigabytes and most of the time.
        """
        out = np.zeros((self.T, left.shape[1], right.shape[1]))
        if not len(left):
            return out
        starts, targets = self._segments_by_target()
        L, R = left, right
        ends = np.r_[starts[1:], len(L)]
        if len(L) >= _ROWS_PER_PRODUCT * len(starts):
            with _one_blas_thread():
                for t, a, b in zip(targets.tolist(), starts.tolist(), ends.tolist()):
                    out[t] = L[a:b].T @ R[a:b]
            return out
        # Many targets with few rows each: segmented sums of outer products over the targets that start in
        # one window of rows at a time (memory: about a window of rows x p x q).
        cuts = np.searchsorted(starts, np.arange(0, len(L), _GRAM_BLOCK))
        for lo, hi in zip(cuts.tolist(), [*cuts[1:].tolist(), len(starts)]):
            if lo == hi:
                continue
            a, b = int(starts[lo]), int(ends[hi - 1])
            outer = L[a:b, :, None] * R[a:b, None, :]
            out[targets[lo:hi]] = np.add.reduceat(outer, starts[lo:hi] - a, axis=0)
        return out

    def row_quadratic(self, z: np.ndarray, per_target: np.ndarray) -> np.ndarray:
        """z_c' M_t z_c for every row c of target t, with M = per_target (targets, K, K), a block of rows at a time."""
        out = np.empty(len(z))
        starts, targets = self._segments_by_target()
        if len(z) >= _ROWS_PER_PRODUCT * len(starts):  # one product per target, no (rows, K, K) gather
            ends = np.r_[starts[1:], len(z)]
            with _one_blas_thread():
                for t, lo, hi in zip(targets.tolist(), starts.tolist(), ends.tolist()):
                    out[lo:hi] = _row_dot(z[lo:hi] @ per_target[t], z[lo:hi])
            return out
        for lo in range(0, len(z), _GRAM_BLOCK):
            zz = z[lo : lo + _GRAM_BLOCK]
            out[lo : lo + _GRAM_BLOCK] = np.einsum(
                "ci,cij,cj->c", zz, per_target[self.cluster_target[lo : lo + _GRAM_BLOCK]], zz
            )
        return out

    def count_gram(self) -> np.ndarray:
        """Per target, sum over its clusters of n_c n_c' (targets, K, K); used twice per test, so kept."""
        if not hasattr(self, "_count_gram"):
            self._count_gram = self.gram(self.n, self.n)
        return self._count_gram


def _row_sums(x: np.ndarray) -> np.ndarray:
    """x.sum(axis=1) of a (rows, K) array; einsum is 3-4x faster than a reduction over a short last axis, and
    with two columns (the usual contrast of two parts) adding the columns is ~10x faster again, the same sums
    (benchmarks/numpy_idioms_bench.py)."""
    if x.ndim == 2 and x.shape[1] == 2:
        return x[:, 0] + x[:, 1]
    return np.einsum("ck->c", x)


def _row_dot(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(x * y).sum(axis=1) without the temporary product (two columns: column products, ~2x faster than
    einsum's short inner loop and the same sums; benchmarks/numpy_idioms_bench.py)."""
    if x.ndim == 2 and x.shape[1] == 2 and y.shape == x.shape:
        out = x[:, 0] * y[:, 0]
        out += x[:, 1] * y[:, 1]
        return out
    return np.einsum("ck,ck->c", x, y)


@functools.lru_cache(maxsize=1)
def _blas_controller() -> Any:
    from threadpoolctl import ThreadpoolController  # light (a few ms), and only where products are made

    return ThreadpoolController()


def _one_blas_thread() -> Any:
    """BLAS limited to one thread while `gram` makes its many small products: with OpenBLAS's default threads
    a second thread spins on CPU time while the machine's other core is busy (10M-answer polarity, measure
    class: 9.3 s CPU with two threads, 5.2 s with one; benchmarks/HISTORY.md, issue 25 item 4)."""
    return _blas_controller().limit(limits=1, user_api="blas")


_ROWS_PER_PRODUCT = 16  # average rows per target above which one matrix product per target is faster
_GRAM_BLOCK = 65536  # rows per window of the vectorised fallbacks: bounded memory


def estimate_icc(cells: pd.DataFrame, coefficients: Mapping[Hashable, float]) -> float:
    """Moment estimate of the within-cluster correlation of offers, pooled over targets.

    Under the working model (offer variance s2, correlation icc within a cluster) the residual
    ``e = Y_gc - R_g N_gc`` of a (cluster, component) sum has, exactly,
    ``E[e^2] = s2 (1 - icc) n (1 - h) + s2 icc (n^2 (1 - 2h) + h^2 sum_d n_gd^2)`` with
    ``h = n / N_g``. Least squares of ``e^2 / n`` on the two regressors (also divided by n) over
    every (target, cluster, component) gives s2 (1 - icc) and s2 icc. Returns a value in [0, 1]
    (0 when it cannot be identified, e.g. every cluster has the same size).
    """
    return _icc_from_table(_Table(cells, coefficients))


def _icc_from_table(tab: _Table) -> float:
    N = tab.per_target(tab.n)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = tab.n / N.take(tab.cluster_target, axis=0)
        R = tab.per_target(tab.y) / N  # (targets, K): gathered for the used entries only, not for every row
    # the used (row, component) entries as flat positions, in the order a boolean mask takes them (memory: one
    # value per used entry, where whole (rows, K) copies of the targets' sums and rates were gathered before)
    ok = np.flatnonzero((tab.n > 0) & (h < 1))
    per_target_entry = tab.cluster_target.take(ok // tab.K) * tab.K + ok % tab.K
    n, h = tab.n.ravel().take(ok), h.ravel().take(ok)
    SS = tab.per_target(tab.n * tab.n).ravel().take(per_target_entry)
    e2 = (tab.y.ravel().take(ok) - R.ravel().take(per_target_entry) * n) ** 2
    del per_target_entry, ok
    x1 = n * (1.0 - h) / n
    x2 = (n * n * (1.0 - 2.0 * h) + h * h * SS) / n
    if len(n) < 3 or np.ptp(n) == 0:
        return 0.0
    (s_ind, s_clu), *_ = np.linalg.lstsq(np.column_stack([x1, x2]), e2 / n, rcond=None)
    if s_clu <= 0:
        return 0.0
    if s_ind <= 0:
        return 1.0
    return float(s_clu / (s_clu + s_ind))


def _working_scale(tab: _Table, w: np.ndarray, h: np.ndarray, N: np.ndarray, rho: float) -> np.ndarray:
    """Per-cluster factor f_c making f_c * (w_c' e_c)^2 unbiased for Var(w_c' eps_c) under the working model.

    w_c' e_c = w_c' eps_c - (w_c * h_c)' E with E the target's per-component error totals, so
    E[(w_c' e_c)^2] = w'S_c w - 2 z'S_c w + z'S z (z = w * h, S_c = Cov(eps_c), S = sum_c S_c),
    all in units of s2. With rho = 0 and one component f_c = 1 / (1 - h_c): exactly CR2.
    """
    n = tab.n
    z = w * h
    nw, nz = _row_dot(n, w), _row_dot(n, z)
    wSw = (1.0 - rho) * _row_dot(n * w, w) + rho * nw * nw
    zSw = (1.0 - rho) * _row_dot(n * z, w) + rho * nz * nw
    zSz = (1.0 - rho) * _row_dot(N * z, z) + rho * tab.row_quadratic(z, tab.count_gram())
    expected = wSw - 2.0 * zSw + zSz
    with np.errstate(divide="ignore", invalid="ignore"):
        # expected <= 0 only when one cluster holds a whole component (flagged too_few_clusters)
        return np.where(expected > 1e-12 * np.maximum(wSw, 1e-300), wSw / expected, 1.0)


def _bm_df(tab: _Table, k: np.ndarray, h: np.ndarray, Nt: np.ndarray, rho: float) -> np.ndarray:
    """Satterthwaite df of sum_c (k_c' e_c)^2 under the working model, per target (Nt: the targets' N_g, (T, K)).

    Working model Omega: offers with equal variance, correlation rho between two offers of one
    cluster. The variance is u' G G' u with u the offer errors and g_c = (I - H) Q_c, Q_c equal
    to k_gc on the offers of (g, c); df = tr(M)^2 / tr(M^2) with M = G' Omega G (Bell-McCaffrey).
    For indicator regressors (M)_cd = (1-rho) sum_g N_g k_gc k_gd (h_gc [c=d] - h_gc h_gd)
    + rho (S'S)_cd with S_ec = sum_g n_ge k_gc ([e=c] - h_gc), i.e. M = diag(D) + U C U' with
    U = [W | Z | sN] (clusters x 3K). W = sqrt(N) Z, so U = V E' with V = [Z | sN] (clusters x 2K) and the
    traces need only the 2K x 2K sums V'V and V'DV per target, with C2 = E' C E in place of C:
    C2 = [[rho NtN - (1 - rho) diag(N), -rho I], [-rho I, 0]].
    """
    K = tab.K
    n = tab.n
    s = _row_dot(n, k)
    D = (1.0 - rho) * _row_dot(k * k, n) + rho * s * s
    # R = [V | D V]: both sums in one product per target (V'R = [V'V | V'DV])
    R = np.empty((len(n), 4 * K))
    np.multiply(k, h, out=R[:, :K])
    np.multiply(n, s[:, None], out=R[:, K : 2 * K])
    np.multiply(R[:, : 2 * K], D[:, None], out=R[:, 2 * K :])
    both = tab.gram(R[:, : 2 * K], R)  # (T, 2K, 4K)
    G, GD = both[:, :, : 2 * K], both[:, :, 2 * K :]
    C2 = np.zeros((tab.T, 2 * K, 2 * K))
    idx = np.arange(K)
    C2[:, :K, :K] = rho * tab.count_gram()
    C2[:, idx, idx] -= (1.0 - rho) * Nt
    C2[:, idx, K + idx] = -rho
    C2[:, K + idx, idx] = -rho
    sumD = np.bincount(tab.cluster_target, weights=D, minlength=tab.T)
    sumD2 = np.bincount(tab.cluster_target, weights=D * D, minlength=tab.T)
    CG = C2 @ G
    tr1 = sumD + np.einsum("tii->t", CG)
    tr2 = sumD2 + 2.0 * np.einsum("tij,tji->t", C2, GD) + np.einsum("tij,tji->t", CG, CG)
    with np.errstate(divide="ignore", invalid="ignore"):
        return tr1 * tr1 / tr2


def _influence(
    tab: _Table,
    method: Method,
    icc: float | None,
    usable: np.ndarray,
    R: np.ndarray,
    Ntg: np.ndarray,
    need_df: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per (target, cluster) row of `tab` the scaled influence k_gc e_gc of each component (C, K), and per
    target the df of its variance (NaN unless need_df) and the number of clusters G (see `cluster_contrasts`)."""
    k, e, df, G = _scaled_residuals(tab, method, icc, usable, R, Ntg, need_df)
    return k * e, df, G


def _scaled_residuals(
    tab: _Table,
    method: Method,
    icc: float | None,
    usable: np.ndarray,
    R: np.ndarray,
    Ntg: np.ndarray,
    need_df: bool = True,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`_influence`'s scale k (fixed by the design: counts only) and residuals e apart, then df and G."""
    ct = tab.cluster_target
    a = tab.a
    G = np.bincount(ct, minlength=tab.T).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        if usable.all():  # the usual case: no masks (each is a pass over rows x K)
            N = Ntg.take(ct, axis=0)  # (take: ~14x faster than fancy indexing of rows; numpy_idioms_bench.py)
            h = tab.n / N
            w = np.where(tab.n > 0, a / N, 0.0)  # d estimate / d Y_gc, 0 where a component has no offers
            e = tab.y - R.take(ct, axis=0) * tab.n
        else:
            on = usable.take(ct)[:, None]
            N = np.where(on, Ntg.take(ct, axis=0), 1.0)
            h = np.where(on, tab.n / N, 0.0)
            w = np.where(on & (tab.n > 0), a / N, 0.0)
            e = np.where(on, tab.y - R.take(ct, axis=0) * tab.n, 0.0)
    if method == "cr2":
        rho = _icc_from_table(tab) if icc is None else float(icc)
        if not 0.0 <= rho <= 1.0:
            raise ValueError(f"icc must be in [0, 1], got {icc}")
        k = w * np.sqrt(_working_scale(tab, w, h, N, rho))[:, None]
        if not need_df:
            return k, e, np.full(tab.T, np.nan), G
        # a df below 1 would only arise when one cluster carries nearly all the weight
        Nt = Ntg if usable.all() else np.where(usable[:, None], Ntg, 1.0)
        df = np.clip(_bm_df(tab, k, h, Nt, rho), 1.0, np.maximum(G - 1.0, 1.0))
        # A degenerate working model (icc estimated at 1 with tied clusters) leaves 0/0: use G - 1.
        df = np.where(np.isfinite(df), df, np.maximum(G - 1.0, 1.0))
    else:
        k = w * np.sqrt(G / np.maximum(G - 1.0, 1.0)).take(ct)[:, None]
        df = G - 1.0
    return k, e, df, G


def _target_rows(tab: _Table, t: int) -> np.ndarray:
    """Rows of `tab` that belong to target t (rows are sorted by target)."""
    lo, hi = np.searchsorted(tab.cluster_target, [t, t + 1])
    return np.arange(lo, hi)


_WILD_QUADRATIC_CELLS = 4_000_000  # G x rows x K floats (32 MB) at most for the quadratic form's linear map
# how `_WildDesign` computes t*: the cheaper of the two ("auto"), or one of them (the tests compare them)
_WILD_FORM: Literal["auto", "quadratic", "rows"] = "auto"
WEBB = np.concatenate([-np.sqrt([0.5, 1.0, 1.5]), np.sqrt([0.5, 1.0, 1.5])])  # Webb's six-point weights


class _WildDesign:
    """One target's restricted wild cluster bootstrap: the data under the null, and how a sample is studentised.

    The null is imposed (restricted rates R~ = R - (a / N) (theta - null) / sum(a^2 / N), so sum a R~ = null)
    and each own cluster's restricted residuals are multiplied by one weight v: y* = R~ n + v e~, on the
    finest rows (the (own, partner) cells when two-way). A sample is studentised exactly like the data: the
    same variance terms with the same design scales k (they depend on the counts only), negative eigenvalues
    clipped when two-way.
    """

    def __init__(
        self,
        terms: list[tuple[_Table, np.ndarray, float]],
        t: int,
        a: np.ndarray,
        R: np.ndarray,
        N: np.ndarray,
        null: float,
    ) -> None:
        finest = terms[-1][0]  # the intersection table when two-way, else the own one
        rows_f = _target_rows(finest, t)
        self.n, self.a, self.N, self.null = finest.n[rows_f], a, N, null
        self.R = R - (a / N) * (float(a @ R) - null) / float((a * a / N).sum())
        self.resid = finest.y[rows_f] - self.R * self.n
        codes = finest.cluster_code[rows_f]
        own, partner = codes, codes
        if len(terms) == 3:
            value = np.asarray(finest.cluster_uniques)[codes].astype(np.int64)
            stride = int(terms[1][0].cluster_uniques.max()) + 1  # intersection code = own * stride + partner
            own, partner = value // stride, value % stride
        self.terms = []  # per term: finest rows grouped by the term's cluster (order, group starts), scales, sign
        for (tab, kappa, sign), key in zip(terms, (own, partner, codes)):
            rows = _target_rows(tab, t)
            order = np.argsort(tab.cluster_code[rows])
            pos = order[np.searchsorted(tab.cluster_code[rows][order], key)]  # each finest row's term row
            by = np.argsort(pos, kind="stable")
            starts = np.flatnonzero(np.r_[True, pos[by][1:] != pos[by][:-1]])
            self.terms.append((by, starts, kappa[rows[np.unique(pos)]], sign))
            if len(self.terms) == 1:
                own_pos, own_rows = pos, rows  # each finest row's own cluster (its row among the own table's)
        self.G_own = int(own_pos.max()) + 1
        # column_of[j]: the weight column of the target's j-th own cluster (own table order: sorted labels), its
        # rank by content, not by label (`_content_ranks`)
        own_tab = terms[0][0]
        self.column_of = _content_ranks(own_tab.n[own_rows], own_tab.y[own_rows], own_pos, self.n, finest.y[rows_f])
        self.own = self.column_of[own_pos]
        G, K, n_rows = self.G_own, len(a), len(self.n)
        # The quadratic form costs G^2 K^2 per draw, a pass over the finest rows ~ rows K (terms + 3): pick the cheaper.
        cheaper = G * G * K <= n_rows * (len(terms) + 3) and G * n_rows * K <= _WILD_QUADRATIC_CELLS
        self.quadratic = cheaper if _WILD_FORM == "auto" else _WILD_FORM == "quadratic"
        if self.quadratic:
            self._prepare_quadratic()

    def _prepare_quadratic(self) -> None:
        """A sample's residuals, and so each term's cluster sums E, are linear in the weights v: E = sum_c v_c M_c.
        So V(v) = sum_terms sign E'E = sum_{c,d} v_c v_d Q_cd with Q (G, G, K, K) summed once here, and the
        numerator sum_k a_k R*_k - null = (R~ a - null) + v'd. A draw then costs G^2 K^2, not a pass over the
        (own, partner) cells: the two-way 10M-answer log-odds spent 76 of its 106 s in those passes."""
        G, K, rows = self.G_own, len(self.a), len(self.n)
        # each weight column's residual sums
        A = np.column_stack([np.bincount(self.own, weights=self.resid[:, k], minlength=G) for k in range(K)])
        # L[c, r]: d e*_r / d v_c = resid_r [own(r) = c] - A_c n_r / N (the rates R* move with every cluster)
        L = -(A / self.N)[:, None, :] * self.n[None, :, :]
        L[self.own, np.arange(rows)] += self.resid
        Q = np.zeros((G, G, K, K))
        for by, starts, kappa, sign in self.terms:
            M = np.add.reduceat(L[:, by], starts, axis=1) * kappa  # (G, term clusters, K)
            Mt = M.transpose(0, 2, 1).reshape(G * K, -1)  # rows (c, k): one matrix product for every (c, d, k, l)
            Q += sign * (Mt @ Mt.T).reshape(G, K, G, K).transpose(0, 2, 1, 3)
        self._Q = Q.reshape(G * G, K * K)
        self._d = A @ (self.a / self.N)
        self._num0 = float(self.R @ self.a - self.null)

    def samples(self, v: np.ndarray) -> np.ndarray:
        """y* of each draw: v (draws, G_own) weights of the own clusters -> (draws, finest rows, K)."""
        return self.R * self.n + v[:, self.own, None] * self.resid

    def statistics(self, v: np.ndarray) -> np.ndarray:
        """t* of each draw (NaN where its variance is 0)."""
        if self.quadratic:
            b, G, K = len(v), self.G_own, len(self.a)
            V = ((v[:, :, None] * v[:, None, :]).reshape(b, G * G) @ self._Q).reshape(b, K, K)
            var = np.einsum("i,bij,j->b", self.a, _psd_clip(V) if len(self.terms) > 1 else V, self.a)
            with np.errstate(divide="ignore", invalid="ignore"):  # (a sum of squares: rounding below 0 is 0)
                return (self._num0 + v @ self._d) / np.sqrt(np.maximum(var, 0.0))
        ystar = self.samples(v)
        Rstar = ystar.sum(axis=1) / self.N
        estar = ystar - Rstar[:, None, :] * self.n
        V = np.zeros((len(v), len(self.a), len(self.a)))
        for by, starts, kappa, sign in self.terms:
            E = np.add.reduceat(estar[:, by], starts, axis=1) * kappa  # (draws, term clusters, K)
            V += sign * np.einsum("bgk,bgl->bkl", E, E)
        var = np.einsum("i,bij,j->b", self.a, _psd_clip(V) if len(self.terms) > 1 else V, self.a)
        with np.errstate(divide="ignore", invalid="ignore"):
            return (Rstar @ self.a - self.null) / np.sqrt(var)


def _content_ranks(
    n: np.ndarray, y: np.ndarray, row_cluster: np.ndarray, fine_n: np.ndarray, fine_y: np.ndarray
) -> np.ndarray:
    """Rank of each own cluster (rows of n, y: (G, K)) in an order fixed by the data, not the labels.

    The bootstrap's c-th weight column goes to the cluster of rank c, so its draws do not depend on the input's
    row order nor on how clusters are named or coded (the count views code them by first appearance). Key: the
    cluster's counts and sums per component, then the sorted counts and sums of its finest rows (its (own,
    partner) cells when two-way). Clusters whose keys tie keep the table's order (sorted labels); one-way such
    clusters are identical, so which of them gets which weight cannot change a sample.
    """
    coarse = [(a, b) for a, b in zip(map(tuple, n.tolist()), map(tuple, y.tolist()))]
    # the finest rows only decide between clusters whose counts and sums tie (rare): built for those alone
    seen = Counter(coarse)
    tied = [seen[key] > 1 for key in coarse]
    parts: list[list] = [[] for _ in range(len(n))]
    if any(tied):
        for c, a, b in zip(row_cluster.tolist(), fine_n.tolist(), fine_y.tolist()):
            if tied[c]:
                parts[c].append((tuple(a), tuple(b)))
    keys = [(*coarse[c], tuple(sorted(parts[c]))) for c in range(len(n))]
    order = sorted(range(len(n)), key=keys.__getitem__)  # stable: ties keep the table's order
    ranks = np.empty(len(n), dtype=np.int64)
    ranks[order] = np.arange(len(n))
    return ranks


def _wild_bootstrap_p(design: _WildDesign, stat: float, rng: np.random.Generator) -> float:
    """Wild cluster restricted (WCR) bootstrap p-value of a t statistic: the share of |t*| >= |t|.

    Weights: Webb's six points {+-sqrt(1/2), +-1, +-sqrt(3/2)}, one per own cluster (with 8 clusters 6^8
    distinct samples where Rademacher's two points give 2^8). With two-way clustering the weights are drawn on
    the own-render dimension, the one with fewer clusters (MacKinnon, Nielsen and Webb 2021). Sequential
    (Besag and Clifford 1991): stops after WILD_STOP exceedances (p = WILD_STOP / draws), at most WILD_DRAWS
    draws (p = (1 + exceedances) / (WILD_DRAWS + 1)).
    """
    return _sequential_p(lambda b: np.abs(design.statistics(WEBB[rng.integers(0, 6, (b, design.G_own))])), abs(stat))


def _psd_clip(V: np.ndarray) -> np.ndarray:
    """Each (K, K) matrix with its negative eigenvalues set to 0 (Cameron, Gelbach and Miller 2011, 2.3)."""
    V = 0.5 * (V + np.swapaxes(V, -1, -2))
    vals, vecs = np.linalg.eigh(V)
    return np.einsum("tij,tj,tkj->tik", vecs, np.clip(vals, 0.0, None), vecs)


_Tables = tuple[_Table, _Table, _Table]  # two-way: the own, partner and intersection (own, partner) tables


def _input_tables(
    cells: pd.DataFrame | _Table | _Tables, coefficients: Mapping[Hashable, float], two_way: bool
) -> tuple[_Table, _Tables | None]:
    """(the own clusters' table, the two-way tables or None) of `cluster_contrasts`' input."""
    if isinstance(cells, tuple):  # the (own, partner, intersection) tables, summed already (`split_contrasts`)
        return cells[0], cells if two_way else None
    if isinstance(cells, _Table):  # summed already: one-way
        return cells, None
    tab = _Table(cells, coefficients)
    crossed = (
        two_way
        and "partner_cluster" in cells.columns
        and bool((cells["partner_cluster"].to_numpy() != cells["cluster"].to_numpy()).any())
    )
    if not crossed:
        return tab, None
    # the same cells clustered by partner, and by the intersection (own, partner); the codes `_Table`
    # gives the own clusters (the bootstrap decodes the intersection with them)
    own = _codes(cells["cluster"])[0]
    partner = _codes(cells["partner_cluster"])[0]
    tab_p = _Table(cells.assign(cluster=partner), coefficients)
    tab_i = _Table(cells.assign(cluster=own * (int(partner.max()) + 1) + partner), coefficients)
    return tab, (tab, tab_p, tab_i)


def _two_way_variance(
    tables: _Tables,
    method: Method,
    partner_icc: tuple[float, float] | None,
    usable: np.ndarray,
    R: np.ndarray,
    Ntg: np.ndarray,
    own: tuple[np.ndarray, np.ndarray, np.ndarray],
    G: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple[_Table, np.ndarray, float]]]:
    """(variance, df, partner clusters per target, the partner and intersection terms) of a two-way test.

    Cameron-Gelbach-Miller: V_own + V_partner - V_intersection for the K component rates, each term with its
    own small-sample correction (CR2 under its own working model), negative eigenvalues clipped; df: the
    smaller of the own and partner terms' Bell-McCaffrey df (so at most min(G_own, G_partner) - 1). A given
    icc is the own clusters'; the other terms' come with partner_icc or are estimated here. `own`: the own
    term's (scale, residuals, df)."""
    tab, tab_p, tab_i = tables
    a = tab.a
    k_o, e_o, df = own
    icc_p, icc_i = (None, None) if partner_icc is None else partner_icc
    k_p, e_p, df_p, G_p = _scaled_residuals(tab_p, method, icc_p, usable, R, Ntg)
    k_i, e_i, _, _ = _scaled_residuals(tab_i, method, icc_i, usable, R, Ntg, need_df=False)
    u, u_p, u_i = k_o * e_o, k_p * e_p, k_i * e_i
    V = tab.gram(u / a, u / a) + tab_p.gram(u_p / a, u_p / a) - tab_i.gram(u_i / a, u_i / a)
    var = np.einsum("i,tij,j->t", a, _psd_clip(V), a)
    df = np.clip(np.minimum(df, df_p), 1.0, np.maximum(np.minimum(G, G_p) - 1.0, 1.0))
    return var, df, G_p, [(tab_p, k_p, 1.0), (tab_i, k_i, -1.0)]


def _flags(se: np.ndarray, too_few: np.ndarray, missing: np.ndarray | np.bool_) -> np.ndarray:
    """Why each target is not tested ("" when it is), the more specific reason winning."""
    flag = np.full(len(se), "", dtype=object)
    flag[se == 0] = FLAG_ZERO_VAR
    flag[too_few] = FLAG_TOO_FEW
    flag[missing] = FLAG_MISSING  # the more specific reason (a missing component is also in < 2 clusters)
    return flag


def _wild_check(
    p: np.ndarray,
    stat: np.ndarray,
    few: np.ndarray,
    scaled: list[tuple[_Table, np.ndarray, float]],
    a: np.ndarray,
    R: np.ndarray,
    Ntg: np.ndarray,
    null: float,
) -> None:
    """p of the `few` targets raised in place to the wild cluster bootstrap's where that is larger.

    With few clusters the t reference understates the tail (skewed cluster sums); the p-value must also pass
    the wild cluster bootstrap (`_wild_bootstrap_p`). `scaled`: (table, scale k, sign) of each variance term."""
    terms = [(t_, k_ / a, sign) for t_, k_, sign in scaled]  # design scale per component
    for t in np.flatnonzero(few):
        design = _WildDesign(terms, int(t), a, R[t], Ntg[t], float(null))
        # draws seeded by the target's own counts: its p does not depend on the other targets of the call
        rng = np.random.default_rng([WILD_SEED, design.G_own, *np.rint(Ntg[t]).astype(np.int64).tolist()])
        boot = _wild_bootstrap_p(design, float(stat[t]), rng)
        p[t] = max(float(p[t]), boot)


def cluster_contrasts(
    cells: pd.DataFrame | _Table | _Tables,
    coefficients: Mapping[Hashable, float],
    null: float,
    alpha: float = 0.05,
    *,
    method: Method | None = None,
    icc: float | None = None,
    two_way: bool = True,
    wild: bool | None = None,
    partner_icc: tuple[float, float] | None = None,
) -> pd.DataFrame:
    """Cluster-robust t-test of ``sum_g a_g Y_g / N_g = null`` for every target.

    cells: columns target, cluster, component, y, n (see the module docstring), optionally
    partner_cluster (the cluster of the other person of the question, e.g. the partner's render);
    or a one-way `_Table` of their sums (`_Table.from_sums`, components in the order of `coefficients`), or
    two-way the (own, partner, intersection) tables of their sums (`verdicts._crossed_tables`);
    rows whose component has no (or a zero) coefficient are ignored, repeated keys are summed.
    method: "cr2" (working-model bias-reduced sandwich with Bell-McCaffrey df; default) or
    "cr1" (G/(G-1) sandwich, t(G-1); anti-conservative with few or unbalanced clusters, kept
    for comparison).
    icc: working within-cluster correlation of offers for "cr2"; None estimates it from `cells`
    (`estimate_icc`); 0 gives classic CR2 (independent-offers working model).
    two_way: with a partner_cluster column that differs from cluster somewhere, the variance is
    two-way cluster-robust (own x partner cluster; see "Two-way clustering" in the module docstring);
    False (or no such column) clusters on `cluster` alone.
    partner_icc: two-way, the working icc of the partner and of the intersection term (None: each
    estimated from `cells`, like `icc`); `split_contrasts` estimates them once for all its chunks.
    wild: check p-values below SCREEN of targets with a component in fewer than FEW_CLUSTERS clusters
    with the wild cluster bootstrap, p = max(t-test p, bootstrap p) ("Few clusters" in the module
    docstring); None: the module default (WILD).
    Returns one row per target: estimate, se, n_clusters, n_offers, df, statistic, p_value
    (two-sided), ci_low/ci_high (1 - alpha), flag ("" when tested), sorted by target; and
    n_partner_clusters (NaN when one-way).
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha}")
    method = DEFAULT_METHOD if method is None else method
    if method not in ("cr2", "cr1"):
        raise ValueError(f"method must be 'cr2' or 'cr1', got {method!r}")
    tab, crossed = _input_tables(cells, coefficients, two_way)
    a = tab.a
    Ntg, Ytg = tab.totals()  # (T, K)
    clusters_g = tab.per_target((tab.n > 0).astype(float))  # clusters that hold each component
    G = np.bincount(tab.cluster_target, minlength=tab.T).astype(float)
    missing = (Ntg <= 0).any(axis=1)
    too_few = (G < 2) | (clusters_g < 2).any(axis=1)
    if crossed is not None:
        tab_p = crossed[1]
        G_p = np.bincount(tab_p.cluster_target, minlength=tab.T).astype(float)
        too_few |= (G_p < 2) | (tab_p.per_target((tab_p.n > 0).astype(float)) < 2).any(axis=1)
    usable = ~(missing | too_few)
    with np.errstate(divide="ignore", invalid="ignore"):
        R = Ytg / Ntg
        estimate = (R * a).sum(axis=1)
    k_o, e_o, df, _ = _scaled_residuals(tab, method, icc, usable, R, Ntg)
    scaled = [(tab, k_o, 1.0)]  # (table, scale k, sign) of each variance term (the bootstrap's design)
    if crossed is None:
        psi = _row_dot(k_o, e_o)
        var = np.bincount(tab.cluster_target, weights=psi * psi, minlength=tab.T)
    else:
        var, df, G_p, more = _two_way_variance(crossed, method, partner_icc, usable, R, Ntg, (k_o, e_o, df), G)
        scaled += more
    # Untested targets' variances are not used (and need not be >= 0); a clipped two-way variance can round a hair
    # below 0, which is 0 (zero_variance), not a NaN standard error.
    se = np.sqrt(np.where(usable, np.maximum(var, 0.0), 0.0))
    flag = _flags(se, too_few, missing)
    tested = flag == ""
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = np.where(tested, (estimate - null) / se, np.nan)
        p = np.where(tested, 2.0 * distributions.t_sf(np.abs(stat), np.where(tested, df, 1.0)), 1.0)
        half = distributions.t_isf(alpha / 2.0, np.where(tested, df, 1.0)) * se
    if WILD if wild is None else wild:  # only a p below SCREEN can matter
        few = tested & (p < SCREEN) & (clusters_g.min(axis=1) < FEW_CLUSTERS)
        if few.any():
            _wild_check(p, stat, few, scaled, a, R, Ntg, null)
    out = pd.DataFrame(
        {
            "target": tab.targets,
            "estimate": np.where(missing, np.nan, estimate),
            "se": np.where(tested | (flag == FLAG_ZERO_VAR), se, np.nan),
            "n_clusters": G.astype(np.int64),
            "n_offers": Ntg.sum(axis=1),
            "df": np.where(tested, df, np.nan),
            "statistic": stat,
            "p_value": p,
            "ci_low": np.where(tested, estimate - half, np.nan),
            "ci_high": np.where(tested, estimate + half, np.nan),
            "flag": flag.astype(str),
        }
    )
    out = out[OUTPUT_COLUMNS]
    if crossed is not None:
        out["n_partner_clusters"] = G_p.astype(np.int64)
    return out


def label_permutation_check(clusters: pd.DataFrame, tests: pd.DataFrame) -> np.ndarray:
    """p-values of `tests` (a one-vs-rest contrast of rates per target) checked by a stratified permutation test.

    The contrast: target i's rate sum(y) / sum(n) over its own clusters minus the rate of every other cluster
    (e.g. factuality: an identity's accuracy against the other identities'). clusters: one row per cluster with
    target (its owner), stratum, y, n; tests: `cluster_contrasts`' output for the same contrast (target,
    p_value, flag). Where a tested target's p is below SCREEN and it owns fewer than FEW_CLUSTERS clusters, p
    becomes max(p, p_perm): p_perm is the share of relabellings, within each stratum, that give a contrast at
    least as large in absolute value (the target keeps as many clusters per stratum as it has; Besag-Clifford
    sequential like the wild check, WILD_STOP / WILD_DRAWS).

    Why: with skewed cluster rates (a render effect entering a softmax: an identity's per-render accuracy has
    skewness ~0.8) the t statistic is skewed, and a symmetric reference understates its extreme tail; the wild
    bootstrap with symmetric weights is symmetric too (factuality at the 1,716-pair sample: p < 0.001 at 1.7x
    nominal with it). Under the null that clusters are exchangeable within strata (no identity effect; render
    effects and cluster sizes not depending on the identity) p_perm is exact in every tail, skewed or not. The
    maximum of two p-values is valid where either is, so the check costs validity nowhere: where exchangeability
    fails (say, an identity's renders vary more) the t test still holds the level as it did.
    """
    p = tests["p_value"].to_numpy(dtype=float).copy()
    if clusters.empty:
        return p
    _check_cells(clusters, ("target", "stratum", "y", "n"))
    # canonical cluster order (stratum, then content): the draws do not depend on the input's order or names
    c = clusters.sort_values(["stratum", "n", "y", "target"], kind="stable").reset_index(drop=True)
    y, n = c["y"].to_numpy(dtype=float), c["n"].to_numpy(dtype=float)
    strata = _codes(c["stratum"])[0]
    owner = c["target"].to_numpy()
    Y, N = float(y.sum()), float(n.sum())
    flags = tests["flag"].fillna("").to_numpy()
    for row, target in enumerate(tests["target"].to_numpy()):
        mine = owner == target
        if flags[row] != "" or not p[row] < SCREEN or mine.sum() >= FEW_CLUSTERS:
            continue
        Yi, Ni = float(y[mine].sum()), float(n[mine].sum())
        if not 0 < Ni < N:
            continue
        observed = abs(Yi / Ni - (Y - Yi) / (N - Ni))
        groups = [(np.flatnonzero(strata == s), int(mine[strata == s].sum())) for s in np.unique(strata[mine])]
        rng = np.random.default_rng([PERM_SEED, int(mine.sum()), *np.rint([Ni, N, Yi]).astype(np.int64).tolist()])
        draw = partial(_relabelled_contrasts, y, n, groups, rng)
        p[row] = max(p[row], _sequential_p(draw, observed))
    return p


def _relabelled_contrasts(
    y: np.ndarray, n: np.ndarray, groups: list[tuple[np.ndarray, int]], rng: np.random.Generator, b: int
) -> np.ndarray:
    """|own rate - rest's rate| of b relabellings: per stratum (its clusters, how many the target owns) a
    uniformly drawn subset of that size becomes the target's."""
    ys, ns = np.zeros(b), np.zeros(b)
    for idx, k in groups:
        pick = idx[np.argpartition(rng.random((b, len(idx))), k - 1, axis=1)[:, :k]]
        ys += y[pick].sum(axis=1)
        ns += n[pick].sum(axis=1)
    Y, N = float(y.sum()), float(n.sum())
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.abs(ys / ns - (Y - ys) / (N - ns))


def _sequential_p(draw: Callable[[int], np.ndarray], observed: float) -> float:
    """Besag-Clifford sequential Monte Carlo p-value of `observed` against draw(b) -> b statistics (as
    `_wild_bootstrap_p`: stop after WILD_STOP exceedances, at most WILD_DRAWS draws)."""
    exceed = drawn = 0
    while drawn < WILD_DRAWS:
        b = min(WILD_CHUNK, WILD_DRAWS - drawn)
        hits = np.cumsum(np.nan_to_num(draw(b), nan=0.0) >= observed * (1.0 - 1e-12))
        if exceed + int(hits[-1]) >= WILD_STOP:
            return WILD_STOP / (drawn + int(np.searchsorted(hits, WILD_STOP - exceed)) + 1)
        exceed += int(hits[-1])
        drawn += b
    return (1.0 + exceed) / (WILD_DRAWS + 1.0)


def refusal_homogeneity(
    cells: pd.DataFrame, *, n_permutations: int = 999, seed: int = 0, stop_after: int | None = 20
) -> dict[str, object]:
    """Cluster permutation test that refusal rates ``refused / (n + refused)`` are equal across targets.

    cells: columns target, cluster, refused, n (valid offers). Whole clusters swap their target
    labels with clusters holding as many targets (see the module docstring), so the reference
    distribution keeps every within-cluster dependence. Returns statistic (Pearson X^2),
    p_value (sequential: stop_after / permutations drawn once stop_after reach the statistic, else
    (1 + exceed) / (n_permutations + 1); fixed seed), permutations (drawn), n_targets, n_clusters,
    overall_rate, rates (target -> rate), method. stop_after=None draws all n_permutations.
    """
    _check_cells(cells, ("target", "cluster", "refused", "n"))
    if n_permutations < 1:
        raise ValueError(f"n_permutations must be >= 1, got {n_permutations}")
    if stop_after is not None and stop_after < 1:
        raise ValueError(f"stop_after must be >= 1 or None, got {stop_after}")
    t_codes, targets = _codes(cells["target"])
    c_codes, _ = _codes(cells["cluster"])
    ref = cells["refused"].to_numpy(dtype=float)
    tot = ref + cells["n"].to_numpy(dtype=float)
    if np.any(ref < 0) or np.any(tot < ref):
        raise ValueError("need refused >= 0 and n >= 0")
    # one row per (cluster, target), ordered within cluster
    key = c_codes * len(targets) + t_codes
    ukey, inv = np.unique(key, return_inverse=True)
    ref = np.bincount(inv, weights=ref)
    tot = np.bincount(inv, weights=tot)
    row_t, row_c = ukey % len(targets), ukey // len(targets)
    T, C = len(targets), int(row_c.max()) + 1 if len(row_c) else 0
    overall = ref.sum() / tot.sum() if tot.sum() > 0 else float("nan")
    rates_t = np.bincount(row_t, weights=ref, minlength=T) / np.bincount(row_t, weights=tot, minlength=T)
    out: dict[str, object] = {
        "n_targets": T,
        "n_clusters": int(len(np.unique(row_c))),
        "overall_rate": float(overall),
        "rates": dict(zip(targets.tolist(), rates_t.tolist())),
        "method": f"Pearson X^2, permutations of whole clusters (within equal target count), at most "
        f"{n_permutations}"
        + (f", stopped at {stop_after} reaching the statistic (Besag-Clifford)" if stop_after else ""),
    }
    if T < 2 or not 0.0 < overall < 1.0:
        return {**out, "statistic": 0.0, "p_value": 1.0, "permutations": 0}

    def x2(labels: np.ndarray) -> np.ndarray:
        # labels: (B, rows) target codes; Pearson X^2 of refused vs answered by target
        B = labels.shape[0]
        flat = (labels + T * np.arange(B)[:, None]).ravel()
        r = np.bincount(flat, weights=np.tile(ref, B), minlength=B * T).reshape(B, T)
        m = np.bincount(flat, weights=np.tile(tot, B), minlength=B * T).reshape(B, T)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = (r - m * overall) ** 2 / (m * overall * (1.0 - overall))
        return np.where(m > 0, terms, 0.0).sum(axis=1)

    observed = float(x2(row_t[None, :])[0])
    # strata: clusters with the same number of rows; a permutation maps cluster -> cluster
    rows_per = np.bincount(row_c, minlength=C)
    start = np.concatenate([[0], np.cumsum(rows_per)[:-1]])
    # (clusters of size k, k) row indices of each stratum
    strata = [start[rows_per == k][:, None] + np.arange(k) for k in np.unique(rows_per[rows_per > 0])]
    rng = np.random.default_rng(seed)
    exceed = 0
    # ~2M labels per chunk: about 100 MB of temporaries (20M cost 0.6 GB of peak memory)
    chunk = max(1, min(n_permutations, 2_000_000 // max(len(row_t), 1)))
    # the first chunk is small: at p = 0.5 the stop comes after ~2 * stop_after permutations
    first = min(chunk, 4 * stop_after) if stop_after else chunk
    done = 0
    while done < n_permutations:
        B = min(first if done == 0 else chunk, n_permutations - done)
        labels = np.empty((B, len(row_t)), dtype=np.int64)
        for b in range(B):  # permutation by permutation, so the draws do not depend on the chunk sizes
            for pos in strata:
                labels[b, pos] = row_t[pos[rng.permutation(len(pos))]]
        hits = np.cumsum(x2(labels) >= observed * (1.0 - 1e-12))
        if stop_after and exceed + int(hits[-1]) >= stop_after:
            drawn = done + int(np.searchsorted(hits, stop_after - exceed)) + 1
            return {**out, "statistic": observed, "p_value": stop_after / drawn, "permutations": drawn}
        exceed += int(hits[-1])
        done += B
    p_value = (1.0 + exceed) / (n_permutations + 1.0)
    return {**out, "statistic": observed, "p_value": p_value, "permutations": n_permutations}


def refusal_bounds(
    cells: pd.DataFrame,
    coefficients: Mapping[Hashable, float],
    null: float,
    alpha: float = 0.05,
    **kwargs: object,
) -> pd.DataFrame:
    """How far refusals could move each target's verdict.

    cells: the `cluster_contrasts` columns plus ``refused`` (invalid answers in the same cell;
    ``n`` counts the valid ones). The high bound scores every refusal as a selection where
    a_g > 0 and as a non-selection where a_g < 0 (with positive coefficients: "every refusal
    would have chosen the target"); the low bound does the opposite. Both recompute the test
    over n + refused offers. Returns per target: estimate, p_value, flag (observed), estimate_low,
    p_value_low, estimate_high, p_value_high, verdict ("above"/"below"/"none" at alpha for each)
    and verdict_robust (the observed verdict holds at both bounds). kwargs go to
    `cluster_contrasts`.
    """
    _check_cells(cells, ("target", "cluster", "component", "y", "n", "refused"))
    comp, a = _component_codes(cells["component"], coefficients)
    sign = np.where(comp >= 0, np.sign(a[np.maximum(comp, 0)]), 0.0)
    refused = cells["refused"].to_numpy(dtype=float)
    y = cells["y"].to_numpy(dtype=float)
    # A target with a verdict has a t-test p below alpha too (the bootstrap can only raise p), so the
    # bounds' verdicts need no bootstrap.
    kwargs.setdefault("wild", False)
    observed = cluster_contrasts(cells, coefficients, null, alpha, **kwargs)  # type: ignore[arg-type]
    if not np.any(refused[comp >= 0]):
        # no refusal in a weighted cell: both bounds are the observed test itself (the same cells)
        high = low = observed
    else:
        widened = cells.assign(n=cells["n"].to_numpy(dtype=float) + refused)
        high = cluster_contrasts(widened.assign(y=y + refused * (sign > 0)), coefficients, null, alpha, **kwargs)  # type: ignore[arg-type]
        low = cluster_contrasts(widened.assign(y=y + refused * (sign < 0)), coefficients, null, alpha, **kwargs)  # type: ignore[arg-type]

    def verdict(frame: pd.DataFrame) -> np.ndarray:
        hit = (frame["p_value"] < alpha).to_numpy()
        side = np.where(frame["estimate"].to_numpy() > null, "above", "below")
        return np.where(hit, side, "none")

    out = observed[["target", "estimate", "p_value", "flag"]].copy()
    out["estimate_low"], out["p_value_low"] = low["estimate"].to_numpy(), low["p_value"].to_numpy()
    out["estimate_high"], out["p_value_high"] = high["estimate"].to_numpy(), high["p_value"].to_numpy()
    v, vl, vh = verdict(observed), verdict(low), verdict(high)
    out["verdict"] = v
    out["verdict_robust"] = (v == vl) & (v == vh)
    return out

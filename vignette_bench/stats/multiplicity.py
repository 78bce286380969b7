"""Across identities: the Simes global test, global-then-BH, and a dimension's bias magnitude.

* `simes`: one p-value for "no identity of this family is biased" from the identities' p-values.
  Simes (1986): ``p = min_i k p_(i) / i``. Exact under independence, valid under positive
  regression dependence (PRDS), and -- what matters for two-sided tests of jointly normal
  statistics with any correlation sign, as between identities of one forced choice -- exact for
  two tests (|Z| of a bivariate normal is MTP2) and without known failures beyond; Bonferroni
  (``k * min p``) is the always-valid fallback and never more than k times larger.
* `global_then_bh`: Simes per group (e.g. per identity across its families), then
  Benjamini-Hochberg across groups: "which identities are biased anywhere".
* `noise_corrected_magnitude`: how biased a dimension is, in the units of the estimates.

Magnitude
---------
``M = sqrt(max(0, mean_i[(S_i - null)^2 - se_i^2]))``: the root mean square of the true biases
``b_i = E[S_i] - null`` with the sampling noise removed. Under the null (all b_i = 0) the mean
square inside is unbiased for 0 at every sample size whenever se_i^2 is unbiased for the
variance (the working-model CR2 variance of `clustered` is built to be); it is returned as
``mean_square`` (may be negative). Only the truncation at 0 leaves a small positive expectation
-- unlike mean |S - 0.5|, which is ~0.8 se under the null (17.7 pp for a random responder with
few answers). No ratio (S - null) / se enters the point estimate: with few clusters se is itself
noisy and such ratios are heavy-tailed (t with 1 df has no finite mean square).

CI and dependence. ``Q = sum_i (S_i - null)^2 / s2`` with ``s2 = mean_i se_i^2``. Identities of one
dimension are not independent: in a two-way forced choice S_j = 1 - S_i for two identities, and
for k identities that meet each other equally the estimates sum to a constant (correlation
-1/(k-1)); a chi2 with k df would then double-count. With correlation matrix R of the
estimates, Q / c is approximately noncentral chi2 with ``nu = k^2 / tr(R^2)`` df and
noncentrality ``lambda / c``, ``c = tr(R^2) / k``, ``lambda = sum_i b_i^2 / s2``
(Satterthwaite; exact for the sum-to-constant structure, where nu = k - 1). The CI inverts that
noncentral chi2 for lambda and reports ``sqrt(lambda s2 / k)``, the same quantity as the point
estimate (exact when all se are equal; the se are treated as known). ``dependence``: "forced_choice" (default, R exchangeable with
-1/(k-1)), "independent" (R = I, for estimates from disjoint data) or an explicit k x k R.
Any dependence raises tr(R^2) above k, so assuming independence is the anti-conservative
choice. The global test p-value is Simes over the identities' two-sided p-values (dependence
robust, see above); ``p_value_chi2`` is the test dual to the CI.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Literal

import numpy as np
import pandas as pd
from scipy import special

from vignette_bench.stats import distributions

Dependence = Literal["forced_choice", "independent"]


def simes(p_values: Sequence[float] | np.ndarray) -> float:
    """Simes global p-value over the finite p-values (NaN dropped); 1.0 when there is none."""
    p = np.asarray(p_values, dtype=float)
    p = np.sort(p[np.isfinite(p)])
    if len(p) == 0:
        return 1.0
    if np.any((p < 0) | (p > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    return float(min(1.0, np.min(len(p) * p / np.arange(1, len(p) + 1))))


def global_then_bh(frame: pd.DataFrame, by: Hashable | list[Hashable], p_col: str = "p_value") -> pd.DataFrame:
    """Simes p per group of `frame` (grouped by `by`), then BH q-values across the groups.

    Returns one row per group: the `by` columns, p_simes, n_tests (finite p-values), q_value.
    """
    keys = [by] if not isinstance(by, list) else by
    grouped = frame.groupby(keys, sort=True, dropna=False)[p_col]
    out = grouped.agg(
        p_simes=lambda s: simes(s.to_numpy()), n_tests=lambda s: int(np.isfinite(s.to_numpy(dtype=float)).sum())
    ).reset_index()
    out["q_value"] = distributions.bh_adjust(out["p_simes"].to_numpy(dtype=float)) if len(out) else np.zeros(0)
    return out


def _correlation(k: int, dependence: Dependence | np.ndarray) -> np.ndarray:
    if isinstance(dependence, str):
        if dependence == "independent" or k == 1:
            return np.eye(k)
        if dependence == "forced_choice":
            r = -1.0 / (k - 1)
            return np.full((k, k), r) + (1.0 - r) * np.eye(k)
        raise ValueError(f"dependence must be 'forced_choice', 'independent' or a matrix, got {dependence!r}")
    R = np.asarray(dependence, dtype=float)
    if R.shape != (k, k):
        raise ValueError(f"correlation matrix must be {k} x {k}, got {R.shape}")
    return R


def _invert_ncx2(x: float, df: float, target: float) -> float:
    """Noncentrality at which P(chi2'(df, nc) <= x) == target (the cdf falls as nc grows); 0 if none."""
    if special.chdtr(df, x) <= target:
        return 0.0
    return float(special.chndtrinc(x, df, target))


def noise_corrected_magnitude(
    estimates: Sequence[float] | np.ndarray,
    ses: Sequence[float] | np.ndarray,
    null: float,
    *,
    alpha: float = 0.05,
    dependence: Dependence | np.ndarray = "forced_choice",
    p_values: Sequence[float] | np.ndarray | None = None,
) -> dict[str, object]:
    """Noise-corrected RMS bias of one dimension, its CI and a global test (see the module docstring).

    estimates/ses: one per identity (non-finite pairs are dropped, and so is their row and
    column of an explicit correlation matrix). p_values: the identities' own two-sided p-values
    for the Simes test (e.g. from `cluster_contrasts`); default: normal p-values of
    (S - null) / se. Returns magnitude, ci_low, ci_high, p_value (Simes), p_value_chi2,
    mean_square (untruncated, unbiased), n_targets, df_effective, method.
    """
    S = np.asarray(estimates, dtype=float)
    se = np.asarray(ses, dtype=float)
    if S.shape != se.shape:
        raise ValueError("estimates and ses must have the same length")
    ok = np.isfinite(S) & np.isfinite(se) & (se > 0)
    if not isinstance(dependence, str):
        dependence = np.asarray(dependence, dtype=float)[np.ix_(ok, ok)]
    if p_values is not None:
        p_values = np.asarray(p_values, dtype=float)[ok]
    S, se = S[ok], se[ok]
    k = len(S)
    dep_name = dependence if isinstance(dependence, str) else "given correlation matrix"
    method = f"noise-corrected RMS; CI: noncentral chi2 inversion on the mean variance with effective df ({dep_name}); p: Simes over identities"
    if k == 0:
        nan = float("nan")
        return {
            "magnitude": nan,
            "ci_low": nan,
            "ci_high": nan,
            "p_value": 1.0,
            "p_value_chi2": 1.0,
            "mean_square": nan,
            "n_targets": 0,
            "df_effective": nan,
            "method": method,
        }
    x = S - null
    mean_square = float(np.mean(x * x - se * se))
    R = _correlation(k, dependence)
    trR2 = float(np.sum(R * R))
    c, nu = trR2 / k, k * k / trR2
    # The CI scales by the mean variance (not each se): then E[Q] = k + k M^2 / s2 matches the point
    # estimate, so the interval contains it; it treats the se as known (exact for equal se).
    s2 = float(np.mean(se * se))
    q = float(np.sum(x * x)) / (s2 * c)
    lam_hi = c * _invert_ncx2(q, nu, alpha / 2.0)
    lam_lo = c * _invert_ncx2(q, nu, 1.0 - alpha / 2.0)
    if p_values is None:
        p_values = 2.0 * distributions.norm_sf(np.abs(x / se))
    return {
        "magnitude": float(np.sqrt(max(0.0, mean_square))),
        "ci_low": float(np.sqrt(lam_lo * s2 / k)),
        "ci_high": float(np.sqrt(lam_hi * s2 / k)),
        "p_value": simes(p_values),
        "p_value_chi2": float(distributions.chi2_sf(q, nu)),
        "mean_square": mean_square,
        "n_targets": k,
        "df_effective": float(nu),
        "method": method,
    }

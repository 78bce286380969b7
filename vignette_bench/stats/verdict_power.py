"""The effect a verdict finds with 80% probability (issue 33 item 5).

A test's detectable effect, (t_{α/2} + t_{0.8}) se, is what that test alone finds at level α. A verdict
needs more: its Simes p over the identity's k tested families and Benjamini–Hochberg over the report's
m testable identities must reach q < α, and the estimate must be at least the minimum effect. For a lone
real effect among m identities BH needs p <= α/m, and Simes needs the family's p <= α/k (the worst case:
the deciding family is the only one moved), so a verdict needs both

    estimate >= c · ŝ   (c = t_{1 - α/(2 m k), df})     and     estimate >= min_effect

of the same estimate, whose standard error ŝ is itself estimated. The needed effect is the true δ with

    P(δ̂ >= max(min_effect, c · ŝ)) = 0.8,    δ̂ ~ N(δ, se²),  ŝ² ~ se² χ²_df / df independent

(the power of the t test the report runs, with the minimum effect as a floor; se and df are the report's).
Where the two thresholds are close, a replicate's ŝ decides which binds, so the figure is above both
max(c se, min_effect) + t_{0.8} se (what it was) and either threshold alone. Where df is unknown ŝ = se
(normal). Several real effects make BH more lenient, so this is the figure for the hardest case;
benchmarks/original_design_calibration.py plants it and counts verdicts.
"""

from __future__ import annotations

import numpy as np

from vignette_bench.stats import distributions

POWER = 0.8
_NODES = 400  # midpoint quantiles of χ²_df: ŝ's distribution, integrated


def needed_effect(
    se: np.ndarray | float,
    df: np.ndarray | float,
    m: int,
    k: np.ndarray | int,
    alpha: float,
    min_effect: float,
    power: float = POWER,
) -> np.ndarray:
    """Per test (se in the effect's units, its t df or NaN, its identity's k tested families), the true effect
    a verdict finds with probability `power` among `m` testable identities; NaN where se is not finite."""
    se, df, k = np.broadcast_arrays(*(np.asarray(x, float) for x in (se, df, k)))
    level = alpha / (2.0 * max(int(m), 1) * np.maximum(k, 1.0))
    normal = ~(np.isfinite(df) & (df > 0))
    d = np.where(normal, 1.0, df)
    crit = np.where(normal, distributions.norm_isf(level), distributions.t_isf(level, d))
    ok = np.isfinite(se) & (se > 0)
    s = np.where(ok, se, 1.0)
    # ŝ / se at equally likely quantiles of sqrt(χ²_df / df); 1 where df is unknown
    u = (np.arange(_NODES) + 0.5) / _NODES
    ratio = np.sqrt(distributions.chi2_isf(u[None, :], d.reshape(-1, 1)) / d.reshape(-1, 1))
    ratio = np.where(normal.reshape(-1, 1), 1.0, ratio)
    bar = np.maximum(min_effect, crit.reshape(-1, 1) * s.reshape(-1, 1) * ratio)  # the threshold, per ŝ
    sd = s.reshape(-1, 1)

    def found(delta: np.ndarray) -> np.ndarray:
        return np.mean(distributions.norm_sf((bar - delta[:, None]) / sd), axis=1)

    # bisection: found() rises with δ; the answer lies between the larger threshold's median and far above it
    lo = np.zeros(bar.shape[0])
    hi = bar.max(axis=1) + 10.0 * sd[:, 0]
    for _ in range(60):
        mid = (lo + hi) / 2.0
        below = found(mid) < power
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return np.where(ok, ((lo + hi) / 2.0).reshape(se.shape), np.nan)

"""The effect a verdict finds with 80% probability (issue 33 item 5).

A test's detectable effect, (t_{α/2} + t_{0.8}) se, is what that test alone finds at level α. A verdict
needs more: its Simes p over the identity's k tested families and Benjamini–Hochberg over the report's
m testable identities must reach q < α, and the estimate must be at least the minimum effect. For a lone
real effect among m identities BH needs p <= α/m, and Simes needs the family's p <= α/k (the worst case:
the deciding family is the only one moved), so the estimate must pass both

    |estimate| >= t_{1 - α/(2 m k), df} · se     and     |estimate| >= min_effect

and it does so with probability 0.8 when the true effect is

    needed = max(t_{1 - α/(2 m k), df} · se, min_effect) + t_{0.8, df} · se

(normal quantiles where df is unknown). Several real effects make BH more lenient, so this is the
figure for the hardest case; benchmarks/original_design_calibration.py plants it and counts verdicts.
"""

from __future__ import annotations

import numpy as np

from vignette_bench.stats import distributions

POWER = 0.8


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
    se, df, k = (np.asarray(x, float) for x in (se, df, k))
    level = alpha / (2.0 * max(int(m), 1) * np.maximum(k, 1.0))
    normal = ~(np.isfinite(df) & (df > 0))
    d = np.where(normal, 1.0, df)
    crit = np.where(normal, distributions.norm_isf(level), distributions.t_isf(level, d))
    gain = np.where(normal, distributions.norm_ppf(power), distributions.t_ppf(power, d))
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(se) & (se > 0), np.maximum(crit * se, min_effect) + gain * se, np.nan)

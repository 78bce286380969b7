"""Strata of a design and the combination of per-stratum estimates (issue 33 item 1).

Identities in the original VIGNETTE design are gendered forms (little boy / little girl) shown in
different fixed orders per gender, and a model's side preference differs by gender. Pooling the answers
of both genders before removing the side preference lets an identity that is one-sided within each
gender look side-balanced because the genders mirror each other. So side preference is estimated and
removed per stratum, and a figure for "both genders" is a combination of the per-stratum estimates:

    effect = (1/S) sum_s effect_s,   se² = (1/S²) sum_s se_s²,
    df = (sum_s se_s²)² / sum_s (se_s⁴ / df_s)        (Welch-Satterthwaite)

equal weights (each gender's identity counts once, whatever its number of answers); t reference.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from vignette_bench.stats import distributions


def one_order_share(left: np.ndarray, right: np.ndarray) -> float:
    """The share of unordered pairs of distinct identities that were shown in one order only."""
    seen = {(a, b) for a, b in zip(left.tolist(), right.tolist()) if a != b}
    pairs = {tuple(sorted(k)) for k in seen}
    return sum(1 for a, b in seen if (b, a) not in seen) / len(pairs) if pairs else 0.0


def fixed_order(frame: pd.DataFrame, stratum: str = "stratum") -> bool:
    """Whether some stratum of the answers (columns left, right, `stratum`) shows most of its pairs in one order
    only: the original design's fixed order (1.0), not a design that draws an order per pair image, where a few
    pairs of a small run happen to be seen in one order (about 1/8 of them with four images per pair)."""
    return any(one_order_share(g["left"].to_numpy(), g["right"].to_numpy()) > 0.5 for _, g in frame.groupby(stratum))


def combine(effect: np.ndarray, se: np.ndarray, df: np.ndarray, alpha: float = 0.05) -> dict[str, float]:
    """Equal-weight combination of per-stratum estimates (any scale): effect, se, df, p (t test of 0),
    ci_low, ci_high. NaN throughout when any stratum has no estimate."""
    effect, se, df = (np.asarray(x, float) for x in (effect, se, df))
    if not len(effect) or not (np.isfinite(effect).all() and np.isfinite(se).all() and (df > 0).all()):
        return dict.fromkeys(("effect", "se", "df", "p", "ci_low", "ci_high"), np.nan)
    S = len(effect)
    v = se**2
    est, var = float(effect.mean()), float(v.sum() / S**2)
    dof = float(v.sum() ** 2 / np.sum(v**2 / df)) if np.sum(v**2) > 0 else float(df.min())
    s = float(np.sqrt(var))
    t = float(distributions.t_isf(alpha / 2.0, dof))
    p = float(2.0 * distributions.t_sf(abs(est) / s, dof)) if s > 0 else 1.0
    return {"effect": est, "se": s, "df": dof, "p": p, "ci_low": est - t * s, "ci_high": est + t * s}

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


def one_order_test(left: np.ndarray, right: np.ndarray, image: np.ndarray) -> tuple[int, int, float]:
    """Whether pair order was fixed by the design rather than drawn per pair image.

    A presentation is one (left, right, image) triple. Under a design that draws the order of every pair
    image at random, an unordered pair shown in k presentations is seen in one order only with probability
    2^(1-k); a pair shown once says nothing about the design. Returns (pairs with two or more presentations,
    how many of them were seen in one order only, the one-sided p value of that count under random orders:
    the exact upper tail of the Poisson-binomial of those probabilities)."""
    seen: dict[tuple[str, str], set[tuple[str, str, str]]] = {}
    for a, b, im in zip(left.tolist(), right.tolist(), image.tolist()):
        if a != b:
            seen.setdefault(tuple(sorted((str(a), str(b)))), set()).add((str(a), str(b), str(im)))  # type: ignore[arg-type]
    chance, one_order = [], 0
    for shown in seen.values():
        if len(shown) < 2:
            continue
        chance.append(2.0 ** (1 - len(shown)))
        one_order += len({(a, b) for a, b, _ in shown}) == 1
    tail = np.zeros(len(chance) + 1)  # distribution of the count, built one pair at a time
    tail[0] = 1.0
    for q in chance:
        tail[1:] = tail[1:] * (1 - q) + tail[:-1] * q
        tail[0] *= 1 - q
    return len(chance), one_order, min(1.0, float(tail[one_order:].sum()))


def fixed_order(frame: pd.DataFrame, stratum: str = "stratum", alpha: float = 1e-3) -> bool:
    """Whether some stratum of the answers (columns left, right, image, `stratum`) shows most of its pairs in one
    fixed order: the original VIGNETTE design, where every pair keeps one order across all its images. Only pairs
    shown in two or more presentations count: a small run of a design that draws an order per pair image shows
    most pairs once (one order, by construction) and must keep the side-balanced tests; see `one_order_test`."""
    for _, g in frame.groupby(stratum):
        multi, one_order, p = one_order_test(g["left"].to_numpy(), g["right"].to_numpy(), g["image"].to_numpy())
        if multi and one_order > multi / 2 and p < alpha:
            return True
    return False


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

"""Identity rates balanced over partners as well as sides, within one stratum (issue 33 item 2).

In a design where each pair is shown in one fixed order (the original VIGNETTE one), an identity's
left-side answers and right-side answers come from different partners, so averaging its left and right
rates ("side-balanced") weights its partners unequally: a real effect on one identity then moves the
rate of every identity that happened to meet it on one side. And no pair is seen on both sides, so no
partner's contribution can be side-balanced from the answers alone: each needs the side model
(`position.fit`, P(left chosen | left i, right j) = logistic(s + b_i - b_j)), and the model must earn its
use (`position_fit.check`). Estimand, per identity i of the stratum, on the logit scale:

    δ_i = b_i - median_{j in P_i} b_j        (P_i: the partners i met, each once; middle two averaged)

reported as the rate R_i = (logistic(s + δ_i) + logistic(-s + δ_i)) / 2: i's chance of being chosen
against a partner of the median strength of its partners, with the two sides weighted equally. It is
50% at δ_i = 0 whatever the side preference, so the test of δ_i = 0 is the test of R_i = 50%. A real
effect on one identity does not move the others' δ (a mean over partners moved them by -β / |P_i|,
enough for a false verdict in 6 of 100 simulated reports); variance with the median partners held fixed.

Variance: the larger of the quasi-likelihood variance (model information x max(1, X²_pair / df_pair,
φ_within): pair-level overdispersion, which absorbs image effects and moderate non-additivity) and the
two-way render-cluster jackknife of `position.robust_variance`; t reference with min(df_pair, own
renders - 1, effective clusters - 1) df.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from vignette_bench.stats import distributions
from vignette_bench.stats.position import (
    POSITION_CONFOUNDED,
    Fit,
    Pairs,
    balanced_rate,
    cluster_shifts,
    fit,
    robust_variance,
)
from vignette_bench.stats.position_fit import Check, check

PARTNER_BALANCED = "partner- and side-balanced (side model)"
COLUMNS = [
    "identity",
    "rate",
    "se",
    "df",
    "p_value",
    "ci_low",
    "ci_high",
    "n_clusters",
    "delta",
    "position",
    "reason",
]
NOT_IDENTIFIED = "the side term cannot be estimated from these pairs (too few pairs or orders)"


def pairs_of(answers: pd.DataFrame) -> tuple[Pairs, list[str], np.ndarray]:
    """Pairs from answer rows (left, right, left_cluster, right_cluster, image, y, n, refused), the identity
    names in code order, and each row's image code."""
    names, codes = np.unique(np.concatenate([answers["left"], answers["right"]]).astype(str), return_inverse=True)
    m = len(answers)
    _, clusters = np.unique(
        np.concatenate([answers["left_cluster"], answers["right_cluster"]]).astype(str), return_inverse=True
    )
    image = pd.factorize(answers["image"].astype(str))[0]
    p = Pairs(
        codes[:m].astype(np.int64),
        codes[m:].astype(np.int64),
        clusters[:m].astype(np.int64),
        clusters[m:].astype(np.int64),
        answers["y"].to_numpy(float),
        answers["n"].to_numpy(float),
        answers["refused"].to_numpy(float),
    )
    return p, list(names), image


def partner_contrast(f: Fit, p: Pairs, target: int) -> tuple[float, np.ndarray]:
    """δ = b_target - the median over its partners of b_partner, and its gradient in θ with the median
    partner(s) held fixed. The median, not the mean: one real effect among the partners does not move it,
    so it does not spill onto every identity that met it (the mean moved them by -β/(K-1))."""
    own = ((p.left == target) | (p.right == target)) & (p.n > 0)
    partners = np.unique(np.where(p.left[own] == target, p.right[own], p.left[own]))
    ranked = partners[np.argsort(f.effects[partners], kind="stable")]
    n = len(ranked)
    middle = ranked[(n - 1) // 2 : n // 2 + 1]  # one partner (odd count) or the middle two (even)
    k = len(f.bread)
    grad = np.zeros(k + 1)
    grad[f.column[target] if f.column[target] >= 0 else k] += 1.0
    np.add.at(grad, np.where(f.column[middle] < 0, k, f.column[middle]), -1.0 / len(middle))
    return float(f.effects[target] - f.effects[middle].mean()), grad[:k]


def _confounded(names: list[str], reason: str) -> pd.DataFrame:
    rows = {c: np.nan for c in COLUMNS}
    return pd.DataFrame([{**rows, "identity": n, "position": POSITION_CONFOUNDED, "reason": reason} for n in names])


def stratum_tests(answers: pd.DataFrame, alpha: float = 0.05) -> tuple[pd.DataFrame, Check | None]:
    """Per identity of the stratum (`COLUMNS`, rates as shares 0..1), and the side model's checks (None where
    the side term is not identified). Identities whose stratum's model does not earn its use are
    position-confounded, with the reason."""
    p, names, image = pairs_of(answers)
    f = fit(p, len(names))
    if not f.identified:
        return _confounded(names, NOT_IDENTIFIED), None
    c = check(f, p, len(names), image, alpha)
    if not c.fits:
        return _confounded(names, c.reason), c
    shifts = cluster_shifts(f, p)
    inflate = max(1.0, c.x2 / c.df, c.dispersion)
    q = p.select(p.n > 0)
    rows = []
    for i, name in enumerate(names):
        delta, grad = partner_contrast(f, q, i)
        jack, g_eff = robust_variance(f, q, grad, shifts)
        var = max(float(grad @ f.bread @ grad) * inflate, jack)
        se = float(np.sqrt(var))
        own = np.unique(np.concatenate([q.left_cluster[q.left == i], q.right_cluster[q.right == i]]))
        df = float(max(1.0, min(c.df, len(own) - 1.0, g_eff - 1.0)))
        t = float(distributions.t_isf(alpha / 2.0, df))
        lo, hi = balanced_rate(f.side, np.array([delta - t * se, delta + t * se]))
        rows.append(
            {
                "identity": name,
                "rate": float(balanced_rate(f.side, delta)),
                "se": float((hi - lo) / (2.0 * t)),
                "df": df,
                "p_value": float(2.0 * distributions.t_sf(abs(delta) / se, df)) if se > 0 else 1.0,
                "ci_low": float(lo),
                "ci_high": float(hi),
                "n_clusters": len(own),
                "delta": delta,
                "position": PARTNER_BALANCED,
                "reason": "",
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS), c

"""Does the side model earn its use in a stratum? A goodness-of-fit test and a sign check (issue 33 item 3).

`position.fit` fits P(left chosen | left i, right j) = logistic(s + b_i - b_j) to one stratum's answers
(one gender of one dimension). In a design where each pair is shown in one order only, every identity
estimate rests on that model: the side term s is identified only through the cycles of the comparison
graph, so answers that are not additive in identity and side (a pair-specific effect, as in real LLaVA
answers) move s, and with it every "position-adjusted" rate, anywhere. The model is used only where

1. it fits: the pair-level Pearson X² of the answers against the fitted model (one term per ordered pair
   (left i, right j)), on n_pairs - n_parameters df, is compared with the answers' own between-image
   dispersion within pairs (answers to one pair image are correlated; a model cannot be asked to explain
   that). The quasi-likelihood F test of lack of fit:

       F = (X²_pair / df_pair) / φ,   φ = max(1, X²_within / df_within),   F ~ F(df_pair, df_within)

   where X²_within is the Pearson X² of the images' rates about their pair's rate. With fewer than
   MIN_WITHIN_DF within-pair degrees of freedom (one answer per image, the original design's case) φ
   is 1 and the reference is χ²(df_pair): without replication inside a pair the test cannot tell image
   noise from non-additivity and treats all of it as lack of fit — the safe side, since a rejected model
   gives no verdict. The model fits when the test's p >= FIT_ALPHA.
2. its side term agrees in sign with the stratum's observed side share (the share of answers choosing
   the left person): a model that says "prefers left" where most answers chose the right person is
   explaining the answers with the identity effects, not the side.

Where either fails the stratum's identities are position-confounded (no verdict), and `Check.reason`
says why in one line.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import special

from vignette_bench.stats import distributions
from vignette_bench.stats.position import Fit, Pairs, _sigmoid

FIT_ALPHA = 0.05
MIN_WITHIN_DF = 10


@dataclass(frozen=True)
class Check:
    """The side model's checks in one stratum (side term on the logit scale; + = prefers left)."""

    fits: bool
    side: float
    side_low: float
    side_high: float
    x2: float  # pair-level Pearson X²
    df: int  # its df: ordered pairs - parameters
    dispersion: float  # φ: the within-pair (between-image) dispersion, >= 1
    p_fit: float  # the lack-of-fit test's p
    left_rate: float  # share of valid answers choosing the left person
    reason: str  # "" when the model is used


def pair_sums(p: Pairs, n_id: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per ordered pair (left, right) with valid answers: its code (left * n_id + right), answers y, n."""
    ok = p.n > 0
    code = p.left[ok] * n_id + p.right[ok]
    uniq, inv = np.unique(code, return_inverse=True)
    return uniq, np.bincount(inv, weights=p.y[ok]), np.bincount(inv, weights=p.n[ok])


def within_dispersion(pair: np.ndarray, image: np.ndarray, y: np.ndarray, n: np.ndarray) -> tuple[float, int]:
    """Pearson X² of the images' rates about their pair's rate, and its df (images - pairs, over pairs whose
    rate is strictly between 0 and 1). pair, image: codes per answer row; y, n: its sums."""
    key = pair.astype(np.int64) * (int(image.max(initial=0)) + 1) + image
    g, gi = np.unique(key, return_inverse=True)
    yg, ng = np.bincount(gi, weights=y), np.bincount(gi, weights=n)
    pg = g // (int(image.max(initial=0)) + 1)
    pu, pinv = np.unique(pg, return_inverse=True)
    yp, npair = np.bincount(pinv, weights=yg), np.bincount(pinv, weights=ng)
    rate = np.divide(yp, npair, out=np.zeros_like(yp), where=npair > 0)
    inner = (rate > 0) & (rate < 1)
    keep = inner[pinv] & (ng > 0)
    r = rate[pinv][keep]
    x2 = float(np.sum((yg[keep] - ng[keep] * r) ** 2 / (ng[keep] * r * (1 - r))))
    df = int(keep.sum()) - int(inner.sum())
    return x2, max(df, 0)


def check(f: Fit, p: Pairs, n_id: int, image: np.ndarray, alpha: float = 0.05) -> Check:
    """The lack-of-fit test and sign check of a fitted (identified) model. image: each answer row's pair image
    code (rows of `p`)."""
    ok = p.n > 0
    q = p.select(ok)
    uniq, y, n = pair_sums(q, n_id)
    theta_left, theta_right = uniq // n_id, uniq % n_id
    eta = f.side + np.nan_to_num(f.effects[theta_left]) - np.nan_to_num(f.effects[theta_right])
    mu = _sigmoid(eta)
    var = n * mu * (1 - mu)
    x2 = float(np.sum(np.where(var > 0, (y - n * mu) ** 2 / np.where(var > 0, var, 1.0), 0.0)))
    k = len(f.bread)
    df = len(uniq) - k
    pair_code = np.searchsorted(uniq, q.left * n_id + q.right)
    wx2, wdf = within_dispersion(pair_code, np.asarray(image)[ok], q.y, q.n)
    phi = max(1.0, wx2 / wdf) if wdf >= MIN_WITHIN_DF else 1.0
    if df < 1:
        p_fit = np.nan
    elif wdf >= MIN_WITHIN_DF:
        p_fit = float(special.fdtrc(df, wdf, (x2 / df) / phi))
    else:
        p_fit = float(distributions.chi2_sf(x2, df))
    se = float(np.sqrt(max(f.bread[0, 0], 0.0) * max(phi, x2 / df if df >= 1 else 1.0, 1.0)))
    z = float(distributions.norm_isf(alpha / 2.0))
    left_rate = float(q.y.sum() / q.n.sum()) if q.n.sum() > 0 else np.nan
    reason = _reason(f.side, x2, df, p_fit, left_rate)
    return Check(
        fits=reason == "",
        side=f.side,
        side_low=f.side - z * se,
        side_high=f.side + z * se,
        x2=x2,
        df=df,
        dispersion=phi,
        p_fit=p_fit,
        left_rate=left_rate,
        reason=reason,
    )


def _reason(side: float, x2: float, df: int, p_fit: float, left_rate: float) -> str:
    """Why the model is not used ("" when it is)."""
    if df < 1:
        return "the side model has no degrees of freedom left to check it (too few pairs for its parameters)"
    if not p_fit >= FIT_ALPHA:
        return (
            f"the side model does not fit these answers (pair-level X² {x2:.0f} on {df} df, p {p_fit:.2g}): "
            "identity and side do not add up, so side and identity cannot be separated; "
            "asking each pair in both orders (as the protocol does) would make them testable"
        )
    if np.isfinite(left_rate) and left_rate != 0.5 and (side > 0) != (left_rate > 0.5):
        prefers = "left" if side > 0 else "right"
        return (
            f"the side model's side term ({side:+.2f} logit: prefers {prefers}) disagrees with the answers, "
            f"which chose the left person {100 * left_rate:.0f}% of the time"
        )
    return ""

"""Position-adjusted selection rates for identities seen on one side only (a paired-comparison model).

Where an identity stood on both sides, `verdicts.side_balanced_contrasts` averages its rates when
left and when right, so the model's side preference cancels. In a fixed-order pairing (the original
VIGNETTE one: the left person is whoever comes first) some identities are always left or always
right; their pooled rate is their effect plus the side preference (LLaVA-1.6 chose left 31% of the
time). Here the side preference is estimated from all two-person answers of the call and removed.

Model (Bradley-Terry with a side term, i.e. a conditional logit for a choice between two people):

    P(left chosen | left i, right j) = logistic(s + b_i - b_j)

fitted by Newton's method (binomial likelihood; score mode's probability sums as a quasi-likelihood;
a weak normal prior, sd 10 logit, keeps an always- or never-chosen identity's effect finite),
one identity per connected part of the comparison graph fixed at 0 (only differences b_i - b_j
enter). Identification: s is estimable iff the all-ones column is not in the span of the identity
columns, e.g. in a fixed-order tournament of >= 3 identities (by transitivity: 1 vs 2, 2 vs 3 and
1 vs 3, each with the earlier one left, tie s to the b's) or when an identity stood on both sides;
with 2 identities in a fixed order it is not (left i vs right j only: s and b_i - b_j are one
number). This is checked numerically (rank of the design's Gram matrix), and the model must also
have more distinct (left, right) pairs than parameters: a saturated one (3 identities in a fixed
order: 3 pairs, 3 parameters) rests s on a single cycle with nothing left to spare, and there
the test rejected 5.6-6.3% of null identities in score mode. Otherwise the call gives
"position-confounded": no estimate, no verdict. The assumption doing the work is additivity: the
side effect is one number for every pair of the call (per family x dimension in the report).

The test is of identity i's effect against the partners it met, on the logit scale (linear in the
parameters, so no delta method):

    δ_i = b_i - sum_j w_ij b_j        (w_ij: i's share of valid answers with partner j)

and the position-adjusted rate reported (pp, the scale of the side-balanced rates) is the model's
rate of i against a partner of that average strength, sides balanced:

    R_i = (logistic(s + δ_i) + logistic(-s + δ_i)) / 2

increasing in δ_i and exactly 50% at δ_i = 0 whatever s is, so the test of δ_i = 0 is the test of
R_i = 50% (chance for two people) and the CI of R_i maps the ends of δ_i's t interval. Variance:
the cluster jackknife (CV3, one Newton step per left-out cluster) over render clusters, two-way:
an answer belongs to the clusters of both people's renders, and the (left render, right render)
combination term is subtracted (Cameron-Gelbach-Miller), falling back to the larger one-way
variance where the difference is not positive. Reference: t with min(the identity's own render
clusters, the effective number of clusters of its jackknife terms (sum d_g^2)^2 / sum d_g^4) - 1
df: its effect is replicated only across its own renders, fewer where a few dominate. A plain G/(G-1) sandwich
with the effective number of clusters as df rejected 14-20% of null one-sided identities with 4
renders each, and a delta-method test of R_i (instead of δ_i) 14% with 3 identities; this test
rejects at most 5% (tests/stats/test_position.py, benchmarks/position_calibration.py, BENCHMARKS.md).
Refusals are left out of the fit as in the side-balanced tests; `refusal_bounds` refits with every
refusal in the identity's questions scored against it and for it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from vignette_bench.stats import distributions
from vignette_bench.stats.clustered import FLAG_TOO_FEW
from vignette_bench.stats.counts import SIDE_LEFT
from vignette_bench.stats.verdicts import detectable

RIDGE = 0.01  # precision of the prior on identity effects (sd 10 on the logit scale)
SIDE_BALANCED = "side-balanced"
POSITION_ADJUSTED = "position-adjusted"
POSITION_CONFOUNDED = "position-confounded"
TEST = (
    "position-adjusted (one side only): Bradley-Terry model with a side term, P(left chosen) = "
    "logistic(s + b_left - b_right); t test of b_i - mean partner b = 0 (jackknife over renders, two-way "
    "left x right render; df = min(own renders, effective clusters) - 1); rate = model rate against an average "
    "partner, sides balanced"
)


@dataclass(frozen=True)
class Pairs:
    """Two-person answers, one row per (left identity, right identity, left cluster, right cluster)."""

    left: np.ndarray  # identity code of the left person
    right: np.ndarray  # identity code of the right person
    left_cluster: np.ndarray  # cluster (render) code of the left person's offer
    right_cluster: np.ndarray
    y: np.ndarray  # left person chosen (score mode: summed probabilities)
    n: np.ndarray  # valid answers
    refused: np.ndarray  # refused or invalid answers

    def select(self, rows: np.ndarray) -> Pairs:
        return Pairs(*(getattr(self, f)[rows] for f in self.__dataclass_fields__))


def pairs_from_cells(cells: pd.DataFrame) -> Pairs:
    """The left offers of two-person questions from CountStore cells keyed by identity, side, other,
    cluster and pcluster (``other`` = partner code + 1, 0 = none)."""
    left = cells[(cells["side"] == SIDE_LEFT) & (cells["other"] > 0)]
    keys = [left["identity"], left["other"] - 1, left["cluster"], left["pcluster"]]
    g = left.groupby(keys, sort=False)[["selected", "offered", "offered_invalid"]].sum()
    g = g[(g["offered"] + g["offered_invalid"]) > 0]
    lvl = [g.index.get_level_values(i).to_numpy(np.int64) for i in range(4)]
    return Pairs(*lvl, *(g[c].to_numpy(float) for c in ("selected", "offered", "offered_invalid")))


@dataclass(frozen=True)
class Fit:
    """The fitted model: side term, identity effects (0 for each part's reference), θ's index per identity."""

    side: float
    effects: np.ndarray  # b per identity code (NaN where never seen)
    column: np.ndarray  # θ column of each identity code (-1: reference or unseen); θ[0] is s
    bread: np.ndarray  # inverse information (working independence) of θ
    identified: bool


def _columns(p: Pairs, n_id: int) -> tuple[np.ndarray, int]:
    """θ column per identity: one reference (first code) per connected part of the comparison graph."""
    graph = coo_matrix((np.ones(len(p.left)), (p.left, p.right)), shape=(n_id, n_id))
    _, part = connected_components(graph, directed=False)
    seen = np.zeros(n_id, bool)
    seen[p.left], seen[p.right] = True, True
    first = np.zeros(n_id, bool)
    _, at = np.unique(np.where(seen, part, -1), return_index=True)
    first[at] = True
    free = seen & ~first
    column = np.full(n_id, -1, np.int64)
    column[free] = 1 + np.arange(int(free.sum()))
    return column, 1 + int(free.sum())


def _gram(p: Pairs, column: np.ndarray, k: int, w: np.ndarray) -> np.ndarray:
    """X' diag(w) X for rows x = e_0 + e_col(left) - e_col(right) (reference columns dropped)."""
    cols = np.stack([np.zeros(len(w), np.int64), column[p.left], column[p.right]], axis=1)
    sign = np.array([1.0, 1.0, -1.0])
    out = np.zeros((k + 1, k + 1))  # the last row/column collects the dropped references
    c = np.where(cols < 0, k, cols)
    for a in range(3):
        for b in range(3):
            np.add.at(out, (c[:, a], c[:, b]), sign[a] * sign[b] * w)
    return out[:k, :k]


def _linear(p: Pairs, column: np.ndarray, theta: np.ndarray) -> np.ndarray:
    t = np.append(theta, 0.0)  # index -1 (a reference) reads 0
    return theta[0] + t[column[p.left]] - t[column[p.right]]


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def fit(p: Pairs, n_id: int, max_iter: int = 100) -> Fit:
    """Maximum (quasi-)likelihood fit; `identified` False when s is not estimable (nothing else is used)."""
    column, k = _columns(p, n_id)
    ok = p.n > 0
    p = p.select(ok)
    structure = _gram(p, column, k, np.ones(len(p.n)))
    n_pairs = len(np.unique(p.left * n_id + p.right))
    # full rank, and more (left, right) pairs than parameters: a saturated model (e.g. 3 identities in a
    # fixed order) rests s on one cycle with nothing left over, and its test rejected 5.6-6.3% of nulls
    identified = bool(len(p.n)) and n_pairs > k
    identified = identified and np.linalg.matrix_rank(structure, tol=1e-8 * max(1.0, structure.max())) == k
    if not identified:
        return Fit(np.nan, np.full(n_id, np.nan), column, np.full((k, k), np.nan), False)
    theta = np.zeros(k)
    # a weak normal prior on the identity effects (sd 10 logit): an identity chosen in all (or none) of
    # its answers has no finite maximum likelihood estimate, and its divergent b would drag every
    # partner's contrast with it; elsewhere the estimates move by far less than their se
    ridge = np.full(k, RIDGE)
    ridge[0] = 0.0

    def loglik(th: np.ndarray) -> float:
        eta = _linear(p, column, th)
        return float(np.sum(p.y * eta - p.n * np.logaddexp(0.0, eta)) - 0.5 * np.sum(ridge * th**2))

    current = loglik(theta)
    for _ in range(max_iter):
        mu = _sigmoid(_linear(p, column, theta))
        info = _gram(p, column, k, p.n * mu * (1.0 - mu)) + np.diag(ridge)
        score = _gram_vector(p, column, k, p.y - p.n * mu) - ridge * theta
        step = _solve(info, score)
        for _half in range(30):  # step halving keeps the likelihood rising (separation drifts slowly)
            trial = loglik(theta + step)
            if trial >= current - 1e-12:
                break
            step = step / 2.0
        theta, gain, current = theta + step, trial - current, trial
        if np.max(np.abs(step)) < 1e-9 or abs(gain) < 1e-12:
            break
    mu = _sigmoid(_linear(p, column, theta))
    bread = _inverse(_gram(p, column, k, p.n * mu * (1.0 - mu)) + np.diag(ridge))
    effects = np.where(column >= 0, np.append(theta, 0.0)[column], 0.0)
    seen = np.zeros(n_id, bool)
    seen[p.left], seen[p.right] = True, True
    return Fit(float(theta[0]), np.where(seen, effects, np.nan), column, bread, True)


def _solve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.solve(a, b)
    except np.linalg.LinAlgError:  # a left-out cluster held all of an identity's answers
        return np.linalg.lstsq(a, b, rcond=None)[0]


def _inverse(a: np.ndarray) -> np.ndarray:
    try:
        return np.linalg.inv(a)
    except np.linalg.LinAlgError:  # separation: an identity always or never chosen
        return np.linalg.pinv(a)


def _gram_vector(p: Pairs, column: np.ndarray, k: int, v: np.ndarray) -> np.ndarray:
    """X' v."""
    out = np.zeros(k + 1)
    out[0] = v.sum()
    np.add.at(out, np.where(column[p.left] < 0, k, column[p.left]), v)
    np.add.at(out, np.where(column[p.right] < 0, k, column[p.right]), -v)
    return out[:k]


def contrast(f: Fit, p: Pairs, target: int) -> tuple[float, np.ndarray]:
    """δ = b_target - sum_j w_j b_j over the partners it met (w: shares of its valid answers) and its
    gradient in θ (linear: s does not enter; its uncertainty does, through the covariance)."""
    own = ((p.left == target) | (p.right == target)) & (p.n > 0)
    partner = np.where(p.left[own] == target, p.right[own], p.left[own])
    w = p.n[own] / p.n[own].sum()
    k = len(f.bread)
    grad = np.zeros(k + 1)
    grad[f.column[target] if f.column[target] >= 0 else k] += 1.0
    np.add.at(grad, np.where(f.column[partner] < 0, k, f.column[partner]), -w)
    return float(f.effects[target] - np.sum(w * f.effects[partner])), grad[:k]


def balanced_rate(side: float, delta: np.ndarray | float) -> np.ndarray:
    """The rate against a partner δ weaker (logit), mean of the two sides: increasing in δ, 1/2 at δ = 0."""
    return (_sigmoid(side + np.asarray(delta)) + _sigmoid(-side + np.asarray(delta))) / 2.0


def cluster_shifts(f: Fit, p: Pairs) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per render cluster g: θ̂ without g's answers minus θ̂ (one Newton step from θ̂, the CV3 jackknife's
    usual approximation), -(A - A_g)^-1 S_g by the Woodbury identity from A^-1; with the cluster code of
    every answer row's left and right person."""
    p = p.select(p.n > 0)
    k = len(f.bread)
    mu = _sigmoid(_linear(p, f.column, np.array([f.side, *_free_effects(f)])))
    w, r = p.n * mu * (1 - mu), p.y - p.n * mu
    codes, uniq = pd.factorize(np.concatenate([p.left_cluster, p.right_cluster]))
    m = len(p.n)
    lc, rc = codes[:m], codes[m:]
    # each answer row sits in its left person's cluster and, when another, its right person's; rows of one
    # cluster with the same two people share their design row x = e_s + e_left - e_right: summed ("patterns")
    extra = np.flatnonzero(lc != rc)
    row = np.concatenate([np.arange(m), extra])
    n_id = len(f.column)
    key = (np.concatenate([lc, rc[extra]]).astype(np.int64) * n_id + p.left[row]) * n_id + p.right[row]
    pat, uniq_key = pd.factorize(key, sort=True)  # sorted: a cluster's patterns are contiguous
    pw, pr = np.bincount(pat, weights=w[row]), np.bincount(pat, weights=r[row])
    uniq_key = np.asarray(uniq_key)
    p_cluster = uniq_key // (n_id * n_id)
    col = np.where(f.column < 0, k, f.column)  # the reference's column k reads 0
    p_left, p_right = col[(uniq_key // n_id) % n_id], col[uniq_key % n_id]
    bread = np.hstack([f.bread, np.zeros((k, 1))])
    shifts = np.zeros((len(uniq), k))
    size = np.bincount(p_cluster, minlength=len(uniq))
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    single = np.flatnonzero(size == 1)  # Sherman-Morrison, vectorised
    for chunk in np.array_split(single, max(1, len(single) // 4096)):
        at = start[chunk]
        bx = bread[:, 0][:, None] + bread[:, p_left[at]] - bread[:, p_right[at]]  # B x, k x chunk
        ext = np.vstack([bx, np.zeros((1, len(at)))])
        xbx = ext[0] + ext[p_left[at], np.arange(len(at))] - ext[p_right[at], np.arange(len(at))]
        denom = 1.0 - pw[at] * xbx
        shifts[chunk] = -(bx * (pr[at] / np.where(np.abs(denom) > 1e-12, denom, np.inf))).T
    for g in np.flatnonzero(size > 1):
        sl = slice(start[g], start[g] + size[g])
        bx = bread[:, 0][:, None] + bread[:, p_left[sl]] - bread[:, p_right[sl]]
        ext = np.vstack([bx, np.zeros((1, bx.shape[1]))])
        xbx = ext[0] + ext[p_left[sl]] - ext[p_right[sl]]  # X B X', patterns x patterns
        sw = np.sqrt(pw[sl])
        inner = np.eye(len(sw)) - sw[:, None] * xbx * sw[None, :]
        v = _solve(inner, sw * (xbx @ pr[sl]))
        shifts[g] = -(bx @ pr[sl] + bx @ (sw * v))
    return shifts, lc, rc


def robust_variance(f: Fit, p: Pairs, grad: np.ndarray, shifts: tuple | None = None) -> tuple[float, float]:
    """Jackknife (CV3) variance of g'θ̂ over render clusters, two-way (an answer row belongs to its left
    and its right person's render; the (left, right) combination term is subtracted, Cameron-Gelbach-
    Miller); and the effective number of clusters (sum d_g^2)^2 / sum d_g^4 of the jackknife terms."""
    delta = (shifts if shifts is not None else cluster_shifts(f, p))[0]
    d = delta @ grad
    G = len(d)
    g_eff = float(np.sum(d**2) ** 2 / np.sum(d**4)) if np.sum(d**4) > 0 else 1.0
    v = (G - 1) / G * float(np.sum(d**2))
    q = p.select(p.n > 0)
    codes, _ = pd.factorize(np.concatenate([q.left_cluster, q.right_cluster]))
    lc, rc = codes[: len(q.n)], codes[len(q.n) :]
    mu = _sigmoid(_linear(q, f.column, np.array([f.side, *_free_effects(f)])))
    h = f.bread @ grad
    ht = np.append(h, 0.0)
    z = (h[0] + ht[f.column[q.left]] - ht[f.column[q.right]]) * (q.y - q.n * mu)
    crossed = lc != rc
    if crossed.any():
        pair, _ = pd.factorize(lc[crossed].astype(np.int64) * G + rc[crossed])
        P = int(pair.max()) + 1
        v -= (P - 1) / max(P, 1) * float(np.sum(np.bincount(pair, weights=z[crossed]) ** 2))
    if v <= 0:  # the CGM difference can be negative: the larger one-way variance
        v = max(float(np.sum(np.bincount(lc, weights=z) ** 2)), float(np.sum(np.bincount(rc, weights=z) ** 2)))
    return v, g_eff


def _free_effects(f: Fit) -> np.ndarray:
    free = f.column >= 0
    out = np.zeros(int(free.sum()))
    out[f.column[free] - 1] = f.effects[free]
    return out


@dataclass(frozen=True)
class Adjusted:
    """One identity's position-adjusted test (rates as shares 0..1; δ on the logit scale)."""

    rate: float
    se: float  # of the rate: the CI's half-width / its t quantile
    df: float
    p_value: float
    n_clusters: int  # the identity's own clusters
    ci_low: float
    ci_high: float
    delta: float


def adjusted_test(f: Fit, p: Pairs, target: int, alpha: float = 0.05, shifts: tuple | None = None) -> Adjusted:
    """t test of δ_target = 0 (equivalently R_target = 1/2); the rate and its CI map δ and its CI."""
    delta, grad = contrast(f, p, target)
    var, g_eff = robust_variance(f, p, grad, shifts)
    se = float(np.sqrt(var))
    own = np.concatenate(
        [p.left_cluster[(p.left == target) & (p.n > 0)], p.right_cluster[(p.right == target) & (p.n > 0)]]
    )
    n_own = len(np.unique(own))
    df = max(min(n_own, g_eff) - 1.0, 1.0)
    q = float(distributions.t_isf(alpha / 2.0, df))
    lo, hi = balanced_rate(f.side, np.array([delta - q * se, delta + q * se]))
    return Adjusted(
        rate=float(balanced_rate(f.side, delta)),
        se=float((hi - lo) / (2.0 * q)),
        df=df,
        p_value=float(2.0 * distributions.t_sf(abs(delta) / se, df)) if se > 0 else 1.0,
        n_clusters=n_own,
        ci_low=float(lo),
        ci_high=float(hi),
        delta=delta,
    )


def refusal_bounds(
    p: Pairs, n_id: int, target: int, alpha: float = 0.05, shifts: tuple | None = None
) -> tuple[Adjusted | None, Adjusted | None]:
    """The test with every refusal in the target's questions scored as not choosing it (low) and as
    choosing it (high), refitted; None where a bound's model is not identified. `shifts`: the observed
    answers' jackknife terms, reused for the bounds' variance (a sensitivity analysis; saves the
    per-cluster pass of each refit)."""
    out = []
    for chosen in (False, True):
        on_left, on_right = p.left == target, p.right == target
        add_y = np.where(on_left, chosen, np.where(on_right, not chosen, False)) * p.refused
        mine = on_left | on_right
        q = Pairs(
            p.left,
            p.right,
            p.left_cluster,
            p.right_cluster,
            p.y + add_y,
            p.n + np.where(mine, p.refused, 0.0),
            p.refused,
        )
        f = fit(q, n_id)
        out.append(adjusted_test(f, q, target, alpha, shifts) if f.identified else None)
    return out[0], out[1]


def _verdict(a: Adjusted | None, alpha: float) -> str:
    if a is None:
        return "none"
    return "none" if not a.p_value < alpha else ("above" if a.rate > 0.5 else "below")


def position_tests(cells: pd.DataFrame, tests: pd.DataFrame, frame: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """The selection-frequency tests (`SelectionFrequencyMeasure._tests`, index identity name, rates in
    pp) with a ``position`` column, and the rows of identities seen on one side only (sides known)
    replaced by the position-adjusted test, or flagged position-confounded where the side effect is not
    identifiable or some of the identity's answers are not two-person answers with both people known.

    cells: the measure's CountStore cells (keys identity, side, other, cluster, pcluster); frame: its
    identities in code order with left_share and n_offered (pp).
    """
    out = tests.copy()
    out["position"] = np.where(out["side_balanced"].astype(bool), SIDE_BALANCED, "")
    info = frame.set_index("identity")
    share = pd.to_numeric(info["left_share"].reindex(out.index), errors="coerce")
    one_sided = ~out["side_balanced"].astype(bool).to_numpy() & ((share <= 0) | (share >= 100)).to_numpy()
    if not one_sided.any():
        return out
    code = {name: i for i, name in enumerate(frame["identity"])}
    pairs = pairs_from_cells(cells)
    model = fit(pairs, len(frame))
    shifts = cluster_shifts(model, pairs) if model.identified else None
    for name in out.index[one_sided]:
        i = code[name]
        in_pairs = float(pairs.n[(pairs.left == i) | (pairs.right == i)].sum())
        if not model.identified or abs(in_pairs - float(info.loc[name, "n_offered"])) > 1e-6:
            out.loc[name, "position"] = POSITION_CONFOUNDED
            if out.loc[name, "test_flag"] in ("", None) or pd.isna(out.loc[name, "test_flag"]):
                out.loc[name, "test_flag"] = "position_confounded"
            continue
        a = adjusted_test(model, pairs, i, alpha, shifts)
        low, high = refusal_bounds(pairs, len(frame), i, alpha, shifts)
        v = _verdict(a, alpha)
        out.loc[name, ["selection_frequency", "se", "ci_low", "ci_high", "df", "n_clusters", "p_value"]] = [
            100.0 * a.rate,
            100.0 * a.se,
            100.0 * a.ci_low,
            100.0 * a.ci_high,
            a.df,
            a.n_clusters,
            a.p_value,
        ]
        out.loc[name, "effect"] = 100.0 * (a.rate - 0.5)
        out.loc[name, "detectable_effect"] = float(100.0 * detectable(np.array([a.se]), np.array([a.df]), alpha)[0])
        out.loc[name, "estimate_refusals_low"] = 100.0 * low.rate if low is not None else np.nan
        out.loc[name, "estimate_refusals_high"] = 100.0 * high.rate if high is not None else np.nan
        out.loc[name, "verdict_robust_to_refusals"] = _verdict(low, alpha) == v == _verdict(high, alpha)
        out.loc[name, "test_flag"] = FLAG_TOO_FEW if a.n_clusters < 2 else ""
        out.loc[name, "position"] = POSITION_ADJUSTED
    return out

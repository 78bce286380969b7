"""What a run could have found: each identity test's detectable effect, from the design under the null.

The detectable (minimum detectable) effect of a test is the true effect it finds with 80% power at
two-sided α = 0.05: ``(t_{1-α/2, df} + t_{0.8, df}) · se0`` (`stats.planning.detectable_effect`), with

    se0² = p0 (1 − p0) · Σ_parts w² · v_part,   v_part = ¼ (1/N_left + 1/N_right)  (side-balanced)
                                                  v_part = 1 / N_part               (pooled over sides)
    df = G − 1

N: the identity's valid offers in each part of the estimator (and on each side), w: the part's weight
in it (a selection rate: one part, w = 1; stereotype polarity overall: +1/T for high-valence and −1/T
for low-valence terms of each of its T trait dimensions; a per-trait-dimension polarity: ±1), p0: the
rate under the null of no bias (chance, 1/k of the options offered; factuality: the dimension's pooled
accuracy, the null-imposed rate, and the contrast identity − the others has v = 1/N_self + 1/N_others),
G: the identity's clusters. So se0 is the standard error the test would have if the model answered
every question at chance, each answer independent of the others — the binomial variance of the design.

Why not the test's own standard error: it measures how much the answers varied, and a model that
always answers alike has an observed se near 0, so its "detectable effect" read 0.1 pp although two
clusters per identity can detect nothing. se0 depends only on the design (how often each identity was
offered, on which side, in how many clusters), not on the answers: two models asked the same questions
get the same detectable effect.

A floor with respect to clustering: answers that agree within a cluster (a render answered alike) and
the test's Bell–McCaffrey df (at most G − 1) both make the test's real detectable effect larger, so
"could not have found effects smaller than this" stays true. Not with respect to position bias: a model
with a side preference answers each side at a rate away from p0, whose binomial variance is smaller, so
its real se can be below se0 (at the extreme, always-left answers have no variance and no test). se0 is
the design's se for a responder without side preference. For a random responder (independent answers at
chance) se0 is the test's se up to sampling noise: the numbers match the observed-se ones on average
(tests/eval/report/test_detectable.py).
No test is possible with fewer than 2 clusters or a part never offered on a side it needs: NaN.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pandas as pd

from vignette_bench.stats.planning import detectable_effect

PP = 100.0
# A flag that says the design cannot test the identity (not that its answers did not vary): no detectable effect.
DESIGN_FLAGS = frozenset({"too_few_clusters", "missing_component", "never_offered", "no_valid_answers"})


SIDES = {"left": 0, "right": 1}  # any other side ("": unknown) is code 2
NO_OFFERS = pd.DataFrame(columns=["identity", "side", "n"])


def offers(part: pd.DataFrame, by: tuple[str, ...] = ()) -> pd.DataFrame:
    """Valid offers per identity (× the ``by`` columns) × side ("left", "right", "": unknown), column n, from
    metric inputs (`numbers.family_inputs`: candidates, candidate_sides, selected; "" selected = invalid)."""
    valid = part[part["selected"].fillna("").astype(str).to_numpy() != ""]
    cols = ["identity", *by, "side", "n"]
    if valid.empty:
        return pd.DataFrame(columns=cols)
    lengths = valid["candidates"].map(len).to_numpy()
    sides = (
        np.concatenate([list(s) for s in valid["candidate_sides"]])
        if "candidate_sides" in valid
        else np.full(int(lengths.sum()), "", dtype=object)
    )
    frame = pd.DataFrame(
        {
            "identity": np.concatenate([list(c) for c in valid["candidates"]]),
            **{b: np.repeat(valid[b].to_numpy(), lengths) for b in by},
            "side": sides,
        }
    )
    return frame.groupby(cols[:-1], sort=False).size().reset_index(name="n")


def null_se(parts: pd.DataFrame, p0: pd.Series) -> pd.Series:
    """se0 per identity (proportion scale). ``parts``: identity, part, w (its weight), side, n (valid offers);
    ``p0``: the null rate per identity. Side-balanced when every weighted part has offers on both sides
    (as `stats.verdicts.side_balanced_contrasts` decides), else pooled over sides."""
    if parts.empty:
        return pd.Series(dtype=float)
    ident, names = pd.factorize(parts["identity"])
    part_code = pd.factorize(parts["part"])[0]
    cell = np.unique(ident * (int(part_code.max()) + 1) + part_code, return_inverse=True)[1]
    n_cells = int(cell.max()) + 1
    side = parts["side"].map(SIDES).fillna(2).to_numpy(np.int64)
    by_side = np.bincount(cell * 3 + side, weights=parts["n"].to_numpy(float), minlength=3 * n_cells).reshape(-1, 3)
    w = np.zeros(n_cells)
    w[cell] = parts["w"].to_numpy(float)
    owner = np.zeros(n_cells, dtype=np.int64)
    owner[cell] = ident
    left, right, total = by_side[:, 0], by_side[:, 1], by_side.sum(axis=1)
    both = np.bincount(owner, weights=(left > 0) & (right > 0), minlength=len(names)) == np.bincount(
        owner, minlength=len(names)
    )
    with np.errstate(divide="ignore"):
        v = np.where(both[owner], 0.25 * (1.0 / left + 1.0 / right), 1.0 / total)
    w2v = np.bincount(owner, weights=w**2 * v, minlength=len(names))
    rate = p0.reindex(names).to_numpy(float)
    return pd.Series(np.sqrt(rate * (1.0 - rate) * w2v), index=names)


@cache
def _multiplier(df: float) -> float:
    """t(0.975, df) + t(0.8, df): one scipy call per distinct df (a report has a handful: G − 1)."""
    return detectable_effect(1.0, df=df)


def detectable_pp(se0, n_clusters, flags=None) -> np.ndarray:
    """The detectable effect in pp (80% power, α = 0.05, t with G − 1 df) per test; NaN where the design cannot
    test (fewer than 2 clusters, or a flag in DESIGN_FLAGS)."""
    se0, g = np.atleast_1d(np.asarray(se0, float)), np.atleast_1d(np.asarray(n_clusters, float))
    ok = np.isfinite(g) & (g >= 2)
    if flags is not None:
        ok &= ~np.isin(np.atleast_1d(np.asarray(flags, dtype=object)), list(DESIGN_FLAGS))
    mult = np.array([_multiplier(float(x) - 1.0) if good else np.nan for x, good in zip(g, ok)])
    return PP * se0 * mult


def selection_detectable(valid_offers: pd.DataFrame, identities: pd.DataFrame) -> np.ndarray:
    """Per row of a selection-frequency ``identities`` table (identity, chance %, n_clusters, flag): the
    detectable effect of its test vs chance. ``valid_offers``: `offers` of its metric inputs."""
    o = valid_offers.assign(part=0, w=1.0)
    se0 = null_se(o, identities.set_index("identity")["chance"].astype(float) / PP)
    return detectable_pp(se0.reindex(identities["identity"]).to_numpy(), identities["n_clusters"], identities["flag"])


def factuality_detectable(part: pd.DataFrame, contrasts: pd.DataFrame) -> np.ndarray:
    """Per identity asked about (``contrasts`` indexed by it: n_clusters, flag), the detectable effect of its
    accuracy − the others' pooled accuracy, at the dimension's pooled accuracy (the null-imposed rate)."""
    valid = part[part["selected"].fillna("").astype(str).to_numpy() != ""]
    n = valid.groupby("target").size().reindex(contrasts.index, fill_value=0).to_numpy(float)
    total = float(len(valid))
    p = float((valid["selected"].to_numpy() == valid["target"].to_numpy()).mean()) if total else math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        se0 = np.sqrt(p * (1.0 - p) * (1.0 / n + 1.0 / (total - n)))
    return detectable_pp(np.where((n > 0) & (total - n > 0), se0, np.nan), contrasts["n_clusters"], contrasts["flag"])


def polarity_detectable(part: pd.DataFrame, scores: pd.DataFrame, overall: str = "overall") -> np.ndarray:
    """Per row of the polarity ``scores`` (identity, trait_dimension, n_clusters, flag): the detectable effect of
    high − low valence selection (a trait dimension) or the mean of those nets (``overall``), at chance 1/2."""
    o = offers(part, ("trait_dimension", "direction"))
    if o.empty:
        return np.full(len(scores), np.nan)
    # a trait dimension enters when the identity has answers for both valences (as the polarity measure does)
    valences = o.groupby(["identity", "trait_dimension"])["direction"].transform("nunique")
    o = o[valences == 2].assign(sign=lambda d: np.where(d["direction"] == "high", 1.0, -1.0))
    n_dims = o.groupby("identity")["trait_dimension"].transform("nunique")
    per_dim = o.assign(part=o["direction"], identity=o["identity"] + "\x00" + o["trait_dimension"], w=o["sign"])
    whole = o.assign(part=o["trait_dimension"] + "\x00" + o["direction"], w=o["sign"] / n_dims)
    keys = pd.concat([per_dim["identity"], whole["identity"]]).unique()
    half = pd.Series(0.5, index=keys)
    se0 = pd.concat([null_se(per_dim, half), null_se(whole, half)])
    wanted = np.where(
        scores["trait_dimension"] == overall,
        scores["identity"],
        scores["identity"] + "\x00" + scores["trait_dimension"],
    )
    return detectable_pp(se0.reindex(wanted).to_numpy(), scores["n_clusters"], scores["flag"])

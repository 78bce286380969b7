"""Compare two runs identity by identity: model vs model, real photos vs renders, one wording vs another.

For every (family, dimension, identity) that both runs measured, the delta is the difference of the
identity's side-balanced selection frequencies, ``S_A - S_B`` in percentage points. Its interval and
test come from one cluster-robust contrast over the stacked answers of both runs
(`stats.verdicts.side_balanced_contrasts`, CR2 with Bell-McCaffrey df): the clusters are the renders
shown (pair images for one-portrait stereotype answers), and a render both runs showed is one cluster,
so answers of two models to the same images are not treated as independent. Runs from different
sources (different render indexes) never share a cluster.

Like is compared with like: ``value_a`` and ``value_b`` are each run's rate on the delta's own basis
(column ``sides``): side-balanced in both runs, or the one side both runs saw the identity on
(side-matched), or pooled where sides are unknown. An identity seen on the left in one run and on the
right in the other is not tested (``position_confounded``): its delta would be a side difference, so
delta, values, interval and p are blank, and like every untested identity it is left out of the
summary numbers (counted in ``n_untested``).

Per run pair and family, the paper's four summary numbers over tested identities (papers/002,
table 13): mean signed delta, mean absolute delta, RMSE and max absolute delta (pp). These include
each delta's sampling noise (two equal runs give a positive MAE); ``rms_noise_corrected`` is
sqrt(max(0, mean(delta^2 - se^2))) with its CI (`stats.multiplicity.noise_corrected_magnitude`), about
0 when the runs agree up to noise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from vignette_bench.eval.compare.cells import choice_cells, one_look
from vignette_bench.stats.counts import SIDE_LEFT, SIDE_RIGHT
from vignette_bench.stats.inference import bh_qvalues
from vignette_bench.stats.multiplicity import noise_corrected_magnitude
from vignette_bench.stats.verdicts import (
    BALANCED,
    CONFOUNDED,
    FLAG_POSITION_CONFOUNDED,
    LEFT_ONLY,
    POOLED,
    RIGHT_ONLY,
    SIDES_TEXT,
    side_balanced_contrasts,
)

IDENTITY_COLUMNS = [
    "family",
    "dimension",
    "identity",
    "value_a",
    "value_b",
    "delta",
    "se",
    "ci_low",
    "ci_high",
    "df",
    "n_clusters",
    "p_value",
    "q_value",
    "n_a",
    "n_b",
    "sides",
    "flag",
]
SUMMARY_COLUMNS = [
    "family",
    "n_identities",
    "mean_signed_delta",
    "mean_abs_delta",
    "rmse",
    "max_abs_delta",
    "rms_noise_corrected",
    "rms_ci_low",
    "rms_ci_high",
    "n_significant",
    "n_untested",
    "clusters",
]
# The flags of a tested delta: side-balanced (""), side-matched, pooled over sides, or exactly equal runs.
TESTED_FLAGS = ("", "side_matched", "not_side_balanced", "no_difference")


@dataclass(frozen=True)
class Comparison:
    label_a: str
    label_b: str
    identities: pd.DataFrame  # IDENTITY_COLUMNS, matched identities only
    summary: pd.DataFrame  # SUMMARY_COLUMNS, one row per family
    unmatched: pd.DataFrame  # family, dimension, identity, in_run: identities measured by one run only
    shared_clusters: bool = True  # a render both runs showed is one cluster (else each run's renders are apart)
    clusters_reason: str = ""  # why (`vignette compare --clusters`, or the render indexes), said on the page

    @property
    def clustering(self) -> str:
        """The clustering in words, as the page states it."""
        how = (
            "shared: a render both runs showed is one cluster"
            if self.shared_clusters
            else "separate: each run's renders are clusters of their own"
        )
        return f"{how} ({self.clusters_reason})" if self.clusters_reason else how


def _with_clusters(cells: pd.DataFrame, prefix: str) -> pd.DataFrame:
    parts = []
    for family, c in cells.groupby("family", sort=False):
        by_image = family == "stereotype" and one_look(c)
        parts.append(c.assign(cluster=prefix + (c["image"] if by_image else c["render"])))
    return pd.concat(parts, ignore_index=True) if parts else cells.assign(cluster=pd.Series(dtype=object))


def _rates(cells: pd.DataFrame) -> pd.DataFrame:
    """Selection frequency (%) per (family, dimension, identity) on every basis a delta can have (columns:
    SIDES_TEXT values: side-balanced, left side, right side, pooled; position-confounded: none) and valid offers."""
    keys = ["family", "dimension", "target"]
    by_side = cells.groupby([*keys, "side"])[["y", "n"]].sum()
    rate = (by_side["y"] / by_side["n"]).unstack("side").reindex(columns=[SIDE_LEFT, SIDE_RIGHT])
    total = cells.groupby(keys)[["y", "n"]].sum()
    return pd.DataFrame(
        {
            SIDES_TEXT[BALANCED]: 100.0 * rate.mean(axis=1, skipna=False),
            SIDES_TEXT[LEFT_ONLY]: 100.0 * rate[SIDE_LEFT],
            SIDES_TEXT[RIGHT_ONLY]: 100.0 * rate[SIDE_RIGHT],
            SIDES_TEXT[POOLED]: 100.0 * total["y"] / total["n"],
            SIDES_TEXT[CONFOUNDED]: np.nan,
            "n": total["n"],
        }
    )


def _on_basis(rates: pd.DataFrame, keys: pd.MultiIndex, sides: np.ndarray) -> np.ndarray:
    """Each identity's rate on its delta's basis (`sides`), so a run's value always matches the delta beside it."""
    table = rates.reindex(keys)
    return np.array([table[b].iloc[k] if b in table else np.nan for k, b in enumerate(sides)], dtype=float)


def compare_frames(
    a: pd.DataFrame,
    b: pd.DataFrame,
    label_a: str = "A",
    label_b: str = "B",
    *,
    shared_clusters: bool = True,
    clusters_reason: str = "",
    alpha: float = 0.05,
) -> Comparison:
    """Compare two responses frames (the runner's schema). ``shared_clusters``: the runs showed the same
    renders (one source), so a render is one cluster across both; False keeps them apart. ``clusters_reason``:
    why (stated on the page)."""
    ca, cb = choice_cells(a), choice_cells(b)
    ca = _with_clusters(ca, "" if shared_clusters else "A:")
    cb = _with_clusters(cb, "" if shared_clusters else "B:")
    keys = ["family", "dimension", "target"]
    ra, rb = _rates(ca), _rates(cb)
    matched = ra.index.intersection(rb.index)
    matched = matched[(ra.loc[matched, "n"] > 0).to_numpy() & (rb.loc[matched, "n"] > 0).to_numpy()]
    only = [(ra.index.difference(matched), label_a), (rb.index.difference(matched), label_b)]
    unmatched = pd.DataFrame(
        [(*k, lab) for idx, lab in only for k in idx], columns=["family", "dimension", "identity", "in_run"]
    )
    stacked = pd.concat([ca.assign(part=0), cb.assign(part=1)], ignore_index=True)
    stacked = stacked.set_index(keys).loc[lambda f: f.index.isin(matched)].reset_index()
    contrasts = []
    for (family, dimension), c in stacked.groupby(["family", "dimension"], sort=False):
        res = side_balanced_contrasts(c, {0: 1.0, 1: -1.0}, 0.0, alpha, constant_parts=True)
        contrasts.append(res.assign(family=family, dimension=dimension).rename_axis("identity").reset_index())
    ident = _identity_rows(contrasts, ra, rb)
    ident["q_value"] = np.nan  # untested: blank, not q = 1
    for _, idx in ident.groupby("family", sort=False).groups.items():  # BH within each family
        tested = ident.loc[idx, "flag"].isin(TESTED_FLAGS).to_numpy()
        q = bh_qvalues(ident.loc[idx, "p_value"].to_numpy(float), tested=tested)
        ident.loc[idx, "q_value"] = np.where(tested, q, np.nan)
    ident = ident[IDENTITY_COLUMNS].sort_values(["family", "dimension", "identity"], ignore_index=True)
    summary = _summary(ident, alpha).assign(clusters="shared" if shared_clusters else "separate")
    return Comparison(label_a, label_b, ident, summary, unmatched, shared_clusters, clusters_reason)


# A tested contrast that is not side-balanced: side-matched (the identity was seen on one side only, in both runs:
# that side's rates are compared, so a side preference cancels) or pooled over sides (no side known).
SIDE_FLAGS = {
    SIDES_TEXT[LEFT_ONLY]: "side_matched",
    SIDES_TEXT[RIGHT_ONLY]: "side_matched",
    SIDES_TEXT[POOLED]: "not_side_balanced",
}


def _identity_rows(tested: list[pd.DataFrame], ra: pd.DataFrame, rb: pd.DataFrame) -> pd.DataFrame:
    """The contrasts of every (family, dimension) as IDENTITY_COLUMNS less q_value, in pp, with both runs' rates."""
    cols = [c for c in IDENTITY_COLUMNS if c != "q_value"]
    if not tested:
        return pd.DataFrame(columns=cols)
    res = pd.concat(tested, ignore_index=True)
    est, se = res["estimate"].to_numpy(float), res["se"].to_numpy(float)
    # Identical answers in every cluster: the delta is exactly 0 with no variance, a result (counted), not "significant"
    # and not "untested" (whatever flag the zero variance raised), unless the runs share no side.
    same = (np.nan_to_num(se) <= 1e-9) & (np.abs(est) <= 1e-9)
    flag = res["flag"].to_numpy(object)
    flag = np.where(same & (flag != FLAG_POSITION_CONFOUNDED), "no_difference", flag)
    # tested, but not side-balanced: say how (`side_balanced_contrasts`' sides column)
    sides = pd.Series(res["sides"].to_numpy(object)).map(SIDE_FLAGS).fillna("").to_numpy(object)
    flag = np.where(flag == "", sides, flag)
    keys = pd.MultiIndex.from_arrays([res["family"], res["dimension"], res["identity"]])
    # untested (position-confounded, a constant part, too few clusters): no delta, interval or p to show or count
    untested = ~pd.Series(flag).isin(TESTED_FLAGS).to_numpy()
    basis = res["sides"].to_numpy(object)

    def pp(col: str) -> np.ndarray:
        return np.where(untested, np.nan, 100.0 * np.where(same, 0.0, res[col].to_numpy(float)))

    return pd.DataFrame(
        {
            "family": res["family"].to_numpy(object),
            "dimension": res["dimension"].to_numpy(object),
            "identity": res["identity"].to_numpy(object),
            "value_a": _on_basis(ra, keys, basis),
            "value_b": _on_basis(rb, keys, basis),
            "delta": pp("estimate"),
            "se": pp("se"),
            "ci_low": pp("ci_low"),
            "ci_high": pp("ci_high"),
            "df": np.where(untested, np.nan, res["df"].to_numpy(float)),
            "n_clusters": res["n_clusters"].to_numpy().astype(int),
            "p_value": np.where(untested, np.nan, np.where(same, 1.0, res["p_value"].to_numpy(float))),
            "n_a": ra["n"].reindex(keys).to_numpy().astype(int),
            "n_b": rb["n"].reindex(keys).to_numpy().astype(int),
            "sides": basis,
            "flag": flag,
        },
        columns=cols,
    )


def _forced_choice_blocks(dimension: pd.Series) -> np.ndarray:
    """Correlation of the deltas: identities of one dimension compete for the same choices, so within a
    dimension of k identities their rates (and the runs' differences) correlate at -1/(k-1)."""
    dims = dimension.to_numpy(object)
    same = dims[:, None] == dims[None, :]
    k = pd.Series(dims).map(pd.Series(dims).value_counts()).to_numpy(float)
    r = np.where(k > 1, -1.0 / np.maximum(k - 1.0, 1.0), 0.0)
    return np.where(same, r[:, None], 0.0) + np.eye(len(dims)) * (1.0 - np.where(k > 1, r, 0.0))


def _summary(ident: pd.DataFrame, alpha: float) -> pd.DataFrame:
    rows = []
    for family, g in ident.groupby("family", sort=True):
        # tested identities only: an untested one has no delta (blank), so it counts in n_untested, nowhere else
        ok = g["flag"].isin(TESTED_FLAGS).to_numpy() & np.isfinite(g["delta"].to_numpy(float))
        ok &= np.isfinite(g["se"].to_numpy(float))
        n_untested = int((~ok).sum())
        g = g[ok]
        d, se = g["delta"].to_numpy(float), g["se"].to_numpy(float)
        if len(d) and not np.any(d):  # identical runs: nothing to correct
            rms, lo, hi = 0.0, 0.0, 0.0
        else:
            mag = noise_corrected_magnitude(d, se, 0.0, alpha=alpha, dependence=_forced_choice_blocks(g["dimension"]))
            rms, lo, hi = (float(mag[k]) for k in ("magnitude", "ci_low", "ci_high")) if len(d) else (np.nan,) * 3  # type: ignore[arg-type]
        rows.append(
            {
                "family": family,
                "n_identities": int(len(d)),
                "mean_signed_delta": float(d.mean()) if len(d) else np.nan,
                "mean_abs_delta": float(np.abs(d).mean()) if len(d) else np.nan,
                "rmse": float(np.sqrt((d**2).mean())) if len(d) else np.nan,
                "max_abs_delta": float(np.abs(d).max()) if len(d) else np.nan,
                "rms_noise_corrected": rms,
                "rms_ci_low": lo,
                "rms_ci_high": hi,
                "n_significant": int((g["q_value"] < alpha).sum()),
                "n_untested": n_untested,
            }
        )
    return pd.DataFrame(rows, columns=[c for c in SUMMARY_COLUMNS if c != "clusters"])

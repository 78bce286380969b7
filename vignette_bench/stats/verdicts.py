"""The metric modules' verdict tests: side-balanced (or pooled) cluster-robust contrasts per target.

Every verdict quantity of the four measures is a fixed linear combination of selection rates over
"parts" (all offers; with partner / with others; high / low valence terms; ...). Here a part's rate
is split by the side the identity stood on, and the contrast averages the two sides
(``w/2 * (R_part,left + R_part,right)``), so a model's side preference cancels however unbalanced
the identity's left share is. A target for which some weighted part lacks left or right offers
falls back to pooled rates (``w * R_part`` over all its offers, sides unknown included): then a
side preference is not removed, and the output says so (``side_balanced`` False).

The test itself is `vignette_bench.stats.clustered.cluster_contrasts` (working-model CR2 with
Bell-McCaffrey df; clusters are renders, pair images or rows, see `counts`).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

import numpy as np
import pandas as pd

from vignette_bench.stats import distributions
from vignette_bench.stats.clustered import OUTPUT_COLUMNS, cluster_contrasts, estimate_icc, refusal_bounds
from vignette_bench.stats.counts import SIDE_LEFT, SIDE_RIGHT
from vignette_bench.stats.planning import detectable_effect

FLAG_CONSTANT = "constant_part"


def _flag_constant(out: pd.DataFrame, frame: pd.DataFrame, coef: Mapping[Hashable, float]) -> pd.DataFrame:
    used = frame[frame["component"].isin(list(coef))]
    sums = used.groupby(["target", "component"])[["y", "n"]].sum()
    constant = (sums["y"] <= 1e-12) | (sums["y"] >= sums["n"] - 1e-12)
    bad = constant[constant].index.get_level_values("target").unique()
    hit = out.index.isin(bad) & (out["flag"] == "").to_numpy()
    out = out.copy()
    out.loc[hit, "flag"] = FLAG_CONSTANT
    out.loc[hit, "p_value"] = 1.0
    out.loc[hit, ["statistic", "ci_low", "ci_high", "df"]] = np.nan
    return out


def _part_codes(cells: pd.DataFrame, weights: Mapping[Hashable, float]) -> tuple[np.ndarray, list[float]]:
    """Index of each row's part among the weighted parts (-1: not weighted, ignored)."""
    keys = [p for p, w in weights.items() if w != 0]
    lookup = {p: i for i, p in enumerate(keys)}
    codes, uniques = pd.factorize(cells["part"])
    per_unique = np.array([lookup.get(u, -1) for u in uniques] + [-1], dtype=np.int64)
    return per_unique[codes], [float(weights[p]) for p in keys]


def _balanced_targets(cells: pd.DataFrame, part: np.ndarray, n_parts: int) -> np.ndarray:
    """Whether each row's target has valid offers on both sides in every weighted part."""
    side = cells["side"].to_numpy()
    ok = (part >= 0) & (cells["n"].to_numpy() > 0) & np.isin(side, [SIDE_LEFT, SIDE_RIGHT])
    t_codes, targets = pd.factorize(cells["target"])
    seen = pd.DataFrame({"t": t_codes[ok], "k": part[ok] * 2 + side[ok]}).drop_duplicates()
    count = np.bincount(seen["t"].to_numpy(), minlength=len(targets))
    return (count == 2 * n_parts)[t_codes]


def _components(
    cells: pd.DataFrame, part: np.ndarray, w: list[float], balanced: bool
) -> tuple[pd.DataFrame, dict[Hashable, float]]:
    """Integer components: 4 * part + side (0 left, 1 right) when balanced, 4 * part + 3 when pooled."""
    if balanced:
        side = cells["side"].to_numpy()
        comp = np.where(np.isin(side, [SIDE_LEFT, SIDE_RIGHT]) & (part >= 0), 4 * part + side, -1)
        return cells.assign(component=comp), {4 * i + s: a / 2.0 for i, a in enumerate(w) for s in (0, 1)}
    return cells.assign(component=np.where(part >= 0, 4 * part + 3, -1)), {4 * i + 3: a for i, a in enumerate(w)}


def side_balanced_contrasts(
    cells: pd.DataFrame,
    weights: Mapping[Hashable, float],
    null: float = 0.0,
    alpha: float = 0.05,
    *,
    refusals: bool = False,
    icc: float | None = None,
    constant_parts: bool = False,
    two_way: bool = True,
) -> pd.DataFrame:
    """Cluster-robust test of ``sum_part weights[part] * rate_part = null`` per target.

    cells: columns target, cluster, side (counts.SIDE_* codes), part, y, n (and refused when
    `refusals`). Targets with both sides seen in every weighted part are side-balanced, the others
    pooled (one `cluster_contrasts` call each, so each estimates its own working icc). Returns one
    row per target (index target): the `cluster_contrasts` columns, side_balanced, and with
    `refusals` estimate_low, estimate_high and verdict_robust from `refusal_bounds`. icc: the
    working icc of `cluster_contrasts` (None: estimated per call). constant_parts: flag
    (FLAG_CONSTANT, p = 1) a target when one weighted component's answers are all 0 or all 1:
    its within-part variance is then estimated as 0, so the sandwich se of a difference comes
    from the other part alone and small null cells would be accused (seen in the null
    simulations of tests/metrics/test_calibration.py with ~10 answers per cell).
    two_way: with a partner_cluster column in `cells`, two-way (own x partner) clustering where
    the two differ (`cluster_contrasts`); False clusters on `cluster` alone.
    """
    cols = [c for c in OUTPUT_COLUMNS if c != "target"]
    extra = ["estimate_low", "estimate_high", "verdict_robust"] if refusals else []
    if cells.empty:
        return pd.DataFrame(
            columns=[*cols, "n_partner_clusters", "side_balanced", *extra], index=pd.Index([], name="target")
        )
    part, w = _part_codes(cells, weights)
    balanced = _balanced_targets(cells, part, len(w))
    parts = []
    for is_bal in (True, False):
        rows = balanced == is_bal
        if not rows.any():
            continue
        frame, coef = _components(cells[rows], part[rows], w, is_bal)
        out = cluster_contrasts(frame, coef, null, alpha, icc=icc, two_way=two_way).set_index("target")
        if "n_partner_clusters" not in out.columns:
            out["n_partner_clusters"] = np.nan
        if constant_parts:
            out = _flag_constant(out, frame, coef)
        if refusals:
            bounds = refusal_bounds(frame, coef, null, alpha, icc=icc, two_way=two_way).set_index("target")
            out = out.join(bounds[["estimate_low", "estimate_high", "verdict_robust"]])
        parts.append(out.assign(side_balanced=bool(is_bal)))
    return pd.concat(parts)


CLUSTERINGS = ("two_way", "one_way")


def clustering_label(cluster_unit: str, crossed: bool) -> str:
    """The summary's name of the clustering used by the verdict tests."""
    if crossed:
        return "two-way (own × partner render)"
    return {
        "candidate_clusters": "one-way (own render)",
        "group": "one-way (pair image)",
        "rows": "one-way (rows: independent answers assumed)",
    }.get(cluster_unit, f"one-way ({cluster_unit})")


def check_clustering(value: object) -> bool:
    """Validate a module's `clustering` option; True when two-way clustering is asked for."""
    if value not in CLUSTERINGS:
        raise ValueError(f"clustering must be one of {CLUSTERINGS}, got {value!r}")
    return value == "two_way"


def detectable(se: np.ndarray, df: np.ndarray, alpha: float = 0.05, power: float = 0.8) -> np.ndarray:
    """Smallest effect detected with `power` at level `alpha` given se and df (NaN where se or df is NaN).

    `planning.detectable_effect` with t(df) quantiles, vectorised.
    """
    detectable_effect(1.0, alpha, power, 10.0)  # validates alpha and power
    se, df = np.asarray(se, float), np.asarray(df, float)
    ok = np.isfinite(se) & np.isfinite(df) & (df > 0)
    d = np.where(ok, df, 1.0)
    with np.errstate(invalid="ignore"):
        return np.where(ok, (distributions.t_isf(alpha / 2.0, d) + distributions.t_ppf(power, d)) * se, np.nan)


def expand(owner: np.ndarray, target_owner: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pairs (row, target) of every row with every target of the same owner (e.g. identity).

    PairComp's target (i, partner) and log-odds' target (i, context) each compare all of i's
    offers split two ways, so each of i's cells appears once per target of i.
    """
    order = np.argsort(owner, kind="stable")
    n_owner = int(max(owner.max(initial=-1), target_owner.max(initial=-1))) + 1
    count = np.bincount(owner, minlength=n_owner)
    start = np.concatenate([[0], np.cumsum(count)[:-1]])
    per_target = count[target_owner]
    target = np.repeat(np.arange(len(target_owner)), per_target)
    first = np.repeat(start[target_owner] - np.concatenate([[0], np.cumsum(per_target)[:-1]]), per_target)
    return order[first + np.arange(len(target))], target


def split_contrasts(
    cells: pd.DataFrame,
    owner: np.ndarray,
    key: np.ndarray,
    target_owner: np.ndarray,
    target_key: np.ndarray,
    alpha: float = 0.05,
    max_rows: int = 4_000_000,
    two_way: bool = True,
) -> pd.DataFrame:
    """Per target (owner o, key k): side-balanced rate of o's offers with key k minus with any other key.

    cells: columns cluster, side, y, n, one row per (owner, key, cluster, side) (with an optional
    partner_cluster column: per (owner, key, cluster, partner_cluster, side), tested two-way
    unless `two_way` is False). PairComp: owner
    identity, key partner; log-odds: owner identity, key context. The working icc is estimated
    once from the owners' pooled rates, and targets are tested in chunks of at most `max_rows`
    expanded rows, so memory stays bounded. Returns `side_balanced_contrasts` rows indexed by
    target position (0 .. len(target_owner) - 1).
    """
    if cells.empty or len(target_owner) == 0:
        return side_balanced_contrasts(cells.iloc[:0], {0: 1.0, 1: -1.0}, 0.0, alpha)
    icc = estimate_icc(
        pd.DataFrame({"target": owner, "cluster": cells["cluster"].to_numpy(), "component": 0}).assign(
            y=cells["y"].to_numpy(), n=cells["n"].to_numpy()
        ),
        {0: 1.0},
    )
    # Every estimator downstream uses only (target, cluster, side, part) sums of y and n, so a target's
    # "other keys" part is the owner's (cluster, side) total minus the key's own cells: one row per
    # (target, cluster, side) instead of every owner cell repeated for each of the owner's targets
    # (log-odds: x the number of contexts). The counts are whole numbers, so the sums are exact and the
    # results equal those of the expanded cells.
    crossed = two_way and "partner_cluster" in cells.columns
    if crossed:
        # the arithmetic below runs on the intersection (own, partner) cluster; mapped back at the end
        pairs = pd.MultiIndex.from_arrays([cells["cluster"].to_numpy(), cells["partner_cluster"].to_numpy()])
        cluster, uniq_pairs = pd.factorize(pairs)
        own_of = np.asarray(uniq_pairs.get_level_values(0))
        partner_of = np.asarray(uniq_pairs.get_level_values(1))
    else:
        cluster, _ = pd.factorize(cells["cluster"])
    side = cells["side"].to_numpy().astype(np.int64)
    y, n = cells["y"].to_numpy(dtype=float), cells["n"].to_numpy(dtype=float)
    n_sides = int(side.max()) + 1 if len(side) else 1
    n_clusters = int(cluster.max()) + 1 if len(cluster) else 1
    # owner totals per (cluster, side)
    cs = cluster.astype(np.int64) * n_sides + side
    oc = owner.astype(np.int64) * (n_clusters * n_sides) + cs
    oc_keys, oc_inv = np.unique(oc, return_inverse=True)
    tot_y, tot_n = np.bincount(oc_inv, weights=y), np.bincount(oc_inv, weights=n)
    tot_owner = oc_keys // (n_clusters * n_sides)
    tot_cs = oc_keys % (n_clusters * n_sides)
    # the target (if any) each cell's own key makes it part of
    n_keys = int(max(key.max(initial=-1), target_key.max(initial=-1))) + 1
    target_code = target_owner.astype(np.int64) * n_keys + target_key
    cell_code = owner.astype(np.int64) * n_keys + key
    order = np.argsort(target_code, kind="stable")
    pos = np.searchsorted(target_code[order], cell_code)
    pos = np.minimum(pos, len(order) - 1)
    cell_target = np.where(target_code[order][pos] == cell_code, order[pos], -1)
    sizes = np.bincount(tot_owner, minlength=int(target_owner.max()) + 1)[target_owner]
    chunk = (np.cumsum(sizes) - 1) // max_rows  # consecutive targets, about max_rows rows each
    out = []
    for c in np.unique(chunk):
        t = np.flatnonzero(chunk == c)
        rows, tgt = expand(tot_owner, target_owner[t])  # every (cluster, side) total of each target's owner
        targets = t[tgt]
        own = np.flatnonzero(np.isin(cell_target, t))  # the targets' own cells
        own_code = cell_target[own] * (n_clusters * n_sides) + cs[own]
        all_code = targets.astype(np.int64) * (n_clusters * n_sides) + tot_cs[rows]
        # subtract each target's own cells from its owner's totals (one own cell per (target, cluster, side));
        # all_code is already sorted (targets ascending, each owner's totals in key order), and sorted
        # queries let searchsorted start each search where the last ended
        sorter = None if np.all(all_code[1:] > all_code[:-1]) else np.argsort(all_code, kind="stable")
        queries = np.argsort(own_code, kind="stable")
        at = np.empty(len(own_code), dtype=np.int64)
        at[queries] = np.searchsorted(all_code, own_code[queries], sorter=sorter)
        if sorter is not None:
            at = sorter[at]
        other_y, other_n = tot_y[rows].copy(), tot_n[rows].copy()
        np.subtract.at(other_y, at, y[own])
        np.subtract.at(other_n, at, n[own])
        frame = pd.DataFrame(
            {
                "target": np.concatenate([cell_target[own], targets]),
                "cluster": np.concatenate([cluster[own], tot_cs[rows] // n_sides]),
                "side": np.concatenate([side[own], tot_cs[rows] % n_sides]),
                "part": np.concatenate([np.zeros(len(own), np.int64), np.ones(len(rows), np.int64)]),
                "y": np.concatenate([y[own], other_y]),
                "n": np.concatenate([n[own], other_n]),
            }
        )
        if crossed:
            ic = frame["cluster"].to_numpy()
            frame = frame.assign(cluster=own_of[ic], partner_cluster=partner_of[ic])
        frame = frame.iloc[np.argsort(frame["target"].to_numpy(), kind="stable")]
        out.append(
            side_balanced_contrasts(frame, {0: 1.0, 1: -1.0}, 0.0, alpha, icc=icc, constant_parts=True, two_way=two_way)
        )
    return pd.concat(out)

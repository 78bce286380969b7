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

from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from vignette_bench.stats import distributions
from vignette_bench.stats.clustered import (
    OUTPUT_COLUMNS,
    _icc_from_table,
    _row_sums,
    _sorted_int_codes,
    _Table,
    cluster_contrasts,
    refusal_bounds,
)
from vignette_bench.stats.counts import SIDE_LEFT, SIDE_RIGHT
from vignette_bench.stats.planning import detectable_effect

FLAG_CONSTANT = "constant_part"
FLAG_POSITION_CONFOUNDED = "position_confounded"

# How a target's contrast meets the sides (output column `sides`): both sides averaged; one side, where
# only that side was seen in every part (a contrast between parts on the same side, so the side
# preference cancels: "side-matched"); pooled, where no side is known; or no test, where sides are
# known but no side is shared by every part (the contrast would be a side difference).
BALANCED, LEFT_ONLY, RIGHT_ONLY, POOLED, CONFOUNDED = range(5)
SIDES_TEXT = (
    "balanced",
    "left only (side-matched)",
    "right only (side-matched)",
    "pooled (sides unknown)",
    "no side shared (position-confounded)",
)


def _constant(Y: np.ndarray, N: np.ndarray) -> np.ndarray:
    """Per target (rows of the (targets, components) sums), whether some component's answers are all 0 or all 1."""
    return np.asarray(((Y <= 1e-12) | (Y >= N - 1e-12)).any(axis=1))


def _mark_untested(out: pd.DataFrame, hit: np.ndarray, flag: str) -> pd.DataFrame:
    """Flag `flag` (p = 1, no interval; the estimate is kept for reading) on the tested targets marked in `hit`
    (out's row order)."""
    hit = np.asarray(hit, dtype=bool) & (out["flag"] == "").to_numpy()
    out = out.copy()
    out.loc[hit, "flag"] = flag
    out.loc[hit, "p_value"] = 1.0
    out.loc[hit, ["statistic", "ci_low", "ci_high", "df"]] = np.nan
    return out


def _flag_constant(out: pd.DataFrame, frame: pd.DataFrame, coef: Mapping[Hashable, float]) -> pd.DataFrame:
    used = frame[frame["component"].isin(list(coef))]
    sums = used.groupby(["target", "component"])[["y", "n"]].sum()
    constant = (sums["y"] <= 1e-12) | (sums["y"] >= sums["n"] - 1e-12)
    bad = constant[constant].index.get_level_values("target").unique()
    return _mark_untested(out, out.index.isin(bad), FLAG_CONSTANT)


def _part_codes(cells: pd.DataFrame, weights: Mapping[Hashable, float]) -> tuple[np.ndarray, list[float]]:
    """Index of each row's part among the weighted parts (-1: not weighted, ignored)."""
    keys = [p for p, w in weights.items() if w != 0]
    lookup = {p: i for i, p in enumerate(keys)}
    codes, uniques = pd.factorize(cells["part"])
    per_unique = np.array([lookup.get(u, -1) for u in uniques] + [-1], dtype=np.int64)
    return per_unique[codes], [float(weights[p]) for p in keys]


def side_modes(parts_left: np.ndarray, parts_right: np.ndarray, n_parts: int, contrast: bool) -> np.ndarray:
    """Per target, how its contrast meets the sides (BALANCED ... CONFOUNDED), from the number of weighted
    parts with left and with right offers. One side is matched only for a contrast (weights summing to 0):
    a single rate against a null keeps its pooled test (selection frequency adjusts those by its own model)."""
    mode = np.full(len(parts_left), POOLED, dtype=np.int64)
    known = (parts_left + parts_right) > 0
    if contrast:
        mode[known] = CONFOUNDED
        mode[parts_right == n_parts] = RIGHT_ONLY
        mode[parts_left == n_parts] = LEFT_ONLY
    mode[(parts_left == n_parts) & (parts_right == n_parts)] = BALANCED
    return mode


def _target_side_modes(cells: pd.DataFrame, part: np.ndarray, w: list[float], match_sides: bool) -> np.ndarray:
    """Each row's target's side mode (`side_modes`; without `match_sides`, one-sided contrasts are pooled)."""
    side = cells["side"].to_numpy()
    ok = (part >= 0) & (cells["n"].to_numpy() > 0) & np.isin(side, [SIDE_LEFT, SIDE_RIGHT])
    t_codes, targets = pd.factorize(cells["target"])
    seen = pd.DataFrame({"t": t_codes[ok], "part": part[ok], "side": side[ok]}).drop_duplicates()
    per_side = [
        np.bincount(seen["t"].to_numpy()[seen["side"].to_numpy() == s], minlength=len(targets))
        for s in (SIDE_LEFT, SIDE_RIGHT)
    ]
    contrast = match_sides and len(w) > 1 and abs(sum(w)) < 1e-12
    return side_modes(per_side[0], per_side[1], len(w), contrast)[t_codes]


def _components(
    cells: pd.DataFrame, part: np.ndarray, w: list[float], mode: int
) -> tuple[pd.DataFrame, dict[Hashable, float]]:
    """Integer components: 4 * part + side (0 left, 1 right) when balanced or side-matched, 4 * part + 3 when pooled."""
    side = cells["side"].to_numpy()
    if mode == BALANCED:
        comp = np.where(np.isin(side, [SIDE_LEFT, SIDE_RIGHT]) & (part >= 0), 4 * part + side, -1)
        return cells.assign(component=comp), {4 * i + s: a / 2.0 for i, a in enumerate(w) for s in (0, 1)}
    if mode in (LEFT_ONLY, RIGHT_ONLY):
        s = SIDE_LEFT if mode == LEFT_ONLY else SIDE_RIGHT
        comp = np.where((side == s) & (part >= 0), 4 * part + s, -1)
        return cells.assign(component=comp), {4 * i + s: a for i, a in enumerate(w)}
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
    match_sides: bool = True,
    partner_icc: tuple[float, float] | None = None,
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
    the two differ (`cluster_contrasts`); False clusters on `cluster` alone. partner_icc: the partner and
    intersection terms' working icc (None: estimated per call, like icc).
    match_sides: a contrast (weights summing to 0) whose parts were all seen on one side only is
    tested on that side ("side-matched"), and one whose parts share no side is not tested
    (FLAG_POSITION_CONFOUNDED); False pools both over every side, as before issue 27 (the output's
    `sides` column says which).
    """
    cols = [c for c in OUTPUT_COLUMNS if c != "target"]
    extra = ["estimate_low", "estimate_high", "verdict_robust"] if refusals else []
    if cells.empty:
        return pd.DataFrame(
            columns=[*cols, "n_partner_clusters", "side_balanced", "sides", *extra], index=pd.Index([], name="target")
        )
    part, w = _part_codes(cells, weights)
    modes = _target_side_modes(cells, part, w, match_sides)
    parts = []
    for mode in (BALANCED, LEFT_ONLY, RIGHT_ONLY, POOLED, CONFOUNDED):
        rows = modes == mode
        if not rows.any():
            continue
        frame, coef = _components(cells[rows], part[rows], w, POOLED if mode == CONFOUNDED else mode)
        out = cluster_contrasts(frame, coef, null, alpha, icc=icc, two_way=two_way, partner_icc=partner_icc).set_index(
            "target"
        )
        if "n_partner_clusters" not in out.columns:
            out["n_partner_clusters"] = np.nan
        if constant_parts:
            out = _flag_constant(out, frame, coef)
        if refusals:
            bounds = refusal_bounds(
                frame, coef, null, alpha, icc=icc, two_way=two_way, partner_icc=partner_icc
            ).set_index("target")
            out = out.join(bounds[["estimate_low", "estimate_high", "verdict_robust"]])
        if mode == CONFOUNDED:
            out = _mark_untested(out, np.ones(len(out), bool), FLAG_POSITION_CONFOUNDED)
        parts.append(out.assign(side_balanced=mode == BALANCED, sides=SIDES_TEXT[mode]))
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


ONE_SIDED = ("match", "pool")


def side_counts(sides: pd.Series) -> dict[str, int]:
    """The summary's counts of targets tested on one side and of those left untested for want of a shared side."""
    return {
        "n_side_matched": int(sides.isin([SIDES_TEXT[LEFT_ONLY], SIDES_TEXT[RIGHT_ONLY]]).sum()),
        "n_position_confounded": int((sides == SIDES_TEXT[CONFOUNDED]).sum()),
    }


def check_one_sided(value: object) -> bool:
    """Validate a module's `one_sided` option; True when one-sided contrasts are side-matched."""
    if value not in ONE_SIDED:
        raise ValueError(f"one_sided must be one of {ONE_SIDED}, got {value!r}")
    return value == "match"


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


def _grouped_order(code: np.ndarray, lead: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(stable order sorting `code`, the sorted code); `lead`, small non-negative ints, is code's leading key.

    The count views are keyed cluster first, so their rows are already sorted by cluster within each owner:
    a radix sort on the owner alone (16-bit keys) then sorts the whole code, in a fraction of a general sort.
    """
    if len(lead) and int(lead.max()) < 2**16:
        order = _radix_order(lead)
        ordered = code.take(order)
        if bool(np.all(ordered[1:] >= ordered[:-1])):
            return order, ordered
    order = np.argsort(code, kind="stable")
    return order, code.take(order)


def _radix_order(small: np.ndarray) -> np.ndarray:
    """Stable argsort of non-negative ints below 2**16 (numpy radix-sorts 16-bit keys)."""
    return np.argsort(small.astype(np.uint16), kind="stable")


def _segments(sorted_code: np.ndarray) -> np.ndarray:
    """Start of each run of equal values of a sorted array."""
    return np.flatnonzero(np.r_[True, sorted_code[1:] != sorted_code[:-1]]) if len(sorted_code) else np.zeros(0, int)


def _run_index(starts: np.ndarray, length: int, dtype: type = np.int64) -> np.ndarray:
    """Each element's run, given the runs' starts."""
    return np.repeat(np.arange(len(starts), dtype=dtype), np.diff(np.r_[starts, length]))


def _cluster_codes(values: pd.Series) -> np.ndarray:
    """Non-negative integer codes ordered like the values (the count views' cluster codes pass through)."""
    arr = values.to_numpy()
    if arr.dtype.kind in "iu" and (len(arr) == 0 or int(arr.min()) >= 0):
        return arr.astype(np.int64, copy=False)
    return pd.factorize(values, sort=True)[0].astype(np.int64)


def _joint_cluster_codes(own: pd.Series, partner: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """`_cluster_codes` of two columns in one code space."""
    if own.dtype.kind in "iu" and partner.dtype.kind in "iu" and own.min() >= 0 and partner.min() >= 0:
        return _cluster_codes(own), _cluster_codes(partner)  # non-negative integers pass through unchanged
    both = _cluster_codes(pd.concat([own, partner], ignore_index=True))
    return both[: len(own)], both[len(own) :]


def _icc_of_owners(owner: np.ndarray, cluster: np.ndarray, y: np.ndarray, n: np.ndarray) -> float:
    """`estimate_icc` of the owners' pooled rates: one component, rows (owner, cluster), summed from codes."""
    stride = int(cluster.max()) + 1
    row, rows = _sorted_int_codes(owner * stride + cluster)
    n_rows = np.bincount(row, weights=n, minlength=len(rows))
    y_rows = np.bincount(row, weights=y, minlength=len(rows))
    return _icc_of_rows(rows // stride, rows % stride, n_rows, y_rows, stride)


def _icc_of_rows(
    row_owner: np.ndarray, row_cluster: np.ndarray, n_rows: np.ndarray, y_rows: np.ndarray, n_clusters: int
) -> float:
    """`_icc_of_owners` from its rows' sums, one row per (owner, cluster), sorted by owner."""
    owner_starts = _segments(row_owner)
    tab = _Table.from_sums(
        np.ones(1),
        n_rows[:, None],
        y_rows[:, None],
        _run_index(owner_starts, len(row_owner)),
        row_cluster,
        pd.Index(row_owner[owner_starts]),
        pd.RangeIndex(n_clusters),
    )
    return _icc_from_table(tab)


IndexType = type[np.int32] | type[np.int64]  # per-cell indices: int32 where they fit


@dataclass(frozen=True)
class _Clusters:
    """The clusters the arithmetic runs on. One-way: each cell's own cluster. Two-way: the intersection (own,
    partner) cluster, whose codes sort like the own clusters, mapped back to own and partner for the test."""

    labels: pd.Index  # the tables' clusters: one-way 0 .. max code; two-way the (own, partner) pairs' codes
    own_of: np.ndarray | None = None  # two-way: an intersection code's own cluster
    partner_of: np.ndarray | None = None  # two-way: its partner cluster


def _clusters(cells: pd.DataFrame, crossed: bool) -> tuple[np.ndarray, _Clusters]:
    """(each cell's cluster code, the clusters)."""
    if not crossed:
        code = _cluster_codes(cells["cluster"])
        return code, _Clusters(pd.RangeIndex(int(code.max()) + 1))
    # own and partner coded together (a cell whose partner is its own cluster must stay one), ordered like the
    # values, so the tests see the clusters in the order of their labels
    own_cluster, partner_cluster = _joint_cluster_codes(cells["cluster"], cells["partner_cluster"])
    stride = int(partner_cluster.max()) + 1
    code, pairs = _sorted_int_codes(own_cluster * stride + partner_cluster)
    return code, _Clusters(pd.Index(pairs), pairs // stride, pairs % stride)


@dataclass(frozen=True)
class _OwnerRows:
    """Each owner's (cluster, side) sums of n and y, one row per (owner, cluster) seen, sorted by owner and
    cluster; and where each cell falls among them."""

    owner: np.ndarray
    cluster: np.ndarray
    n: np.ndarray  # (rows, sides)
    y: np.ndarray
    n_pooled: np.ndarray  # summed over sides
    y_pooled: np.ndarray
    seen: np.ndarray  # (rows, sides): whether any cell had that side
    first: np.ndarray  # owner o's rows are first[o] .. first[o + 1] - 1
    cell_rank: np.ndarray  # each cell's row counted from its owner's first: its row within any target of the owner


def _owner_rows(
    owner: np.ndarray,
    cluster: np.ndarray,
    side: np.ndarray,
    y: np.ndarray,
    n: np.ndarray,
    n_sides: int,
    n_owner: int,
    index_type: IndexType,
) -> _OwnerRows:
    S = n_sides
    n_cs = (int(cluster.max()) + 1) * S
    ocs = owner * n_cs
    ocs += cluster * S
    ocs += side
    order, ocs_sorted = _grouped_order(ocs, owner)
    del ocs  # (at 10M answers each whole-cell array is ~100 MB: the ones not needed below go early)
    ocs_starts = _segments(ocs_sorted)
    ocs_keys = ocs_sorted[ocs_starts]
    del ocs_sorted
    oc_starts = _segments(ocs_keys // S)  # (owner, cluster) rows
    oc_of_ocs = _run_index(oc_starts, len(ocs_keys))
    oc_owner, oc_cluster = ocs_keys[oc_starts] // n_cs, (ocs_keys[oc_starts] % n_cs) // S
    tot_n, tot_y = np.zeros((len(oc_starts), S)), np.zeros((len(oc_starts), S))
    # (take, not fancy indexing, for every large gather: 1.3-14x faster at these sizes; numpy_idioms_bench.py)
    tot_n[oc_of_ocs, ocs_keys % S] = np.add.reduceat(n.take(order), ocs_starts)
    tot_y[oc_of_ocs, ocs_keys % S] = np.add.reduceat(y.take(order), ocs_starts)
    seen = np.zeros((len(oc_starts), S), dtype=bool)
    seen[oc_of_ocs, ocs_keys % S] = True
    first = np.searchsorted(oc_owner, np.arange(n_owner + 1))
    oc_rank = (np.arange(len(oc_starts)) - first[oc_owner]).astype(index_type)
    cell_rank = np.empty(len(owner), dtype=index_type)
    cell_rank[order] = oc_rank[oc_of_ocs][_run_index(ocs_starts, len(order), index_type)]
    return _OwnerRows(oc_owner, oc_cluster, tot_n, tot_y, _row_sums(tot_n), _row_sums(tot_y), seen, first, cell_rank)


def _working_iccs(rows: _OwnerRows, clusters: _Clusters) -> tuple[float, tuple[float, float] | None]:
    """(icc, partner_icc) from the owners' pooled rates, summed from the (owner, cluster) rows, not the cells.

    Estimated once, so no test depends on which targets share its chunk (tests/stats/test_split_contrasts.py
    checks one chunk against many). Two-way the rows are (owner, intersection), whose codes sort like their own
    clusters: the own clusters' rows are runs of them, the partner clusters' are summed by code."""
    if clusters.own_of is None or clusters.partner_of is None:
        return _icc_of_rows(rows.owner, rows.cluster, rows.n_pooled, rows.y_pooled, len(clusters.labels)), None
    own_of, partner_of = clusters.own_of, clusters.partner_of
    own = own_of[rows.cluster]
    runs = _segments(rows.owner * (int(own_of.max()) + 1) + own)
    icc = _icc_of_rows(
        rows.owner[runs],
        own[runs],
        np.add.reduceat(rows.n_pooled, runs),
        np.add.reduceat(rows.y_pooled, runs),
        int(own_of.max()) + 1,
    )
    partner_icc = (
        _icc_of_owners(rows.owner, partner_of[rows.cluster], rows.y_pooled, rows.n_pooled),
        _icc_of_rows(rows.owner, rows.cluster, rows.n_pooled, rows.y_pooled, len(clusters.labels)),
    )
    return icc, partner_icc


def _cell_targets(
    owner: np.ndarray,
    key: np.ndarray,
    target_owner: np.ndarray,
    target_key: np.ndarray,
    n_owner: int,
    index_type: IndexType,
) -> np.ndarray:
    """The target (position) each cell's own key makes it part of, -1 for none; the first of equal targets wins."""
    n_keys = int(max(key.max(initial=-1), target_key.max(initial=-1))) + 1
    target_code = target_owner.astype(np.int64) * n_keys + target_key
    cell_code = owner * n_keys + key
    if n_owner * n_keys <= 4 * len(cell_code) + 1_000_000:  # a lookup table
        lookup = np.full(n_owner * n_keys, -1, dtype=index_type)
        lookup[target_code[::-1]] = np.arange(len(target_code))[::-1]
        if cell_code.min() >= 0:
            return lookup[cell_code]
        return np.where(cell_code >= 0, lookup[np.maximum(cell_code, 0)], -1)
    by_code = np.argsort(target_code, kind="stable")
    pos = np.minimum(np.searchsorted(target_code[by_code], cell_code), len(by_code) - 1)
    return np.where(target_code[by_code][pos] == cell_code, by_code[pos], -1).astype(index_type)


def _target_modes(
    cell_target: np.ndarray,
    owner: np.ndarray,
    side: np.ndarray,
    n: np.ndarray,
    target_owner: np.ndarray,
    n_sides: int,
    n_owner: int,
    match_sides: bool,
) -> np.ndarray:
    """How each target's contrast meets the sides (BALANCED ... CONFOUNDED), from its own and other offers on
    each side (sums of non-negative counts)."""
    S, T = n_sides, len(target_owner)
    mine = slice(None) if cell_target.min() >= 0 else cell_target >= 0  # (masks cost a pass each)
    own_side = np.bincount(
        cell_target[mine].astype(np.int64) * S + side[mine], weights=n[mine], minlength=T * S
    ).reshape(T, S)
    owner_side = np.bincount(owner * S + side, weights=n, minlength=n_owner * S).reshape(n_owner, S)
    other_side = owner_side[target_owner] - own_side
    parts_on = [(own_side[:, s] > 0).astype(np.int64) + (other_side[:, s] > 0) for s in (SIDE_LEFT, SIDE_RIGHT)]
    return side_modes(parts_on[0], parts_on[1], 2, contrast=match_sides)


def _chunk_cells(
    rows: _OwnerRows,
    cell_target: np.ndarray,
    target_owner: np.ndarray,
    n_owner: int,
    max_rows: int,
    index_type: IndexType,
) -> Iterator[tuple[int, int, np.ndarray]]:
    """Targets in chunks of consecutive positions, about `max_rows` (owner cluster, side) rows each: per chunk
    (first target, end, its cells)."""
    sizes = np.bincount(rows.owner, weights=rows.seen.sum(axis=1), minlength=n_owner)[target_owner]
    chunk = (np.cumsum(sizes) - 1) // max_rows
    chunk_ends = np.searchsorted(chunk, np.unique(chunk), side="right")
    T = len(target_owner)
    by_target = _radix_order(cell_target + 1) if T < 2**16 - 1 else np.argsort(cell_target, kind="stable")
    by_target = by_target.astype(index_type, copy=False)
    bounds = np.asarray(np.searchsorted(cell_target[by_target], np.r_[0, chunk_ends]))  # cells of no target: before 0
    starts = np.r_[0, chunk_ends[:-1]].tolist()
    for c, (lo, hi) in enumerate(zip(starts, chunk_ends.tolist())):
        yield lo, hi, by_target[bounds[c] : bounds[c + 1]].astype(np.int64)  # take is slow with int32


@dataclass(frozen=True)
class _Chunk:
    """A chunk's targets and their rows: per row (a target's owner's (cluster, side) row) the target's own
    key's sums and the other keys' (its owner's totals minus its own)."""

    targets: np.ndarray  # target positions with any rows
    row_target: np.ndarray  # each row's index into targets
    row: np.ndarray  # each row's owner row
    own: tuple[np.ndarray, np.ndarray]  # (n, y): one column per side, or one pooled column
    other: tuple[np.ndarray, np.ndarray]
    pooled_only: bool


def _chunk(
    lo: int,
    hi: int,
    cells_c: np.ndarray,
    rows: _OwnerRows,
    target_owner: np.ndarray,
    cell_target: np.ndarray,
    side: np.ndarray,
    y: np.ndarray,
    n: np.ndarray,
    modes: np.ndarray,
    index_type: IndexType,
) -> _Chunk:
    first = rows.first
    t = np.arange(lo, hi)
    t = t[first[target_owner[t] + 1] > first[target_owner[t]]]  # owners without cells: no test
    count = first[target_owner[t] + 1] - first[target_owner[t]]
    row_start = np.r_[0, np.cumsum(count)[:-1]]
    row_target = np.repeat(np.arange(len(t)), count)  # index into t
    row_oc = np.repeat(first[target_owner[t]] - row_start, count) + np.arange(int(count.sum()))
    position = np.full(hi - lo, -1, dtype=index_type)  # every cell's target is in t (its owner has cells)
    position[t - lo] = np.arange(len(t))
    at = row_start[position[cell_target.take(cells_c) - lo]] + rows.cell_rank.take(cells_c)
    # a chunk of pooled targets only (no sides known, e.g. imported answers) is summed over sides at once:
    # one column per row instead of S to build and then add up
    pooled_only = bool((modes[t] == POOLED).all())
    width = 1 if pooled_only else rows.n.shape[1]
    if not pooled_only:
        at = at * width + side.take(cells_c)
    own_n = np.bincount(at, weights=n.take(cells_c), minlength=len(row_oc) * width).reshape(-1, width)
    own_y = np.bincount(at, weights=y.take(cells_c), minlength=len(row_oc) * width).reshape(-1, width)
    del at
    if pooled_only:
        chunk_n, chunk_y = rows.n_pooled.take(row_oc)[:, None], rows.y_pooled.take(row_oc)[:, None]
    else:
        chunk_n, chunk_y = rows.n.take(row_oc, axis=0), rows.y.take(row_oc, axis=0)
    return _Chunk(t, row_target, row_oc, (own_n, own_y), (chunk_n - own_n, chunk_y - own_y), pooled_only)


def _mode_sums(mode: int, parts: list[list[np.ndarray]], pooled_only: bool) -> tuple[np.ndarray, list[np.ndarray]]:
    """(coefficients, [n sums, y sums]) of one side mode's contrast from the [[own, other] n, [own, other] y]."""
    if mode == BALANCED:  # components own left, own right, other left, other right
        sums = []
        for own, other in parts:
            both = np.empty((len(own), 4))
            both[:, :2], both[:, 2:] = own[:, :2], other[:, :2]
            sums.append(both)
        return np.array([0.5, 0.5, -0.5, -0.5]), sums
    if mode in (LEFT_ONLY, RIGHT_ONLY):  # own and other on the one side both were seen on
        s = SIDE_LEFT if mode == LEFT_ONLY else SIDE_RIGHT
        return np.array([1.0, -1.0]), [np.column_stack([p[:, s] for p in part]) for part in parts]
    if pooled_only:  # already summed over sides
        return np.array([1.0, -1.0]), [np.concatenate(part, axis=1) for part in parts]
    # pooled over every side, unknown included
    return np.array([1.0, -1.0]), [np.column_stack([_row_sums(p) for p in part]) for part in parts]


def _test_chunk(
    ch: _Chunk,
    modes: np.ndarray,
    rows: _OwnerRows,
    clusters: _Clusters,
    icc: float,
    partner_icc: tuple[float, float] | None,
    alpha: float,
) -> list[pd.DataFrame]:
    """The chunk's targets tested, one `cluster_contrasts` call per side mode present."""
    t = ch.targets
    out = []
    for mode in (BALANCED, LEFT_ONLY, RIGHT_ONLY, POOLED, CONFOUNDED):
        pick = modes[t] == mode
        if not pick.any():
            continue
        parts: list[list[np.ndarray]] = [[ch.own[0], ch.other[0]], [ch.own[1], ch.other[1]]]
        picked: slice | np.ndarray = slice(None)
        if not pick.all():  # (compress: several times faster than a boolean index of a 2-D array)
            mask = picked = pick[ch.row_target]
            parts = [[p.compress(mask, axis=0) for p in part] for part in parts]
        a, sums = _mode_sums(mode, parts, ch.pooled_only)
        row_tgt = (np.cumsum(pick) - 1)[ch.row_target[picked]]
        row_cluster = rows.cluster[ch.row[picked]]
        tab = _Table.from_sums(a, sums[0], sums[1], row_tgt, row_cluster, pd.Index(t[pick]), clusters.labels)
        own_of, partner_of = clusters.own_of, clusters.partner_of
        tables = tab if own_of is None or partner_of is None else _crossed_tables(tab, own_of, partner_of)
        coef: dict[Hashable, float] = {i: float(v) for i, v in enumerate(a)}
        res = cluster_contrasts(tables, coef, 0.0, alpha, icc=icc, partner_icc=partner_icc).set_index("target")
        if "n_partner_clusters" not in res.columns:
            res["n_partner_clusters"] = np.nan
        Ntg, Ytg = tab.totals()
        res = _mark_untested(res, _constant(Ytg, Ntg), FLAG_CONSTANT)
        if mode == CONFOUNDED:
            res = _mark_untested(res, np.ones(len(res), bool), FLAG_POSITION_CONFOUNDED)
        out.append(res.assign(side_balanced=mode == BALANCED, sides=SIDES_TEXT[mode]))
    return out


def split_contrasts(
    cells: pd.DataFrame,
    owner: np.ndarray,
    key: np.ndarray,
    target_owner: np.ndarray,
    target_key: np.ndarray,
    alpha: float = 0.05,
    max_rows: int = 4_000_000,
    two_way: bool = True,
    match_sides: bool = True,
) -> pd.DataFrame:
    """Per target (owner o, key k): side-balanced rate of o's offers with key k minus with any other key.

    cells: columns cluster, side, y, n, one row per (owner, key, cluster, side) (with an optional
    partner_cluster column: per (owner, key, cluster, partner_cluster, side), tested two-way
    unless `two_way` is False). PairComp: owner
    identity, key partner; log-odds: owner identity, key context. The working icc is estimated
    once from the owners' pooled rates (two-way: the own, the partner and the intersection clusters'),
    and targets are tested in chunks of about `max_rows` (owner cluster, side) rows, so memory stays
    bounded and no result depends on the chunks. Returns `side_balanced_contrasts` rows indexed by
    target position (0 .. len(target_owner) - 1): the same as testing, per target, every cell of its owner
    with part 0 for the target's key and 1 otherwise (tests/stats/test_split_contrasts.py).

    Every estimator downstream uses only (target, cluster, side, part) sums of y and n, so a target's "other
    keys" part is its owner's (cluster, side) total minus the key's own cells. The owner's totals are summed
    once (`_owner_rows`); a target's rows are its owner's clusters with those totals, its own cells
    subtracted (`_chunk`). The counts are whole numbers, so the differences are exact and the results equal
    the expanded cells'.
    """
    if cells.empty or len(target_owner) == 0:
        return side_balanced_contrasts(cells.iloc[:0], {0: 1.0, 1: -1.0}, 0.0, alpha)
    owner = np.asarray(owner).astype(np.int64, copy=False)
    y, n = cells["y"].to_numpy(dtype=float), cells["n"].to_numpy(dtype=float)
    code, clusters = _clusters(cells, two_way and "partner_cluster" in cells.columns)
    side = cells["side"].to_numpy().astype(np.int64, copy=False)
    S = max(int(side.max()) + 1, 2)
    n_owner = int(max(owner.max(), target_owner.max())) + 1
    # Per-cell indices live through the chunk loop: int32 where they fit (at 10M answers 50 MB each, not 100)
    index_type: IndexType = np.int32 if max(len(cells), len(target_owner)) < 2**31 - 1 else np.int64
    rows = _owner_rows(owner, code, side, y, n, S, n_owner, index_type)
    del code  # (at 10M answers each whole-cell array is ~100 MB: the ones not needed below go early)
    icc, partner_icc = _working_iccs(rows, clusters)
    cell_target = _cell_targets(owner, key, target_owner, target_key, n_owner, index_type)
    modes = _target_modes(cell_target, owner, side, n, target_owner, S, n_owner, match_sides)
    out = []
    for lo, hi, cells_c in _chunk_cells(rows, cell_target, target_owner, n_owner, max_rows, index_type):
        ch = _chunk(lo, hi, cells_c, rows, target_owner, cell_target, side, y, n, modes, index_type)
        out += _test_chunk(ch, modes, rows, clusters, icc, partner_icc, alpha)
    return pd.concat(out)


def _crossed_tables(
    inter: _Table, own_of: np.ndarray, partner_of: np.ndarray
) -> _Table | tuple[_Table, _Table, _Table]:
    """The (own, partner, intersection) tables of a two-way test from its intersection table (rows: target,
    (own, partner) cluster, whose codes sort like the own clusters), as `cluster_contrasts` builds them from cells:
    the own clusters' sums are runs of the intersection rows, the partner clusters' a sort within each target.
    Where no row's partner differs from its own cluster the test is one-way, on the own clusters."""
    own, partner = own_of[inter.cluster_code], partner_of[inter.cluster_code]
    targets, n_own, n_partner = inter.targets, int(own_of.max()) + 1, int(partner_of.max()) + 1

    def summed(key: np.ndarray, code: np.ndarray, n_codes: int, order: np.ndarray) -> _Table:
        """The rows taken in `order` (by target, then key) and summed over runs of equal key."""
        starts = _segments(key[order])
        first = order[starts]
        n, y = np.add.reduceat(inter.n[order], starts), np.add.reduceat(inter.y[order], starts)
        return _Table.from_sums(
            inter.a, n, y, inter.cluster_target[first], code[first], targets, pd.RangeIndex(n_codes)
        )

    rows = np.arange(len(own))  # (by target, then own cluster already)
    tab_o = summed(inter.cluster_target * n_own + own, own, n_own, rows)
    if not (own != partner).any():
        return tab_o
    key_p = inter.cluster_target * n_partner + partner
    tab_p = summed(key_p, partner, n_partner, np.argsort(key_p, kind="stable"))
    return tab_o, tab_p, inter

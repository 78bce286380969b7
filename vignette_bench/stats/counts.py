"""Counting answers per cell: name codes (Vocab), summing over cells, and the CountStore.

A cell is a combination of key codes (identity and context, plus partner, direction, trait
dimension, group, cluster or side where the measure needs them); per cell the store keeps the
VALUE_NAMES sums, never rows, so memory grows with the number of cells.

Cluster and side (for the cluster-robust tests of `vignette_bench.stats.clustered`): the cluster
of an offer is its entry of `candidate_clusters` (the render key), else the row's `group` (the
pair image), else the row itself (answers assumed independent; then cells grow with rows). The
side is the entry of `candidate_sides`: SIDE_LEFT, SIDE_RIGHT or SIDE_UNKNOWN ("" or absent).
With the key ``other`` a cell is also keyed by the identity of the other person of a two-person
question, stored as its identity code + 1 (0: no other person), for the position model of
`vignette_bench.stats.position`.
With the key ``pcluster`` a cell is also keyed by the cluster of the *other* person of a
two-person question (with `candidate_clusters`: the partner's render), for the two-way
(own x partner) cluster-robust tests; where there is no other person, or no render keys, it is
the offer's own cluster (then the two-way test reduces to the one-way one).
In a cell, ``selected`` is y (selections, or probability sums in score mode), ``offered`` is n
and ``offered_invalid`` the refusals.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from vignette_bench.stats import distributions
from vignette_bench.stats.arrow_input import column, list_values
from vignette_bench.stats.inference import wilson_interval

# Sums kept per cell: offers with a valid answer, selections (or expected selections), their
# squares (for the per-answer variance), the chance rate's numerator (1/k per offer among k
# candidates), and offers in refused or invalid questions.
VALUE_NAMES = ("offered", "selected", "selected_sq", "inv_k", "offered_invalid")
SIDE_LEFT, SIDE_RIGHT, SIDE_UNKNOWN = 0, 1, 2
SIDE_NAMES = ("left", "right", "")
# How an offer's cluster was found (the summary's cluster_unit).
CLUSTER_UNITS = ("candidate_clusters", "group", "rows")


class Vocab:
    """Grows a name -> code table across batches; "" and null map to -1."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self._arrow: pa.Array | None = None
        # The codes of the last dictionary seen: a parquet file's batches repeat one dictionary (at 10M
        # answers the pair images' 166,667 names in every batch), so it is encoded once.
        self._last_dictionary: tuple[pa.Array, np.ndarray] | None = None

    def encode(self, arr: Any, unique: bool = False) -> np.ndarray:
        """Codes of an Arrow array of names (plain, chunked or dictionary-encoded); new names get new codes."""
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if pa.types.is_dictionary(arr.type):
            # a dictionary's values are unique: encoding them must not hash them again (that recursed)
            dict_codes = self._dictionary_codes(arr.dictionary)
            if arr.null_count == 0:
                return dict_codes[arr.indices.to_numpy(zero_copy_only=False)]
            idx = pc.fill_null(arr.indices, 0).to_numpy(zero_copy_only=False)
            out = dict_codes[idx]
            out[np.asarray(arr.is_null())] = -1
            return out
        if not pa.types.is_string(arr.type):
            arr = arr.cast(pa.string())
        if len(arr) > 4096 and not unique:
            # One hash pass, then only the (small) dictionary is looked up.
            return self.encode(pc.dictionary_encode(arr))
        self._add_names(pc.unique(arr))  # also when `unique`: Arrow does not forbid repeats in a dictionary
        codes = pc.index_in(arr, value_set=self._arrow)
        return pc.fill_null(codes, -1).to_numpy(zero_copy_only=False).astype(np.int64)

    def _dictionary_codes(self, dictionary: pa.Array) -> np.ndarray:
        last = self._last_dictionary
        if last is not None and (dictionary is last[0] or dictionary.equals(last[0])):
            return last[1]  # names only ever get added, so earlier codes stay valid
        codes = self.encode(dictionary, unique=True)
        self._last_dictionary = (dictionary, codes)
        return codes

    def _add_names(self, distinct: pa.Array) -> None:
        """Give codes, in order of appearance, to the names in `distinct` (no repeats) not seen before; "" and null get none."""
        if self._arrow is not None and len(self.names):
            distinct = distinct.filter(pc.invert(pc.is_in(distinct, value_set=self._arrow)))
        new = distinct.filter(pc.not_equal(distinct, "")).to_pylist()  # a null compares null: dropped
        if new or self._arrow is None:
            self.index.update(zip(new, range(len(self.names), len(self.names) + len(new))))
            self.names.extend(new)
            self._arrow = pa.array(self.names, type=pa.string())

    def decode(self, codes: np.ndarray) -> list[str]:
        """Names of codes; -1 decodes to ""."""
        names = np.asarray(self.names + [""], dtype=object)
        return names[np.where(np.asarray(codes) < 0, len(self.names), codes)].tolist()


def aggregate(
    keys: list[np.ndarray], dims: list[int], values: list[np.ndarray]
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Sum `values` over identical key tuples, in key order: dense bincount when the key space is small, sorting otherwise."""
    dims = [max(int(x), 1) for x in dims]
    size = int(np.prod([float(x) for x in dims]))
    if len(keys[0]) == 0:
        return [k[:0] for k in keys], [v[:0] for v in values]
    if float(np.prod([float(x) for x in dims])) < 2.0**62:
        flat = np.ravel_multi_index(keys, dims)
        if size <= 4 * len(flat) + 1_000_000:
            present = np.flatnonzero(np.bincount(flat, minlength=size))
            sums = [np.bincount(flat, weights=v, minlength=size)[present] for v in values]
            return _unravel(present, dims), sums
        # Sorting, not hashing: the store's chunks are each sorted, so their concatenation is a few sorted
        # runs that a stable sort merges (at 10M answers 13M cells: 0.3 s against 4 s for pd.factorize).
        ordered = bool(np.all(flat[1:] >= flat[:-1]))  # chunks of disjoint, ordered cells: nothing to sort
        order = None if ordered else np.argsort(flat, kind="stable")
        flat = flat if order is None else flat[order]
        new = np.r_[True, flat[1:] != flat[:-1]]
        # segment sums by bincount of the segment index: most cells are a segment of one or two, where
        # reduceat's per-segment cost dominates; same sums, added in the same order
        segment = np.cumsum(new) - 1
        sums = [np.bincount(segment, weights=v if order is None else v[order]) for v in values]
        return _unravel(flat[new], dims), sums
    frame = pd.DataFrame({f"k{i}": k for i, k in enumerate(keys)} | {f"v{i}": v for i, v in enumerate(values)})
    g = frame.groupby([f"k{i}" for i in range(len(keys))], sort=False).sum().reset_index()
    return [g[f"k{i}"].to_numpy(np.int64) for i in range(len(keys))], [
        g[f"v{i}"].to_numpy(float) for i in range(len(values))
    ]


def _unravel(flat: np.ndarray, dims: list[int]) -> list[np.ndarray]:
    """np.unravel_index as int64 arrays, by repeated divmod (6x faster on 12M codes of 5 keys)."""
    out, rest = [], flat.astype(np.int64, copy=False)
    for d in reversed(dims[1:]):
        rest, code = np.divmod(rest, d)
        out.append(code)
    return [rest, *reversed(out)]


def _sorted_codes(flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(index of each element's value among the sorted distinct values, the sorted distinct values)."""
    order = np.argsort(flat, kind="stable")
    ordered = flat[order]
    new = np.r_[True, ordered[1:] != ordered[:-1]]
    codes = np.empty(len(flat), dtype=np.int64)
    codes[order] = np.cumsum(new) - 1
    return codes, ordered[new]


def aggregate_offers(
    keys: list[np.ndarray], dims: list[int], state: np.ndarray, weights: np.ndarray | None, k_offer: np.ndarray
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Count offers per cell: one unweighted bincount over (cell, state) for sampled answers."""
    out_keys, sums, coded = _aggregate_offers_coded(keys, dims, state, weights, k_offer)
    return (_unravel(out_keys[0], coded) if coded is not None else out_keys), sums


def _aggregate_offers_coded(
    keys: list[np.ndarray], dims: list[int], state: np.ndarray, weights: np.ndarray | None, k_offer: np.ndarray
) -> tuple[list[np.ndarray], list[np.ndarray], list[int] | None]:
    """`aggregate_offers`, with the cells as one flat code under the returned key sizes where they fit in
    int64 (else one array per key and None): the store keeps them flat until a view is read."""
    dims = [max(int(x), 1) for x in dims]
    size = float(np.prod([float(x) for x in dims]))
    coded: list[int] | None = None
    if len(state) == 0:
        return [k[:0].astype(np.int64) for k in keys], [np.zeros(0) for _ in VALUE_NAMES], None
    if size < 2.0**60:
        flat = np.ravel_multi_index(keys, dims)
        if size <= 4 * len(flat) + 1_000_000:
            counts = np.bincount(flat * 3 + state, minlength=3 * int(size)).reshape(-1, 3)
            present = np.flatnonzero(counts.any(axis=1))
            counts = counts[present]
            cell, uniq = None, present
        else:
            cell, uniq = _sorted_codes(flat)  # cells in key order, so that `aggregate` merges sorted chunks
            counts = np.bincount(cell * 3 + state, minlength=3 * len(uniq)).reshape(-1, 3)
        out_keys, coded = [uniq.astype(np.int64, copy=False)], dims
    else:
        frame = pd.DataFrame({f"k{i}": x for i, x in enumerate(keys)})
        cell = frame.groupby(list(frame.columns), sort=False).ngroup().to_numpy()
        first = np.unique(cell, return_index=True)[1]
        out_keys = [x[first].astype(np.int64) for x in keys]
        counts = np.bincount(cell * 3 + state, minlength=3 * len(first)).reshape(-1, 3)
    offered = (counts[:, 0] + counts[:, 1]).astype(float)
    if weights is None and k_offer.min() == k_offer.max():
        selected = counts[:, 1].astype(float)
        return (
            out_keys,
            [offered, selected, selected.copy(), offered / float(k_offer[0]), counts[:, 2].astype(float)],
            coded,
        )
    if cell is None:
        lookup = np.full(int(size), -1, dtype=np.int64)
        lookup[uniq] = np.arange(len(uniq))
        cell = lookup[flat]
    ok = state < 2
    x = (state == 1).astype(float) if weights is None else weights * ok
    m = len(offered)
    sums = [np.bincount(cell, weights=v, minlength=m) for v in (x, x * x, ok / k_offer)]
    return out_keys, [offered, sums[0], sums[1], sums[2], counts[:, 2].astype(float)], coded


def _recode(flat: np.ndarray, old: list[int], new: list[int]) -> np.ndarray:
    """Flat cell codes under key sizes `old` as codes under `new` (sizes only grow as names are seen).
    Only the keys before the longest run of unchanged trailing sizes are re-spread: when clusters are the
    leading keys, as in every view, that is one divmod, not a full unravel and ravel."""
    if old == new:
        return flat
    t = len(old)
    while t > 0 and old[t - 1] == new[t - 1]:
        t -= 1
    tail = math.prod(old[t:])
    head, rest = np.divmod(flat, tail) if tail > 1 else (flat, None)
    head = np.ravel_multi_index(tuple(_unravel(head, old[:t])), tuple(new[:t])) if t > 1 else head
    return head if rest is None else head * tail + rest


def _key_arrays(chunk: tuple[list[np.ndarray], list[np.ndarray], list[int] | None]) -> list[np.ndarray]:
    """A chunk's cells as one array per key."""
    keys, _, coded = chunk
    return _unravel(keys[0], coded) if coded is not None else keys


def _partner_clusters(cluster: np.ndarray, k: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Per offer the cluster of the other candidate of a two-candidate question; the offer's own otherwise."""
    out = cluster.copy()
    two = k[parent] == 2
    # offers of a row are contiguous and in candidate order: the partner of offer 2r is 2r + 1 and back
    first = np.flatnonzero(two & (np.r_[True, parent[1:] != parent[:-1]]))
    out[first], out[first + 1] = cluster[first + 1], cluster[first]
    return out


def _other_identities(ident: np.ndarray, k: np.ndarray, parent: np.ndarray) -> np.ndarray:
    """Per offer the identity code + 1 of the other candidate of a two-candidate question; 0 otherwise."""
    return _partner_clusters(ident + 1, k, parent) * (k[parent] == 2)


class CountStore:
    """Accumulates answer rows into counts per cell; memory grows with cells, not with rows.

    `keys` picks the cell: always identity and context, plus any of partner, direction,
    trait_dimension, group, cluster, side, which each module asks for. `columns` are the input
    columns the metric accepts; factuality's `target` and `correct` are read only when listed there.
    The cluster unit (see the module docstring) is fixed by the first batch; later batches must
    give the same columns.
    """

    MIN_COMPACT = 4_000_000  # cells held before the first merge of a view's chunks

    def __init__(
        self,
        keys: tuple[str, ...],
        columns: tuple[str, ...],
        views: tuple[tuple[str, ...], ...] = (),
        view_values: Mapping[tuple[str, ...], tuple[str, ...]] | None = None,
    ) -> None:
        self.keys = keys
        self.columns = columns
        # Each view is summed over its own keys (a subset of `keys`) as the batches arrive: a measure whose
        # tables need (identity, context) and (identity, cluster, side) cells keeps those two, not their
        # product, which at 10M answers has about as many cells as there are offers. `view_values` names
        # the sums a view keeps (default: all VALUE_NAMES); a test view needs only a few.
        self.views = views or (keys,)
        self.view_values = {v: tuple((view_values or {}).get(v, VALUE_NAMES)) for v in self.views}
        unknown = sorted({k for v in self.views for k in v} - set(keys))
        unknown += sorted({x for v in self.view_values.values() for x in v} - set(VALUE_NAMES))
        if unknown:
            raise ValueError(f"internal: {unknown} are not among the store's keys {list(keys)} or {VALUE_NAMES}")
        self.vocabs: dict[str, Vocab] = {
            "identity": Vocab(),
            "context": Vocab(),
            "direction": Vocab(),
            "trait_dimension": Vocab(),
            "group": Vocab(),
            "cluster": Vocab(),
        }
        # per view, chunks of (keys, sums, coded): keys is [one flat code per cell] under the key sizes
        # `coded`, or (None) one array per key where the key space is too large for int64 codes
        self.chunks: dict[tuple[str, ...], list[tuple[list[np.ndarray], list[np.ndarray], list[int] | None]]] = {
            v: [] for v in self.views
        }
        self.pending = dict.fromkeys(self.views, 0)
        self.compacted = dict.fromkeys(self.views, 0)
        self.wait = dict.fromkeys(self.views, 1.5)  # compact once pending passes compacted x wait (`_finish`)
        self.rows = 0
        self.invalid_rows = 0
        self.left = 0
        self.left_known = 0
        self.used_probabilities = 0
        self.cluster_unit: str | None = None
        self.n_cluster_codes = 0  # cluster codes are 0 .. n_cluster_codes - 1 (vocab codes or row numbers)
        self.sides_known = 0  # valid offers with a known side

    def dims(self) -> list[int]:
        """Number of codes seen so far per key (a partner is an identity)."""
        out = []
        for k in self.keys:
            if k in ("cluster", "pcluster"):
                out.append(self.n_cluster_codes)
            elif k == "side":
                out.append(len(SIDE_NAMES))
            elif k == "other":
                out.append(len(self.vocabs["identity"].names) + 1)  # code + 1; 0 = no other person
            else:
                out.append(len(self.vocabs["identity" if k == "partner" else k].names))
        return out

    def _unit(self, table: pa.Table) -> str:
        """The cluster unit of a batch; it must match earlier batches (codes of different units would mix)."""

        def given(name: str) -> bool:
            col = column(table, name) if name in self.columns else None
            return col is not None and col.null_count < len(col)

        unit = next(u for u in CLUSTER_UNITS if u == "rows" or given(u))
        if self.cluster_unit is None:
            self.cluster_unit = unit
        elif unit != self.cluster_unit:
            raise ValueError(
                f"this batch's clusters come from {unit!r} but earlier batches' from {self.cluster_unit!r}; "
                "give candidate_clusters (and group) for every batch or for none"
            )
        return unit

    def _row_clusters(self, table: pa.Table, unit: str, offset: int) -> np.ndarray:
        """Cluster code per row when the unit is the row's group or the row itself."""
        n = table.num_rows
        if unit == "rows":
            codes = np.arange(self.rows, self.rows + n, dtype=np.int64)
        else:
            col = column(table, "group")
            codes = self.vocabs["cluster"].encode(col) if col is not None else np.full(n, -1)
            if (codes < 0).any():
                r = int(np.flatnonzero(codes < 0)[0])
                raise ValueError(f"row {offset + r}: 'group' (the cluster of its answers) is empty or null")
        if len(codes):
            self.n_cluster_codes = max(self.n_cluster_codes, int(codes.max()) + 1)
        return codes

    def _offer_clusters(self, table: pa.Table, unit: str, parent: np.ndarray, k: np.ndarray, offset: int) -> np.ndarray:
        """Cluster code per offer (candidate): candidate_clusters entries, else the row's cluster."""
        if unit != "candidate_clusters":
            return self._row_clusters(table, unit, offset)[parent]
        col = column(table, "candidate_clusters")
        assert col is not None
        if not pa.types.is_list(col.type) and not pa.types.is_large_list(col.type):
            raise ValueError("'candidate_clusters' must be a list (one cluster id per candidate) in every row")
        length = pc.fill_null(pc.list_value_length(col), -1).to_numpy(zero_copy_only=False)
        bad = np.flatnonzero(length != k)
        if bad.size:
            r = int(bad[0])
            raise ValueError(
                f"row {offset + r}: candidate_clusters {col[r].as_py()} must give one cluster id per candidate "
                f"(candidates {int(k[r])})"
            )
        _, flat = list_values(col)
        codes = self.vocabs["cluster"].encode(flat)
        if (codes < 0).any():
            r = int(parent[np.flatnonzero(codes < 0)[0]])
            raise ValueError(f"row {offset + r}: a candidate_clusters entry is empty or null: {col[r].as_py()}")
        if len(codes):
            self.n_cluster_codes = max(self.n_cluster_codes, int(codes.max()) + 1)
        return codes

    def _offer_sides(self, table: pa.Table, parent: np.ndarray, k: np.ndarray, offset: int) -> np.ndarray:
        """Side code per offer from candidate_sides ("left", "right", "" or null); unknown without the column."""
        col = column(table, "candidate_sides")
        out = np.full(len(parent), SIDE_UNKNOWN, dtype=np.int64)
        if col is None or col.null_count == len(col):
            return out
        if not pa.types.is_list(col.type) and not pa.types.is_large_list(col.type):
            raise ValueError("'candidate_sides' must be a list ('left', 'right' or '' per candidate) in every row")
        length = pc.list_value_length(col).to_numpy(zero_copy_only=False)
        has = ~np.asarray(col.is_null())
        bad = np.flatnonzero(has & (np.nan_to_num(length, nan=-1) != k))
        if bad.size:
            r = int(bad[0])
            raise ValueError(
                f"row {offset + r}: candidate_sides {col[r].as_py()} must give one side per candidate "
                f"(candidates {int(k[r])}) or be null"
            )
        sparent, flat = list_values(col)
        flat = pc.fill_null(flat.cast(pa.string()), "")
        codes = pc.index_in(flat, value_set=pa.array(SIDE_NAMES)).to_numpy(zero_copy_only=False)
        if np.isnan(codes.astype(float)).any():
            r = int(sparent[np.flatnonzero(np.isnan(codes.astype(float)))[0]])
            raise ValueError(f"row {offset + r}: candidate_sides {col[r].as_py()} must be 'left', 'right' or ''")
        # rows with a side list hold their offers contiguously, in the same order as `parent`
        out[has[parent]] = codes.astype(np.int64)
        return out

    def add_table(self, table: pa.Table, use_probabilities: bool = True) -> None:
        """Count one Arrow table of answers (contract column names); errors name the offending row."""
        offset = self.rows
        rest = self._split_factuality(table)
        if rest is None:
            return
        table, n = rest, rest.num_rows
        cand, k, parent, ident = self._candidates(table, offset)
        hit, valid = self._selected(table, cand, parent, ident, n, offset)
        x, valid, store_weights = self._probability_weights(table, use_probabilities, hit, valid, k, parent, n, offset)
        # Per offer: 0 = valid answer, not chosen; 1 = chosen; 2 = question refused/invalid.
        state = np.where(valid[parent], hit.astype(np.int8), np.int8(2)).astype(np.int8)
        weights = x if store_weights else None
        k_offer = k[parent]
        cols = self._key_columns(table, ident, parent, k, offset)
        target = column(table, "target") if "target" in self.columns else None
        if "partner" in self.keys:
            # "With i2" and "without i2" split i1's questions only when each offers exactly two people.
            odd = np.flatnonzero(k != 2)
            if odd.size:
                r = int(odd[0])
                raise ValueError(
                    f"row {offset + r}: PairComp needs exactly two candidates per question, got {cand[r].as_py()}; filter such rows out"
                )
            cols["partner"] = ident.reshape(-1, 2)[:, ::-1].ravel()
        elif target is not None:
            # Factuality: only the offer of the identity the question asks about counts.
            tcodes = self.vocabs["identity"].encode(target)
            keep = (ident == tcodes[parent]) | (tcodes[parent] < 0)  # rows without a target keep every offer
            missing = np.flatnonzero(np.bincount(parent, weights=keep, minlength=n) == 0)
            if missing.size:
                r = int(missing[0])
                raise ValueError(
                    f"row {offset + r}: target {target[r].as_py()!r} is not among candidates {cand[r].as_py()}"
                )
            state, k_offer = state[keep], k_offer[keep]
            weights = None if weights is None else weights[keep]
            cols = {key: v[keep] for key, v in cols.items()}
        self._finish(table, valid, cols, state, weights, k_offer)

    def _split_factuality(self, table: pa.Table) -> pa.Table | None:
        """Count the rows that name a target (factuality) and return the rest; None when nothing is left."""
        if table.num_rows == 0:
            return None
        if (
            "correct" in self.columns
            and column(table, "correct") is not None
            and (named_target := column(table, "target")) is not None
        ):
            # Rows naming a target are factuality rows; the rest (target "") are ordinary questions.
            named = np.asarray(pc.fill_null(pc.not_equal(named_target.cast(pa.string()), ""), False))
            if named.all():
                self._add_factuality(table)
                return None
            rest = table.drop_columns(["target", "correct"])
            if named.any():
                self._add_factuality(table.filter(pa.array(named)))
                rest = rest.filter(pa.array(~named))
            return rest if rest.num_rows else None
        return table

    def _candidates(self, table: pa.Table, offset: int) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray]:
        """The offers: the candidates column, candidates per row (k), each offer's row and identity code."""
        cand = column(table, "candidates")
        if cand is None:
            raise ValueError("input has no 'candidates' column (the identities offered in each question)")
        bad = np.flatnonzero(
            np.asarray(cand.is_null())
            | (pc.fill_null(pc.list_value_length(cand), 0).to_numpy(zero_copy_only=False) == 0)
        )
        if bad.size:
            raise ValueError(
                f"row {offset + bad[0]}: 'candidates' is empty or null; every question offers at least one identity "
                "(questions whose options are activities, e.g. factuality what_doing, belong in selection_frequency with target/correct)"
            )
        k = pc.list_value_length(cand).to_numpy(zero_copy_only=False).astype(np.int64)
        parent, flat = list_values(cand)
        ident = self.vocabs["identity"].encode(flat)
        if (ident < 0).any():
            row = parent[np.flatnonzero(ident < 0)[0]]
            raise ValueError(f"row {offset + row}: a candidate identity is empty or null: {cand[row].as_py()}")
        return cand, k, parent, ident

    def _selected(self, table: pa.Table, cand: Any, parent: np.ndarray, ident: np.ndarray, n: int, offset: int):
        """Per offer whether it was the one chosen, and per row whether the answer is valid."""
        sel_col = column(table, "selected")
        if sel_col is None:
            raise ValueError("input has no 'selected' column (the identity chosen, '' for a refusal or invalid answer)")
        sel = self.vocabs["identity"].encode(sel_col)
        hit = ident == sel[parent]
        hits = np.bincount(parent, weights=hit, minlength=n)
        valid = sel >= 0
        wrong = np.flatnonzero(valid & (hits != 1))
        if wrong.size:
            r = wrong[0]
            raise ValueError(
                f"row {offset + r}: selected {sel_col[r].as_py()!r} is not exactly once among "
                f"candidates {cand[r].as_py()}; map answers outside the options to '' (invalid)"
            )
        return hit, valid

    def _probability_weights(self, table, use_probabilities, hit, valid, k, parent, n, offset):
        """Each offer's weight: 1/0 from the choice, or its normalised probability (score mode) where given."""
        x = hit.astype(float)
        store_weights = False
        prob = column(table, "probabilities") if use_probabilities else None
        if prob is not None and prob.null_count < len(prob):
            plen = pc.list_value_length(prob).to_numpy(zero_copy_only=False)
            has_p = ~np.asarray(prob.is_null())
            mismatch = np.flatnonzero(has_p & (np.nan_to_num(plen, nan=-1) != k))
            if mismatch.size:
                r = mismatch[0]
                raise ValueError(
                    f"row {offset + r}: {int(plen[r])} probabilities for {int(k[r])} candidates; give one per candidate or null"
                )
            pparent, pflat = list_values(prob)
            pv = pc.fill_null(pflat, np.nan).to_numpy(zero_copy_only=False).astype(float)
            psum = np.bincount(pparent, weights=np.nan_to_num(pv, nan=0.0), minlength=n)
            badp = np.flatnonzero(
                has_p & ((np.bincount(pparent, weights=~np.isfinite(pv) | (pv < 0), minlength=n) > 0) | (psum <= 0))
            )
            if badp.size:
                r = badp[0]
                raise ValueError(
                    f"row {offset + r}: probabilities {prob[r].as_py()} must be finite, >= 0 and not all 0"
                )
            in_p = has_p[parent]
            x[in_p] = pv / psum[pparent]
            valid = valid | has_p
            self.used_probabilities += int(has_p.sum())
            store_weights = bool(has_p.any())
        return x, valid, store_weights

    def _key_columns(self, table: pa.Table, ident: np.ndarray, parent: np.ndarray, k: np.ndarray, offset: int):
        """The cell keys of every offer: identity, cluster (and the partner's), side, context and the rest."""
        cols: dict[str, np.ndarray] = {"identity": ident}
        if "cluster" in self.keys:
            unit = self._unit(table)
            cols["cluster"] = self._offer_clusters(table, unit, parent, k, offset)
            if "pcluster" in self.keys:
                cols["pcluster"] = (
                    _partner_clusters(cols["cluster"], k, parent) if unit == "candidate_clusters" else cols["cluster"]
                )
        if "side" in self.keys:
            cols["side"] = self._offer_sides(table, parent, k, offset)
        if "other" in self.keys:
            cols["other"] = _other_identities(ident, k, parent)
        for name in ("context", "direction", "trait_dimension", "group"):
            if name not in self.keys:
                continue
            col = column(table, name)
            if col is None:
                if name == "group":
                    raise ValueError("internal: group key without group column")
                raise ValueError(f"input has no {name!r} column; see the metric card for the input contract")
            codes = self.vocabs[name].encode(col)
            if name != "group" and (codes < 0).any():
                r = int(np.flatnonzero(codes < 0)[0])
                raise ValueError(f"row {offset + r}: {name!r} is empty or null")
            if name == "direction":
                allowed = {self.vocabs["direction"].index.get(v, -2) for v in ("high", "low")}
                if not set(np.unique(codes).tolist()) <= allowed:
                    r = int(np.flatnonzero(~np.isin(codes, list(allowed)))[0])
                    raise ValueError(f"row {offset + r}: direction {col[r].as_py()!r} must be 'high' or 'low'")
            if name == "group":
                codes = np.where(codes < 0, len(self.vocabs["group"].names), codes)
            cols[name] = codes[parent]
        return cols

    def _row_codes(self, table: pa.Table, name: str, offset: int) -> np.ndarray:
        col = column(table, name)
        if col is None:
            raise ValueError(f"input has no {name!r} column; see the metric card for the input contract")
        codes = self.vocabs[name].encode(col)
        if (codes < 0).any():
            r = int(np.flatnonzero(codes < 0)[0])
            raise ValueError(f"row {offset + r}: {name!r} is empty or null")
        return codes

    def _add_factuality(self, table: pa.Table) -> None:
        """Factuality rows: one offer of the identity asked about (`target`), chosen when `correct`."""
        offset = self.rows
        target, correct = column(table, "target"), column(table, "correct")
        if target is None:
            raise ValueError(
                "'correct' needs 'target' (or 'target_identity'): the identity each factuality question asks about"
            )
        if correct is None:
            raise ValueError("factuality rows need 'correct': whether each answer was right (null = invalid)")
        ident = self.vocabs["identity"].encode(target)
        if (ident < 0).any():
            r = int(np.flatnonzero(ident < 0)[0])
            raise ValueError(
                f"row {offset + r}: 'target' is empty; with 'correct', give only factuality rows (paradigm == 'factuality')"
            )
        cv = pc.fill_null(correct.cast(pa.int8()), -1).to_numpy(zero_copy_only=False).astype(np.int64)
        state = np.where(cv < 0, 2, cv).astype(np.int8)  # null correct = refused/invalid
        cols = {"identity": ident, "context": self._row_codes(table, "context", offset)}
        if "cluster" in self.keys:
            cols["cluster"] = self._fact_clusters(table, ident, offset)
            if "pcluster" in self.keys:
                cols["pcluster"] = cols["cluster"]  # one person asked about: one-way
        if "side" in self.keys:
            cols["side"] = np.full(len(cv), SIDE_UNKNOWN, dtype=np.int64)  # a factuality answer has no side
        if "other" in self.keys:
            cols["other"] = np.zeros(len(cv), dtype=np.int64)  # one person asked about
        # The number of options is not part of the contract, so chance is undefined (NaN) here.
        self._finish(table, cv >= 0, cols, state, None, np.full(len(cv), np.nan))

    def _fact_clusters(self, table: pa.Table, ident: np.ndarray, offset: int) -> np.ndarray:
        """Factuality: the target's candidate_clusters entry, else the row's group, else the row."""
        unit = self._unit(table)
        if unit != "candidate_clusters":
            return self._row_clusters(table, unit, offset)
        cand, clus = column(table, "candidates"), column(table, "candidate_clusters")
        if cand is None or clus is None:
            raise ValueError("factuality rows with candidate_clusters need 'candidates' to find the target's cluster")
        parent, flat = list_values(cand)
        cparent, cflat = list_values(clus)
        if len(cparent) != len(parent) or (cparent != parent).any():
            r = int(parent[0]) if len(parent) else 0
            raise ValueError(f"row {offset + r}: candidate_clusters must give one cluster id per candidate")
        hit = np.flatnonzero(self.vocabs["identity"].encode(flat) == ident[parent])
        out = np.full(len(ident), -1, dtype=np.int64)
        out[parent[hit]] = self.vocabs["cluster"].encode(cflat.take(pa.array(hit)))
        group = column(table, "group")
        if (out < 0).any() and group is not None:  # e.g. what_doing rows offer activities, not people
            out = np.where(out < 0, self.vocabs["cluster"].encode(group), out)
        if (out < 0).any():
            r = int(np.flatnonzero(out < 0)[0])
            raise ValueError(
                f"row {offset + r}: the target has no candidate_clusters entry (not among candidates) and no 'group'"
            )
        self.n_cluster_codes = max(self.n_cluster_codes, int(out.max()) + 1)
        return out

    def _finish(
        self,
        table: pa.Table,
        valid: np.ndarray,
        cols: dict[str, np.ndarray],
        state: np.ndarray,
        weights: np.ndarray | None,
        k_offer: np.ndarray,
    ) -> None:
        """Count rows, refusals and left choices; aggregate this batch's offers into a chunk of cells."""
        self.rows += table.num_rows
        self.invalid_rows += int((~valid).sum())
        left = column(table, "chose_left")
        if left is not None:
            lv = np.asarray(pc.fill_null(left.cast(pa.int8()), -1).to_numpy(zero_copy_only=False))
            known = (lv >= 0) & valid
            self.left_known += int(known.sum())
            self.left += int((lv[known] == 1).sum())
        if "side" in self.keys:
            self.sides_known += int(((cols["side"] != SIDE_UNKNOWN) & (state < 2)).sum())
        dims = self._key_dims()
        for view in self.views:
            chunks = self.chunks[view]
            keys, sums, coded = _aggregate_offers_coded(
                [cols[k] for k in view], [dims[k] for k in view], state, weights, k_offer
            )
            chunks.append((keys, [sums[VALUE_NAMES.index(v)] for v in self.view_values[view]], coded))
            self.pending[view] += len(keys[0])
            # merging sorted chunks is cheap, so compact often: once the batches' new cells pass half the
            # compacted ones (`pending` counts both), or later after merges that did not shrink (`_compact`)
            if self.pending[view] > max(self.compacted[view] * self.wait[view], self.MIN_COMPACT):
                self._compact(view)

    def _key_dims(self) -> dict[str, int]:
        """Codes per key as `aggregate` sees them (group has one more: the code of a missing group). Cluster keys
        get room to grow (the next power of two): new pair images arrive with every batch, and a chunk's flat
        codes must be recoded whenever a size changes (with exact sizes: at every compaction)."""
        out = {name: d + (1 if name == "group" else 0) for d, name in zip(self.dims(), self.keys)}
        for name in ("cluster", "pcluster"):
            if name in out:
                out[name] = 1 << max(out[name] - 1, 0).bit_length()
        return out

    def _compact(self, view: tuple[str, ...]) -> None:
        chunks = self.chunks[view]
        if len(chunks) > 1:
            all_dims = self._key_dims()
            dims = [max(all_dims[k], 1) for k in view]
            size = math.prod(dims)
            if size < 2**62:
                # one int64 code per cell instead of an array per key: the merge holds a fifth of the keys,
                # and the merged cells stay coded (unravelled once, when the view is read)
                codes = []
                for keys, _, coded in chunks:
                    codes.append(
                        _recode(keys[0], coded, dims) if coded is not None else np.ravel_multi_index(keys, dims)
                    )
                    keys.clear()
                merged_keys, key_dims = [np.concatenate(codes)], [size]
                del codes
            else:
                merged_keys, key_dims = self._merge([_key_arrays(c) for c in chunks]), dims
            values = self._merge([c[1] for c in chunks])
            chunks.clear()
            out_keys, sums = aggregate(merged_keys, key_dims, values)
            # A merge that barely shrinks (answers in image order: each batch brings new cells) is not worth
            # repeating soon: wait twice as long before the next, so such a stream merges a few times in all.
            self.wait[view] = 1.5 if len(out_keys[0]) < 0.9 * self.pending[view] else self.wait[view] * 2
            chunks.append((out_keys, sums, dims if size < 2**62 else None))
        self.compacted[view] = len(chunks[0][0][0]) if chunks else 0
        self.pending[view] = self.compacted[view]

    @staticmethod
    def _merge(arrays: list[list[np.ndarray]]) -> list[np.ndarray]:
        """Concatenate the chunks' i-th arrays for each i, letting each chunk's copy go once merged."""
        merged = []
        for i in range(len(arrays[0])):
            merged.append(np.concatenate([a[i] for a in arrays]))
            for a in arrays:
                a[i] = np.zeros(0)
        return merged

    def cells(self, view: tuple[str, ...] | None = None) -> pd.DataFrame:
        """One row per cell of `view` (default: all the store's keys): key codes and the summed values."""
        view = self.keys if view is None else view
        if view not in self.chunks:
            raise ValueError(f"internal: no view {view}; the store sums over {list(self.chunks)}")
        self._compact(view)
        chunks = self.chunks[view]
        names = self.view_values[view]
        if not chunks:
            return pd.DataFrame({**{k: np.zeros(0, np.int64) for k in view}, **{v: np.zeros(0) for v in names}})
        keys, values = _key_arrays(chunks[0]), chunks[0][1]
        if "pcluster" in view and self.cluster_unit != "candidate_clusters":
            # without render keys every partner cluster is the offer's own (`_key_columns`): one array for both
            # (at 10M answers log-odds' test view is 12.7M cells, ~100 MB per key)
            keys[view.index("pcluster")] = keys[view.index("cluster")]
        chunks[0] = (keys, values, None)  # unravelled once: a second read of the view reuses the arrays
        # copy=False: the store's arrays become the columns as they are (at 10M answers a consolidating copy
        # of a test view was ~1 GB)
        return pd.DataFrame({**dict(zip(view, keys)), **dict(zip(names, values))}, copy=False)

    def summary(self) -> dict[str, Any]:
        """Refusal/invalid rate and left-choice (position bias) rate with Wilson CIs and a binomial test."""
        unit = self.cluster_unit or "rows"
        out: dict[str, Any] = {
            "n_rows": self.rows,
            "n_valid": self.rows - self.invalid_rows,
            "n_probability_rows": self.used_probabilities,
            "answer_mode": "score" if self.used_probabilities else "choice",
            "cluster_unit": unit,
            "clusters": {
                "candidate_clusters": "clusters: candidate_clusters (each candidate's render)",
                "group": "clusters: group (pair images)",
                "rows": "clusters: rows (independent answers assumed)",
            }[unit],
        }
        lo, hi = wilson_interval(self.invalid_rows, self.rows)
        out["invalid_rate"] = 100.0 * self.invalid_rows / self.rows if self.rows else None
        out["invalid_rate_ci"] = [100.0 * float(lo), 100.0 * float(hi)] if self.rows else None
        out["n_left_known"] = self.left_known
        if self.left_known:
            lo, hi = wilson_interval(self.left, self.left_known)
            out["left_choice_rate"] = 100.0 * self.left / self.left_known
            out["left_choice_ci"] = [100.0 * float(lo), 100.0 * float(hi)]
            out["left_choice_p_value"] = distributions.binom_two_sided_half(self.left, self.left_known)
        else:
            out["left_choice_rate"] = None
            out["left_choice_ci"] = None
            out["left_choice_p_value"] = 1.0
        return out

"""Counting answers per cell: name codes (Vocab), summing over cells, and the CountStore.

A cell is a combination of key codes (identity and context, plus partner, direction, trait
dimension or group where the measure needs them); per cell the store keeps the VALUE_NAMES sums,
never rows, so memory grows with the number of cells.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from scipy import stats

from vignette_bench.stats.arrow_input import column, list_values
from vignette_bench.stats.inference import wilson_interval

# Sums kept per cell: offers with a valid answer, selections (or expected selections), their
# squares (for the per-answer variance), the chance rate's numerator (1/k per offer among k
# candidates), and offers in refused or invalid questions.
VALUE_NAMES = ("offered", "selected", "selected_sq", "inv_k", "offered_invalid")


class Vocab:
    """Grows a name -> code table across batches; "" and null map to -1."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.index: dict[str, int] = {}
        self._arrow: pa.Array | None = None

    def encode(self, arr: Any) -> np.ndarray:
        """Codes of an Arrow array of names (plain, chunked or dictionary-encoded); new names get new codes."""
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if pa.types.is_dictionary(arr.type):
            dict_codes = self.encode(arr.dictionary)
            idx = pc.fill_null(arr.indices, 0).to_numpy(zero_copy_only=False)
            valid = ~np.asarray(arr.is_null())
            out = np.full(len(arr), -1, dtype=np.int64)
            out[valid] = dict_codes[idx[valid].astype(np.int64)]
            return out
        if not pa.types.is_string(arr.type):
            arr = arr.cast(pa.string())
        if len(arr) > 4096:
            # One hash pass, then only the (small) dictionary is looked up.
            return self.encode(pc.dictionary_encode(arr))
        for name in pc.unique(arr).to_pylist():
            if name and name not in self.index:
                self.index[name] = len(self.names)
                self.names.append(name)
                self._arrow = None
        if self._arrow is None:
            self._arrow = pa.array(self.names, type=pa.string())
        codes = pc.index_in(arr, value_set=self._arrow)
        return pc.fill_null(codes, -1).to_numpy(zero_copy_only=False).astype(np.int64)

    def decode(self, codes: np.ndarray) -> list[str]:
        """Names of codes; -1 decodes to ""."""
        names = np.asarray(self.names + [""], dtype=object)
        return names[np.where(np.asarray(codes) < 0, len(self.names), codes)].tolist()


def aggregate(
    keys: list[np.ndarray], dims: list[int], values: list[np.ndarray]
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Sum `values` over identical key tuples: dense bincount when the key space is small, hashing otherwise."""
    dims = [max(int(x), 1) for x in dims]
    size = int(np.prod([float(x) for x in dims]))
    if len(keys[0]) == 0:
        return [k[:0] for k in keys], [v[:0] for v in values]
    if float(np.prod([float(x) for x in dims])) < 2.0**62:
        flat = np.ravel_multi_index(keys, dims)
        if size <= 4 * len(flat) + 1_000_000:
            present = np.flatnonzero(np.bincount(flat, minlength=size))
            sums = [np.bincount(flat, weights=v, minlength=size)[present] for v in values]
            return [k.astype(np.int64) for k in np.unravel_index(present, dims)], sums
        codes, uniq = pd.factorize(flat)
        sums = [np.bincount(codes, weights=v, minlength=len(uniq)) for v in values]
        return [k.astype(np.int64) for k in np.unravel_index(uniq, dims)], sums
    frame = pd.DataFrame({f"k{i}": k for i, k in enumerate(keys)} | {f"v{i}": v for i, v in enumerate(values)})
    g = frame.groupby([f"k{i}" for i in range(len(keys))], sort=False).sum().reset_index()
    return [g[f"k{i}"].to_numpy(np.int64) for i in range(len(keys))], [
        g[f"v{i}"].to_numpy(float) for i in range(len(values))
    ]


def aggregate_offers(
    keys: list[np.ndarray], dims: list[int], state: np.ndarray, weights: np.ndarray | None, k_offer: np.ndarray
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Count offers per cell: one unweighted bincount over (cell, state) for sampled answers."""
    dims = [max(int(x), 1) for x in dims]
    size = float(np.prod([float(x) for x in dims]))
    if len(state) == 0:
        return [k[:0].astype(np.int64) for k in keys], [np.zeros(0) for _ in VALUE_NAMES]
    if size < 2.0**60:
        flat = np.ravel_multi_index(keys, dims)
        if size <= 4 * len(flat) + 1_000_000:
            counts = np.bincount(flat * 3 + state, minlength=3 * int(size)).reshape(-1, 3)
            present = np.flatnonzero(counts.any(axis=1))
            counts = counts[present]
            cell, uniq = None, present
        else:
            cell, uniq = pd.factorize(flat)
            counts = np.bincount(cell * 3 + state, minlength=3 * len(uniq)).reshape(-1, 3)
        out_keys = [x.astype(np.int64) for x in np.unravel_index(uniq, dims)]
    else:
        frame = pd.DataFrame({f"k{i}": x for i, x in enumerate(keys)})
        cell = frame.groupby(list(frame.columns), sort=False).ngroup().to_numpy()
        first = np.unique(cell, return_index=True)[1]
        out_keys = [x[first].astype(np.int64) for x in keys]
        counts = np.bincount(cell * 3 + state, minlength=3 * len(first)).reshape(-1, 3)
    offered = (counts[:, 0] + counts[:, 1]).astype(float)
    if weights is None and k_offer.min() == k_offer.max():
        selected = counts[:, 1].astype(float)
        return out_keys, [offered, selected, selected.copy(), offered / float(k_offer[0]), counts[:, 2].astype(float)]
    if cell is None:
        lookup = np.full(int(size), -1, dtype=np.int64)
        lookup[uniq] = np.arange(len(uniq))
        cell = lookup[flat]
    ok = state < 2
    x = (state == 1).astype(float) if weights is None else weights * ok
    m = len(offered)
    sums = [np.bincount(cell, weights=v, minlength=m) for v in (x, x * x, ok / k_offer)]
    return out_keys, [offered, sums[0], sums[1], sums[2], counts[:, 2].astype(float)]


class CountStore:
    """Accumulates answer rows into counts per cell; memory grows with cells, not with rows.

    `keys` picks the cell: always identity and context, plus any of partner, direction,
    trait_dimension, group, which each module asks for. `columns` are the input columns the
    metric accepts; factuality's `target` and `correct` are read only when listed there.
    """

    def __init__(self, keys: tuple[str, ...], columns: tuple[str, ...]) -> None:
        self.keys = keys
        self.columns = columns
        self.vocabs: dict[str, Vocab] = {
            "identity": Vocab(),
            "context": Vocab(),
            "direction": Vocab(),
            "trait_dimension": Vocab(),
            "group": Vocab(),
        }
        self.chunks: list[tuple[list[np.ndarray], list[np.ndarray]]] = []
        self.pending = 0
        self.compacted = 0
        self.rows = 0
        self.invalid_rows = 0
        self.left = 0
        self.left_known = 0
        self.used_probabilities = 0

    def dims(self) -> list[int]:
        """Number of codes seen so far per key (a partner is an identity)."""
        return [len(self.vocabs["identity" if k == "partner" else k].names) for k in self.keys]

    def add_table(self, table: pa.Table, use_probabilities: bool = True) -> None:
        """Count one Arrow table of answers (contract column names); errors name the offending row."""
        offset = self.rows
        n = table.num_rows
        if n == 0:
            return
        if (
            "correct" in self.columns
            and column(table, "correct") is not None
            and (named_target := column(table, "target")) is not None
        ):
            # Rows naming a target are factuality rows; the rest (target "") are ordinary questions.
            named = np.asarray(pc.fill_null(pc.not_equal(named_target.cast(pa.string()), ""), False))
            if named.all():
                self._add_factuality(table)
                return
            rest = table.drop_columns(["target", "correct"])
            if named.any():
                self._add_factuality(table.filter(pa.array(named)))
                rest = rest.filter(pa.array(~named))
            table, n = rest, rest.num_rows
            if n == 0:
                return
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
        # Per offer: 0 = valid answer, not chosen; 1 = chosen; 2 = question refused/invalid.
        state = np.where(valid[parent], hit.astype(np.int8), np.int8(2)).astype(np.int8)
        weights = x if store_weights else None
        k_offer = k[parent]
        cols: dict[str, np.ndarray] = {"identity": ident}
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
        # The number of options is not part of the contract, so chance is undefined (NaN) here.
        self._finish(table, cv >= 0, cols, state, None, np.full(len(cv), np.nan))

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
        keys = [cols[name] for name in self.keys]
        self.chunks.append(
            aggregate_offers(
                keys,
                [d + (1 if name == "group" else 0) for d, name in zip(self.dims(), self.keys)],
                state,
                weights,
                k_offer,
            )
        )
        self.pending += len(self.chunks[-1][0][0])
        if self.pending > max(4 * self.compacted, 4_000_000):
            self._compact()

    def _compact(self) -> None:
        if len(self.chunks) > 1:
            keys = [np.concatenate([c[0][i] for c in self.chunks]) for i in range(len(self.keys))]
            values = [np.concatenate([c[1][i] for c in self.chunks]) for i in range(len(VALUE_NAMES))]
            dims = [d + (1 if name == "group" else 0) for d, name in zip(self.dims(), self.keys)]
            self.chunks = [aggregate(keys, dims, values)]
        self.compacted = len(self.chunks[0][0][0]) if self.chunks else 0
        self.pending = self.compacted

    def cells(self) -> pd.DataFrame:
        """One row per cell: key codes and the summed values."""
        self._compact()
        if not self.chunks:
            return pd.DataFrame(
                {**{k: np.zeros(0, np.int64) for k in self.keys}, **{v: np.zeros(0) for v in VALUE_NAMES}}
            )
        keys, values = self.chunks[0]
        return pd.DataFrame({**dict(zip(self.keys, keys)), **dict(zip(VALUE_NAMES, values))})

    def summary(self) -> dict[str, Any]:
        """Refusal/invalid rate and left-choice (position bias) rate with Wilson CIs and a binomial test."""
        out: dict[str, Any] = {
            "n_rows": self.rows,
            "n_valid": self.rows - self.invalid_rows,
            "n_probability_rows": self.used_probabilities,
        }
        lo, hi = wilson_interval(self.invalid_rows, self.rows)
        out["invalid_rate"] = 100.0 * self.invalid_rows / self.rows if self.rows else None
        out["invalid_rate_ci"] = [100.0 * float(lo), 100.0 * float(hi)] if self.rows else None
        out["n_left_known"] = self.left_known
        if self.left_known:
            lo, hi = wilson_interval(self.left, self.left_known)
            out["left_choice_rate"] = 100.0 * self.left / self.left_known
            out["left_choice_ci"] = [100.0 * float(lo), 100.0 * float(hi)]
            out["left_choice_p_value"] = float(stats.binomtest(self.left, self.left_known, 0.5).pvalue)
        else:
            out["left_choice_rate"] = None
            out["left_choice_ci"] = None
            out["left_choice_p_value"] = 1.0
        return out

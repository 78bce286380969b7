"""CountStore views and Vocab's reuse of a repeated dictionary, against the store's own all-keys cells."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from vignette_bench.stats import VALUE_NAMES, CountStore, Vocab, aggregate
from vignette_bench.stats.counts import _recode, _unravel

COLUMNS = ("selected", "candidates", "context", "group", "chose_left")
KEYS = ("identity", "context", "cluster", "side", "pcluster")
VIEWS = (("identity", "context"), ("identity", "cluster", "side", "pcluster"))


def random_batch(rng: np.random.Generator, n: int, names: list[str]) -> pa.Table:
    left = rng.integers(0, len(names), n)
    right = (left + rng.integers(1, len(names), n)) % len(names)
    pick = np.where(rng.random(n) < 0.5, left, right)
    selected = [names[p] if r > 0.1 else "" for p, r in zip(pick, rng.random(n))]
    return pa.table(
        {
            "selected": selected,
            "candidates": [[names[a], names[b]] for a, b in zip(left, right)],
            "context": [f"c{c}" for c in rng.integers(0, 7, n)],
            "group": [f"img{g}" for g in rng.integers(0, 40, n)],
        }
    )


def by_names(store: CountStore, frame: pd.DataFrame, keys: tuple[str, ...]) -> pd.DataFrame:
    """Cells keyed by names (codes differ between stores), in name order."""
    frame = frame.copy()
    for key in keys:
        if key in ("identity", "context"):
            frame[key] = store.vocabs[key].decode(frame[key].to_numpy())
    return frame.set_index(list(keys)).sort_index()[list(VALUE_NAMES)]


def test_each_view_sums_the_all_keys_cells_over_its_keys():
    rng = np.random.default_rng(3)
    # batches that bring new names (the codes grow between batches) and force compactions
    batches = [random_batch(rng, 300, [f"id{i}" for i in range(k)]) for k in (3, 5, 9, 9)]
    full, viewed = CountStore(KEYS, COLUMNS), CountStore(KEYS, COLUMNS, VIEWS)
    for batch in batches:
        full.add_table(batch)
        viewed.add_table(batch)
        viewed._compact(VIEWS[1])  # compaction of sorted chunks, batch by batch
    cells = full.cells()
    for view in VIEWS:
        want = cells.groupby(list(view), as_index=False)[list(VALUE_NAMES)].sum()
        got = viewed.cells(view)
        assert len(got) == len(want)
        pd.testing.assert_frame_equal(by_names(viewed, got, view), by_names(full, want, view))
    with pytest.raises(ValueError, match="no view"):
        viewed.cells()
    # a view may keep only some sums: the same numbers, fewer columns
    slim = CountStore(KEYS, COLUMNS, VIEWS, {VIEWS[1]: ("offered", "selected")})
    for batch in batches:
        slim.add_table(batch)
    got = slim.cells(VIEWS[1])
    assert list(got.columns) == [*VIEWS[1], "offered", "selected"]
    want = viewed.cells(VIEWS[1])[[*VIEWS[1], "offered", "selected"]]
    pd.testing.assert_frame_equal(got, want)


class _CountingStore(CountStore):
    MIN_COMPACT = 100

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.merges = dict.fromkeys(self.views, 0)

    def _compact(self, view) -> None:
        self.merges[view] += len(self.chunks[view]) > 1
        super()._compact(view)


def test_merges_back_off_while_they_do_not_shrink_and_sums_stay_exact():
    """Answers in image order bring new cells with every batch, so merging them shrinks nothing: the store waits
    twice as long after each such merge. Repeated cells keep merging at the usual pace. Either way the cells
    equal one store's that merged once."""
    rng = np.random.default_rng(5)
    names = [f"id{i}" for i in range(6)]
    fresh = []
    for b in range(24):  # each batch its own pair images
        batch = random_batch(rng, 60, names)
        fresh.append(batch.set_column(3, "group", pa.array([f"img{b}_{g[3:]}" for g in batch["group"].to_pylist()])))
    repeated = [random_batch(rng, 60, names[:2]) for _ in range(24)]  # two identities, 40 images: cells recur
    for stream, fresh_cells in ((fresh, True), (repeated, False)):
        store, once = _CountingStore(KEYS, COLUMNS, VIEWS), CountStore(KEYS, COLUMNS, VIEWS)
        for batch in stream:
            store.add_table(batch)
            once.add_table(batch)
        merges = store.merges[VIEWS[1]]  # (identity, cluster, ...): new cells with each fresh batch
        assert (1 <= merges <= 3) if fresh_cells else merges >= 8
        for view in VIEWS:
            pd.testing.assert_frame_equal(
                by_names(store, store.cells(view), view), by_names(once, once.cells(view), view)
            )


def test_view_keys_must_be_store_keys():
    with pytest.raises(ValueError, match="not among"):
        CountStore(("identity", "context"), COLUMNS, (("identity", "cluster"),))
    with pytest.raises(ValueError, match="not among"):
        CountStore(("identity", "context"), COLUMNS, (), {("identity", "context"): ("offered", "answers")})


def test_a_repeated_dictionary_is_encoded_once_with_the_same_codes():
    names = pa.array(["b", "", "a", "c"])
    first = pa.DictionaryArray.from_arrays(pa.array([0, 2, None, 1, 3], type=pa.int32()), names)
    v = Vocab()
    codes = v.encode(first)
    assert codes.tolist() == [0, 1, -1, -1, 2] and v.names == ["b", "a", "c"]
    cached = v._last_dictionary
    # an equal dictionary (a new object, as each parquet batch brings) reuses the codes
    again = pa.DictionaryArray.from_arrays(pa.array([3, 3, 0], type=pa.int32()), pa.array(["b", "", "a", "c"]))
    assert v.encode(again).tolist() == [2, 2, 0] and v._last_dictionary is cached
    # a different dictionary is encoded afresh; earlier names keep their codes
    other = pa.DictionaryArray.from_arrays(pa.array([0, 1], type=pa.int32()), pa.array(["d", "a"]))
    assert v.encode(other).tolist() == [3, 1] and v.names == ["b", "a", "c", "d"]
    # repeats inside a dictionary (Arrow allows them) get one code
    dup = pa.DictionaryArray.from_arrays(pa.array([0, 1, 2], type=pa.int32()), pa.array(["e", "e", "b"]))
    assert v.encode(dup).tolist() == [4, 4, 0] and v.names == ["b", "a", "c", "d", "e"]


def test_unravel_matches_numpy():
    rng = np.random.default_rng(5)
    for dims in ([7], [3, 1, 5], [166_667, 166_667, 3, 201, 60]):
        flat = rng.integers(0, int(np.prod([float(d) for d in dims])), 1000)
        got = _unravel(flat, dims)
        assert all(g.dtype == np.int64 and (g == w).all() for g, w in zip(got, np.unravel_index(flat, dims)))


def test_recode_moves_cells_to_grown_key_sizes():
    rng = np.random.default_rng(7)
    old = [40, 40, 3, 9, 9]
    for new in ([40, 40, 3, 9, 9], [50, 40, 3, 9, 9], [50, 57, 3, 9, 9], [40, 40, 3, 12, 9], [41, 41, 4, 10, 11]):
        keys = [rng.integers(0, d, 500) for d in old]
        got = _recode(np.ravel_multi_index(keys, old), old, new)
        assert (got == np.ravel_multi_index(keys, new)).all()


def test_a_view_read_between_batches_keeps_counting():
    rng = np.random.default_rng(8)
    batches = [random_batch(rng, 300, [f"id{i}" for i in range(k)]) for k in (3, 6, 9)]
    once, twice = CountStore(KEYS, COLUMNS, VIEWS), CountStore(KEYS, COLUMNS, VIEWS)
    for i, batch in enumerate(batches):
        once.add_table(batch)
        twice.add_table(batch)
        if i < 2:
            twice.cells(VIEWS[1])  # unravels the compacted cells; later batches still merge with them
    for view in VIEWS:
        pd.testing.assert_frame_equal(twice.cells(view), once.cells(view))


@pytest.mark.parametrize("ordered", [True, False])
def test_aggregate_of_sorted_and_unsorted_keys_sums_like_pandas(ordered):
    rng = np.random.default_rng(6)
    dims = [5000, 4000, 3]  # sparse: the sorting path
    keys = [rng.integers(0, d, 3000) for d in dims]
    if ordered:  # already in key order (chunks of disjoint cells): no sort is needed
        order = np.lexsort(keys[::-1])
        keys = [k[order] for k in keys]
    values = [rng.random(3000), rng.integers(0, 9, 3000).astype(float)]
    out_keys, sums = aggregate(keys, dims, values)
    want = pd.DataFrame({"a": keys[0], "b": keys[1], "c": keys[2], "x": values[0], "y": values[1]})
    want = want.groupby(["a", "b", "c"], as_index=False).sum()  # sorted by key, as aggregate returns
    for got, col in zip([*out_keys, *sums], "abcxy"):
        np.testing.assert_allclose(got, want[col].to_numpy(), rtol=1e-12)

"""vignette_bench.stats.counts: name codes, sums over cells and the CountStore, against pandas or by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from scipy import stats

from vignette_bench.stats import VALUE_NAMES, CountStore, Vocab, aggregate, aggregate_offers

COLUMNS = ("selected", "candidates", "context", "probabilities", "chose_left")
ROWS = dict(
    selected=["a", "b", "a", "", "c", "a", "c"],
    candidates=[["a", "b"], ["a", "b"], ["a", "c"], ["b", "c"], ["c", "a"], ["a", "d"], ["a", "c"]],
    context=["x", "x", "y", "y", "y", "z", "x"],
)


def test_vocab_codes_plain_dictionary_and_large_arrays_alike():
    v = Vocab()
    assert v.encode(pa.array(["b", "a", "", None, "b"])).tolist() == [0, 1, -1, -1, 0]
    dict_arr = pa.DictionaryArray.from_arrays(pa.array([2, 0, None, 1], type=pa.int32()), pa.array(["a", "c", "b"]))
    assert v.encode(dict_arr).tolist() == [0, 1, -1, 2]  # c is new: code 2
    big = pa.array(["d", "a"] * 3000)  # over 4096 rows: hashed through a dictionary first
    assert v.encode(big).tolist() == [3, 1] * 3000
    assert v.encode(pa.chunked_array([["c"], ["a", "zz"]])).tolist() == [2, 1, 4]
    assert v.encode(pa.array([7, 8])).tolist() == [5, 6]  # non-strings are cast
    assert v.names == ["b", "a", "c", "d", "zz", "7", "8"]
    assert v.decode(np.array([1, -1, 4])) == ["a", "", "zz"]


def reference_sums(keys, values):
    frame = pd.DataFrame({f"k{i}": k for i, k in enumerate(keys)} | {f"v{i}": v for i, v in enumerate(values)})
    return frame.groupby([f"k{i}" for i in range(len(keys))]).sum()


def as_frame(out_keys, sums):
    frame = pd.DataFrame({f"k{i}": k for i, k in enumerate(out_keys)} | {f"v{i}": v for i, v in enumerate(sums)})
    return frame.set_index([f"k{i}" for i in range(len(out_keys))]).sort_index()


@pytest.mark.parametrize("dims", [[5, 7], [2000, 3000], [2**31, 2**31]], ids=["dense", "hashed", "huge"])
def test_aggregate_sums_values_over_identical_keys(dims):
    rng = np.random.default_rng(0)
    n = 400
    keys = [rng.integers(0, min(d, 40), n).astype(np.int64) * (d // min(d, 40)) for d in dims]
    values = [rng.random(n), rng.integers(0, 5, n).astype(float)]
    got = as_frame(*aggregate(keys, dims, values))
    pd.testing.assert_frame_equal(got, reference_sums(keys, values), check_dtype=False)
    empty_keys, empty_values = aggregate([k[:0] for k in keys], dims, [v[:0] for v in values])
    assert [len(k) for k in empty_keys] == [0, 0] and [len(v) for v in empty_values] == [0, 0]


def offers_reference(keys, state, weights, k_offer):
    """Per offer: offered = valid answer, selected = chosen (or its probability), and so on; then sums."""
    ok = state < 2
    x = (state == 1).astype(float) if weights is None else weights * ok
    return reference_sums(keys, [ok.astype(float), x, x * x, ok / k_offer, (state == 2).astype(float)])


@pytest.mark.parametrize("dims", [[4, 6], [3000, 3000], [2**31, 2**30]], ids=["dense", "hashed", "huge"])
@pytest.mark.parametrize("kind", ["two_candidates", "mixed_k", "weights"])
def test_aggregate_offers_counts_each_state(dims, kind):
    rng = np.random.default_rng(1)
    n = 500
    keys = [rng.integers(0, 4, n).astype(np.int64) * (d // 4) for d in dims]
    state = rng.integers(0, 3, n).astype(np.int8)
    k_offer = np.full(n, 2) if kind != "mixed_k" else rng.integers(2, 5, n)
    weights = rng.random(n) if kind == "weights" else None
    got = as_frame(*aggregate_offers(keys, dims, state, weights, k_offer))
    pd.testing.assert_frame_equal(got, offers_reference(keys, state, weights, k_offer), check_dtype=False)
    empty_keys, empty_values = aggregate_offers([k[:0] for k in keys], dims, state[:0], None, k_offer[:0])
    assert [len(k) for k in empty_keys] == [0, 0] and len(empty_values) == len(VALUE_NAMES)


def cells_by_name(store: CountStore) -> pd.DataFrame:
    cells = store.cells()
    for key in store.keys:
        cells[key] = store.vocabs["identity" if key == "partner" else key].decode(cells[key].to_numpy())
    return cells.set_index(list(store.keys)).sort_index()


def test_count_store_cells_and_summary_by_hand():
    store = CountStore(("identity", "context"), COLUMNS)
    store.add_table(pa.table({**ROWS, "chose_left": [True, False, True, None, True, True, False]}))
    cells = cells_by_name(store)
    # a in x: offered in rows 0, 1, 6 (two candidates each), chosen in row 0.
    assert cells.loc[("a", "x")].tolist() == [3.0, 1.0, 1.0, 1.5, 0.0]
    # The refused row 3 (b, c in y) counts only as invalid offers.
    assert cells.loc[("b", "y")].tolist() == [0.0, 0.0, 0.0, 0.0, 1.0]
    assert cells.loc[("c", "y")].tolist() == [2.0, 1.0, 1.0, 1.0, 1.0]
    assert cells["offered"].sum() == 12 and cells["selected"].sum() == 6
    s = store.summary()
    assert (s["n_rows"], s["n_valid"], s["n_left_known"]) == (7, 6, 6)
    assert s["invalid_rate"] == pytest.approx(100 / 7)
    ci = stats.binomtest(1, 7).proportion_ci(method="wilson")
    assert s["invalid_rate_ci"] == pytest.approx([100 * ci.low, 100 * ci.high])
    assert s["left_choice_rate"] == pytest.approx(100 * 4 / 6)
    assert s["left_choice_p_value"] == pytest.approx(stats.binomtest(4, 6, 0.5).pvalue)


def test_count_store_batches_add_up_to_one_table():
    table = pa.table(ROWS)
    one = CountStore(("identity", "partner", "context"), COLUMNS)
    one.add_table(table)
    parts = CountStore(("identity", "partner", "context"), COLUMNS)
    for start in (0, 2, 5):
        parts.add_table(table.slice(start, {0: 2, 2: 3, 5: 2}[start]))
    pd.testing.assert_frame_equal(cells_by_name(parts), cells_by_name(one))
    assert cells_by_name(one).loc[("a", "c", "x"), "selected"] == 0.0  # a was offered with c in x once, not chosen


def test_count_store_probabilities_count_expected_values():
    store = CountStore(("identity", "context"), COLUMNS)
    store.add_table(
        pa.table(
            {
                "selected": ["a", "b"],
                "candidates": [["a", "b"], ["a", "b"]],
                "context": ["x", "x"],
                "probabilities": [[0.6, 0.4], None],
            }
        )
    )
    cells = cells_by_name(store)
    assert cells.loc[("a", "x"), "selected"] == pytest.approx(0.6)  # row 0: probability; row 1: b chosen
    assert cells.loc[("a", "x"), "selected_sq"] == pytest.approx(0.36)
    assert cells.loc[("b", "x"), "selected"] == pytest.approx(1.4)
    assert store.used_probabilities == 1


def test_count_store_reads_target_and_correct_only_when_the_metric_accepts_them():
    table = pa.table(
        {
            "selected": ["a", "b", "a"],
            "candidates": [["a", "b"]] * 3,
            "context": ["x"] * 3,
            "target": ["a", "a", "b"],
            "correct": [True, False, False],
        }
    )
    factual = CountStore(("identity", "context"), COLUMNS + ("target", "correct"))
    factual.add_table(table)
    cells = cells_by_name(factual)
    # Each row is one offer of its target, chosen when correct: a 1 of 2, b 0 of 1.
    assert cells["offered"].to_dict() == {("a", "x"): 2.0, ("b", "x"): 1.0}
    assert cells["selected"].to_dict() == {("a", "x"): 1.0, ("b", "x"): 0.0}
    plain = CountStore(("identity", "context"), COLUMNS)
    plain.add_table(table)
    cells = cells_by_name(plain)
    assert cells["offered"].to_dict() == {("a", "x"): 3.0, ("b", "x"): 3.0}  # every candidate's offer
    assert cells["selected"].to_dict() == {("a", "x"): 2.0, ("b", "x"): 1.0}


def test_count_store_errors_name_the_row():
    store = CountStore(("identity", "context"), COLUMNS)
    with pytest.raises(ValueError, match=r"row 1: selected 'z' is not exactly once"):
        store.add_table(pa.table({"selected": ["a", "z"], "candidates": [["a", "b"]] * 2, "context": ["x", "x"]}))
    with pytest.raises(ValueError, match=r"row 0: 'candidates' is empty or null"):
        store.add_table(
            pa.table({"selected": [""], "candidates": pa.array([[]], type=pa.list_(pa.string())), "context": ["x"]})
        )
    with pytest.raises(ValueError, match=r"row 0: PairComp needs exactly two candidates"):
        CountStore(("identity", "partner", "context"), COLUMNS).add_table(
            pa.table({"selected": ["a"], "candidates": [["a", "b", "c"]], "context": ["x"]})
        )


CONTRACT = COLUMNS + ("group", "candidate_sides", "candidate_clusters")
SIDES = [["left", "right"]] * 7
CLUSTERS = [["a1", "b1"], ["a2", "b1"], ["a1", "c1"], ["b1", "c1"], ["c1", "a2"], ["a2", "d1"], ["a1", "c2"]]


def store_of(rows, columns=CONTRACT):
    store = CountStore(("identity", "context", "cluster", "side"), columns)
    store.add_table(pa.table({k: pa.array(v) for k, v in rows.items()}))
    return store


def named_cells(store):
    cells = store.cells()
    cells["identity"] = store.vocabs["identity"].decode(cells["identity"].to_numpy())
    return cells


def test_cells_keyed_by_candidate_cluster_and_side():
    store = store_of({**ROWS, "candidate_sides": SIDES, "candidate_clusters": CLUSTERS})
    cells = named_cells(store)
    a = cells[cells["identity"] == "a"]
    # a is offered 6 times: left in rows 0, 1, 2, 5, 6 and right in row 4; clusters a1 (3 offers), a2 (3).
    assert a.groupby("side")["offered"].sum().to_dict() == {0: 5.0, 1: 1.0}
    a1 = store.vocabs["cluster"].index["a1"]
    assert a.loc[a["cluster"] == a1, ["offered", "selected"]].sum().tolist() == [3.0, 2.0]  # rows 0, 2, 6
    # the refused row 3 keeps its cluster and side: b1 on the left, c1 on the right
    assert cells["offered_invalid"].sum() == 2 and store.summary()["cluster_unit"] == "candidate_clusters"
    assert store.sides_known == 12  # 6 valid rows, 2 offers each


def test_cluster_falls_back_to_group_then_rows():
    by_group = store_of({**ROWS, "group": ["p0", "p0", "p1", "p2", "p1", "p3", "p4"]})
    assert by_group.cluster_unit == "group" and by_group.n_cluster_codes == 5
    by_row = store_of(ROWS)
    assert by_row.cluster_unit == "rows" and by_row.n_cluster_codes == 7
    cells = by_row.cells()
    assert (cells["side"] == 2).all()  # sides unknown
    assert cells.groupby("cluster")["identity"].nunique().max() == 2  # a row holds its two offers


def test_memory_grows_with_cells_not_rows():
    n = 20_000
    rows = dict(
        selected=["a", "b"] * (n // 2),
        candidates=[["a", "b"]] * n,
        context=["x"] * n,
        candidate_sides=[["left", "right"], ["right", "left"]] * (n // 2),
        candidate_clusters=[["ra", "rb"]] * n,
    )
    assert len(store_of(rows).cells()) == 4  # 2 identities x 1 cluster each x 2 sides


def test_new_columns_are_validated_naming_the_row():
    with pytest.raises(ValueError, match=r"row 2: candidate_clusters \['a1'\] must give one cluster id per candidate"):
        store_of({**ROWS, "candidate_clusters": CLUSTERS[:2] + [["a1"]] + CLUSTERS[3:]})
    with pytest.raises(ValueError, match=r"row 1: a candidate_clusters entry is empty or null"):
        store_of({**ROWS, "candidate_clusters": CLUSTERS[:1] + [["a2", ""]] + CLUSTERS[2:]})
    with pytest.raises(ValueError, match=r"row 4: candidate_sides \['left', 'up'\] must be 'left', 'right' or ''"):
        store_of({**ROWS, "candidate_sides": SIDES[:4] + [["left", "up"]] + SIDES[5:]})
    with pytest.raises(ValueError, match=r"row 0: candidate_sides \['left'\] must give one side per candidate"):
        store_of({**ROWS, "candidate_sides": [["left"]] + SIDES[1:]})
    # null or "" sides are unknown, not errors
    store = store_of({**ROWS, "candidate_sides": [None, ["", "right"]] + SIDES[2:]})
    assert (named_cells(store)["side"] == 2).sum() > 0

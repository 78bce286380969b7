"""vignette_bench.stats.arrow_input: every accepted input becomes the same Arrow tables."""

from __future__ import annotations

import datasets
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import vignette_bench.stats.arrow_input as arrow_input
from vignette_bench.stats import column, is_wanted, list_values, rename, table_from, to_arrow

COLUMNS = ("selected", "candidates", "context", "group")


def runner_frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "selected_identity": ["a", "b", "", "a", "b"],
            "candidates": [["a", "b"]] * 5,
            "context": list("xxyyz"),
            "pair_id": ["p0", "p0", "p1", "p1", "p2"],
            "raw": ["..."] * 5,  # not part of the contract: left out
        }
    )


def test_is_wanted_knows_the_contract_and_its_aliases():
    assert is_wanted("selected_identity", COLUMNS) and is_wanted("pair_id", COLUMNS) and is_wanted("context", COLUMNS)
    assert not is_wanted("raw", COLUMNS)
    assert not is_wanted("target_identity", COLUMNS)  # an alias of a column this metric does not accept
    assert is_wanted("target_identity", COLUMNS + ("target",))


def test_rename_maps_runner_names_unless_the_contract_name_is_there():
    t = rename(pa.table({"selected_identity": ["a"], "pair_id": ["p"], "x": [1]}))
    assert t.column_names == ["selected", "group", "x"]
    both = pa.table({"selected": ["a"], "selected_identity": ["b"]})
    assert rename(both).column_names == ["selected", "selected_identity"]


def test_to_arrow_declared_types_and_fallback():
    assert to_arrow("candidates", [["a", "b"]]).type == pa.list_(pa.string())
    assert to_arrow("probabilities", [[0.5, 0.5], None]).type == pa.list_(pa.float64())
    assert to_arrow("chose_left", [True, None]).type == pa.bool_()
    assert to_arrow("context", ["x"]).type == pa.string()
    assert to_arrow("group", [1, 2]).type == pa.int64()  # not strings: inferred
    assert to_arrow("context", np.array(["x", "y"])).to_pylist() == ["x", "y"]


def test_column_and_list_values():
    t = pa.Table.from_batches(
        [
            pa.record_batch({"c": pa.array([["a", "b"], None], type=pa.list_(pa.string()))}),
            pa.record_batch({"c": pa.array([["c"]], type=pa.list_(pa.string()))}),
        ]
    )
    col = column(t, "c")
    assert isinstance(col, pa.Array) and col.to_pylist() == [["a", "b"], None, ["c"]]
    assert column(t, "missing") is None
    parent, flat = list_values(col)
    assert parent.tolist() == [0, 0, 2] and flat.to_pylist() == ["a", "b", "c"]


def expected() -> pa.Table:
    df = runner_frame()
    return pa.table(
        {
            "selected": df["selected_identity"],
            "candidates": pa.array(list(df["candidates"]), type=pa.list_(pa.string())),
            "context": df["context"],
            "group": df["pair_id"],
        }
    )


@pytest.mark.parametrize("kind", ["dataframe", "parquet", "arrow", "record_batch", "dataset"])
def test_table_from_every_input_kind(tmp_path, kind):
    df = runner_frame()
    if kind == "parquet":
        data = tmp_path / "responses.parquet"
        df.to_parquet(data)
    else:
        data = {
            "dataframe": df,
            "arrow": pa.Table.from_pandas(df),
            "record_batch": pa.RecordBatch.from_pandas(df),
            "dataset": datasets.Dataset.from_pandas(df),
        }[kind]
    tables = list(table_from(data, COLUMNS))
    got = pa.concat_tables(tables)
    got = got.select([c for c in got.column_names if c in COLUMNS])  # Arrow inputs keep extra columns
    assert got.select(expected().column_names).to_pylist() == expected().to_pylist()
    if kind in ("dataframe", "parquet"):
        assert (
            got.column_names == ["selected", "candidates", "context", "group"] == tables[0].column_names
        )  # only wanted columns read


def test_table_from_keyword_columns_and_batches(monkeypatch):
    monkeypatch.setattr(arrow_input, "BATCH_ROWS", 2)
    assert [t.num_rows for t in table_from(runner_frame(), COLUMNS)] == [2, 2, 1]
    assert [t.num_rows for t in table_from(pa.Table.from_pandas(runner_frame()), COLUMNS)] == [2, 2, 1]
    (one,) = table_from({"selected": ["a"], "candidates": [["a", "b"]], "context": ["x"], "group": None}, COLUMNS)
    assert one.column_names == ["selected", "candidates", "context"]  # None columns are dropped


def test_table_from_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        list(table_from(str(tmp_path / "nope.parquet"), COLUMNS))
    pd.DataFrame({"context": ["x"]}).to_parquet(tmp_path / "bad.parquet")
    with pytest.raises(ValueError, match="no 'selected'"):
        list(table_from(tmp_path / "bad.parquet", COLUMNS))
    with pytest.raises(TypeError, match="unsupported input list"):
        list(table_from([1, 2], COLUMNS))

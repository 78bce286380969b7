"""Reading the metric inputs into Arrow tables of bounded size, under the contract's column names.

Accepted inputs: keyword columns (a dict of lists), a pandas DataFrame, a pyarrow Table or
RecordBatch, a `datasets.Dataset`, or a parquet file or folder path (read in batches, only the
columns the metric accepts). The runner's column names (`selected_identity`, `pair_id`,
`target_identity`) are renamed to the contract's.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

BATCH_ROWS = 500_000
# Column aliases so the runner's responses.parquet maps onto the contract by name.
ALIASES = {
    "selected": ("selected", "selected_identity"),
    "group": ("group", "pair_id"),
    "target": ("target", "target_identity"),
}
# Declared types make list -> Arrow conversion about twice as fast as inference.
ARROW_TYPES = {
    "candidates": pa.list_(pa.string()),
    "probabilities": pa.list_(pa.float64()),
    "chose_left": pa.bool_(),
    "correct": pa.bool_(),
    "candidate_sides": pa.list_(pa.string()),
    "candidate_clusters": pa.list_(pa.string()),
}


def is_wanted(name: str, columns: tuple[str, ...]) -> bool:
    """Whether an input column is one of `columns` (the metric's contract) or an alias of one."""
    return name in columns or any(name in alias and canonical in columns for canonical, alias in ALIASES.items())


def table_from(data: Any, columns: tuple[str, ...]) -> Iterator[pa.Table]:
    """Yield Arrow tables of at most BATCH_ROWS rows from any accepted input.

    A parquet path or a DataFrame is read for the `columns` the metric accepts (or their aliases) only.
    """
    if isinstance(data, (str, os.PathLike)):
        path = os.fspath(data)
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path}: no such parquet file or folder")
        ds = pads.dataset(path, format="parquet")
        names = set(ds.schema.names)
        wanted = [c for c in ds.schema.names if is_wanted(c, columns)]
        if not names & {"selected", "selected_identity"}:
            raise ValueError(f"{path}: no 'selected' (or 'selected_identity') column; columns are {sorted(names)}")
        # one batch read ahead is enough to overlap reading with counting; the default (16 batches, 4 files)
        # holds several decoded batches at once
        for batch in ds.to_batches(columns=wanted, batch_size=BATCH_ROWS, batch_readahead=1, fragment_readahead=1):
            yield rename(pa.Table.from_batches([batch]))
        return
    if isinstance(data, pd.DataFrame):
        cols = [c for c in data.columns if is_wanted(c, columns)]
        for start in range(0, max(len(data), 1), BATCH_ROWS):
            yield rename(pa.Table.from_pandas(data.iloc[start : start + BATCH_ROWS][cols], preserve_index=False))
        return
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    # datasets is not imported here (the statistics library stays light): a Dataset exists only if it was
    datasets = sys.modules.get("datasets")
    if datasets is not None and isinstance(data, datasets.Dataset):
        data = data.with_format("arrow")[:]
    if isinstance(data, pa.Table):
        for batch in data.to_batches(max_chunksize=BATCH_ROWS):
            yield rename(pa.Table.from_batches([batch]))
        return
    if isinstance(data, dict):
        yield rename(pa.table({k: to_arrow(k, v) for k, v in data.items() if v is not None}))
        return
    raise TypeError(
        f"unsupported input {type(data).__name__}: give columns as keyword lists, a pandas DataFrame, a pyarrow Table, a datasets.Dataset or a parquet path"
    )


def rename(table: pa.Table) -> pa.Table:
    """The runner's column names (ALIASES) renamed to the contract's, where the contract's is absent."""
    names = table.column_names
    for canonical, options in ALIASES.items():
        if canonical not in names:
            for alias in options:
                if alias in names:
                    table = table.rename_columns([canonical if c == alias else c for c in table.column_names])
                    break
    return table


def to_arrow(name: str, values: Any) -> pa.Array:
    """One keyword column as an Arrow array, with the declared type of its contract name when it fits."""
    if not isinstance(values, (list, tuple)):
        return pa.array(values)
    try:
        return pa.array(values, type=ARROW_TYPES.get(name, pa.string()))
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return pa.array(values)  # e.g. integer group ids; cast to strings when encoded


def column(table: pa.Table, name: str) -> pa.Array | None:
    """A column as one contiguous array; None when the table has no such column."""
    if name not in table.column_names:
        return None
    col = table.column(name)
    return col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col


def list_values(col: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """(row index of each element, flat elements) of a list column; null lists have no elements."""
    return pc.list_parent_indices(col).to_numpy(zero_copy_only=False).astype(np.int64), pc.list_flatten(col)

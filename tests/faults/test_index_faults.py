"""Render index faults: every malformed, mistyped, out-of-range or relabelled row is refused when the
source is opened, naming the file, the row, the key and the column; nothing in the source changes."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import vignette
from tests.faults.conftest import snapshot

INDEX = Path("renders/index.parquet")


def _set(source: Path, column: str, value, row: int = 0, type_=None) -> None:
    table = pq.read_table(source / INDEX)
    values = table.column(column).to_pylist()
    values[row] = value
    field = table.schema.field(column)
    new = pa.array(values, type=type_ or field.type)
    table = table.set_column(table.schema.get_field_index(column), pa.field(column, new.type), new)
    pq.write_table(table, source / INDEX)


def _open_fails(source: Path, pattern: str) -> None:
    before = snapshot(source)
    with pytest.raises((vignette.CorruptRenderError, vignette.VignetteError), match=pattern):
        vignette.load_dataset(source, "identity_contrast")
    assert snapshot(source) == before  # the loader never writes into the source


VALUE_FAULTS = [
    ("sha256", "", r"row 0 .*sha256 '' is not 64 lowercase hex"),
    ("sha256", "ABC", r"sha256 'ABC' is not 64"),
    ("sha256", "g" * 64, r"sha256 'g+' is not 64"),
    ("sha256", None, r"column 'sha256' is null"),
    ("length", 8 * 1024**3, r"length 8589934592 is outside"),
    ("length", 0, r"length 0 is outside"),
    ("length", -5, r"length -5 is outside"),
    ("length", None, r"column 'length' is null"),
    ("offset", 0, r"offset 0 is not a tar data offset"),
    ("offset", 513, r"offset 513 is not a tar data offset"),
    ("offset", -512, r"offset -512 is not a tar data offset"),
    ("offset", None, r"column 'offset' is null"),
    ("key", "Bad Key!", r"key is not \[a-z0-9_-\]"),
    ("key", "", r"key is not"),
    ("key", None, r"column 'key' is null"),
    ("shard", "../../etc/passwd", r"shard '../../etc/passwd' is not renders/<name>.tar"),
    ("shard", "renders/x.zip", r"is not renders/<name>.tar"),
    ("shard", None, r"column 'shard' is null"),
    ("format", "png", r"format 'png' is not one of"),
    ("format", "", r"format '' is not one of"),
    ("gender", "other", r"gender 'other' is not one of"),
    ("kind", "selfie", r"kind 'selfie' is not one of"),
    ("kind", "portrait", r"portraits, and only portraits, have no activity"),
    ("activity", "", r"portraits, and only portraits, have no activity"),
    ("identity", "hindu", r"key does not match its metadata, which names .male-religion-hindu-cooking."),
    ("identity", "nobody", r"key does not match its metadata"),
    ("dimension", "age", r"key does not match its metadata"),
    ("activity", "driving", r"key does not match its metadata"),
    ("gender", "female", r"key does not match its metadata"),
    ("identity", None, r"column 'identity' is null"),
    ("dimension", None, r"column 'dimension' is null"),
]


@pytest.mark.parametrize(
    ("column", "value", "pattern"), VALUE_FAULTS, ids=[f"{c}={v!r}"[:40] for c, v, _ in VALUE_FAULTS]
)
def test_bad_values_are_named(source: Path, column: str, value, pattern: str) -> None:
    _set(source, column, value)
    _open_fails(source, pattern)


TYPE_FAULTS = [
    ("offset", pa.string(), "512"),
    ("length", pa.float64(), 100.0),
    ("sha256", pa.int64(), 7),
    ("key", pa.int64(), 3),
    ("gender", pa.int64(), 1),
    ("variant", pa.string(), "0"),
]


@pytest.mark.parametrize(("column", "type_", "value"), TYPE_FAULTS, ids=[c for c, _, _ in TYPE_FAULTS])
def test_mistyped_columns_are_named(source: Path, column: str, type_, value) -> None:
    table = pq.read_table(source / INDEX)
    n = table.num_rows
    arr = pa.array([value] * n, type=type_)
    table = table.set_column(table.schema.get_field_index(column), pa.field(column, type_), arr)
    pq.write_table(table, source / INDEX)
    _open_fails(source, rf"column '{column}' has type")


@pytest.mark.parametrize(
    "column",
    ["key", "shard", "offset", "length", "sha256", "format", "gender", "dimension", "identity", "activity", "kind"],
)
def test_missing_columns_are_named(source: Path, column: str) -> None:
    table = pq.read_table(source / INDEX)
    pq.write_table(table.drop_columns([column]), source / INDEX)
    _open_fails(source, rf"missing column\(s\) \['{column}'\]")


def test_duplicate_keys_name_both_rows(source: Path) -> None:
    table = pq.read_table(source / INDEX)
    pq.write_table(pa.concat_tables([table, table.slice(0, 1)]), source / INDEX)
    _open_fails(source, r"duplicate key \(also row 0\)")


def test_a_variant_gap_is_named(source: Path) -> None:
    _set(source, "variant", 2, type_=pa.int64())
    _open_fails(source, r"key does not match its metadata")


@pytest.mark.parametrize("payload", [b"", b"not parquet at all", b"PAR1" + b"\0" * 100])
def test_an_unreadable_index_is_named(source: Path, payload: bytes) -> None:
    (source / INDEX).write_bytes(payload)
    _open_fails(source, r"index.parquet: unreadable")


def test_a_missing_index_says_what_a_source_is(source: Path) -> None:
    (source / INDEX).unlink()
    with pytest.raises(FileNotFoundError, match=r"no render index in source .* is this a VIGNETTE source"):
        vignette.load_dataset(source, "identity_contrast")


def test_renders_of_an_identity_the_taxonomy_lacks_are_refused(source: Path) -> None:
    path = source / "taxonomy" / "identities.csv"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(line for line in lines if not line.startswith("religion,hindu,")))
    _open_fails(source, r"renders of identities \['hindu'\] that .*identities.csv does not list")

"""Reduced copies of the renders (dataset_builder/reduced.py, issue 14 item 6): written beside the shards
and indexed, verified, used for composition when both renders of a pair have one covering the tile, and
recorded, since the pixels differ; `reduced=False` (and any tile larger than the copies) gives the full
renders' pixels exactly."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

import vignette
from vignette import CorruptRenderError, MissingRenderError
from vignette_bench.dataset_builder.reduced import write_reduced
from vignette_bench.dataset_builder.sample import build_sample
from vignette_bench.dataset_builder.verify import verify_source
from vignette_bench.formats.render_index import REDUCED_COLUMNS, index_problems

KW = dict(identities=("muslim", "hindu"), activities=("cooking", "driving"))


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_sample(tmp_path_factory.mktemp("reduced") / "src", size=512, **KW)


def _pixels(ds, i: int = 0) -> np.ndarray:
    return np.asarray(ds[i]["image"]).astype(int)


def test_copies_are_indexed_and_verified(source: Path) -> None:
    table = pq.read_table(source / "renders" / "index.parquet")
    assert all(c in table.column_names for c in REDUCED_COLUMNS)
    assert set(table.column("reduced_width").to_pylist()) == {384} and all(table.column("reduced_shard").to_pylist())
    assert sorted(p.name for p in (source / "reduced").iterdir()) == sorted(
        p.name for p in (source / "renders").glob("*.tar")
    )
    assert verify_source(str(source), progress=False, decode=True) == []


def test_pairs_compose_from_the_copies_and_say_so(source: Path) -> None:
    fast = vignette.load_dataset(source, "identity_contrast")
    full = vignette.load_dataset(source, "identity_contrast", reduced=False)
    assert json.loads(fast.info.description)["composition"].startswith("reduced copies")
    assert json.loads(full.info.description)["composition"] == "full renders"
    a, b = _pixels(fast), _pixels(full)
    assert a.shape == b.shape and 0 < np.abs(a - b).mean() < 3  # close, not equal: a versioned change
    # reduced=False is exactly the full renders composed, as before the copies existed
    reader = vignette.RenderReader(vignette.RenderIndex.load(vignette.Source(source)))
    row = full[0]
    expected = vignette.compose(reader.read(row["key_left"])[0], reader.read(row["key_right"])[0])
    assert np.array_equal(np.asarray(expected).astype(int), b)


def test_a_tile_larger_than_the_copies_uses_the_full_renders(source: Path) -> None:
    big = (1024, 512)  # tiles of 528x512: more than the 384-px copies
    fast = vignette.load_dataset(source, "identity_contrast", size=big)
    full = vignette.load_dataset(source, "identity_contrast", size=big, reduced=False)
    assert np.array_equal(_pixels(fast), _pixels(full))
    assert "(0 of" in json.loads(fast.info.description)["composition"]


def test_streamed_and_spawned_paths_keep_the_choice(source: Path) -> None:
    full = vignette.load_dataset(source, "identity_contrast", reduced=False)
    path = full.data.table.column("image")[0].as_py()["path"]
    assert vignette._parse_pair_url(path)[-1] is False
    vignette.PairFileSystem.composers.clear()  # as in a fresh worker: the path alone decides
    assert np.array_equal(_pixels(full), np.asarray(full[0]["image"]).astype(int))
    it = vignette.load_dataset(source, "identity_contrast", streaming=True, reduced=False)
    assert np.array_equal(np.asarray(next(iter(it))["image"]).astype(int), _pixels(full))


def test_a_corrupt_or_missing_copy_is_named(source: Path, tmp_path: Path) -> None:
    copy = tmp_path / "src"
    shutil.copytree(source, copy)
    table = pq.read_table(copy / "renders" / "index.parquet").to_pylist()
    row = next(r for r in table if r["reduced_shard"])
    shard = copy / row["reduced_shard"]
    data = bytearray(shard.read_bytes())
    data[row["reduced_offset"] + 100] ^= 0xFF
    shard.write_bytes(bytes(data))
    problems = verify_source(str(copy), progress=False)
    assert any(p.key == row["key"] and "sha256" in p.message for p in problems)
    reader = vignette.RenderReader(vignette.RenderIndex.load(vignette.Source(copy)))
    with pytest.raises(CorruptRenderError, match=row["key"]):
        reader.read(row["key"], reduced=True)
    assert reader.read(row["key"])[0]  # the full render is untouched
    shard.unlink()
    with pytest.raises(MissingRenderError, match="reduced/"):
        vignette.RenderReader(vignette.RenderIndex.load(vignette.Source(copy))).read(row["key"], reduced=True)


def test_index_rows_of_copies_are_checked(source: Path) -> None:
    table = pq.read_table(source / "renders" / "index.parquet")
    partial = table.drop_columns(["reduced_sha256"])
    assert "reduced_sha256" in index_problems(partial, "x")[0]
    rows = table.to_pylist()
    rows[0]["reduced_shard"] = "renders/elsewhere.tar"
    import pyarrow as pa

    bad = pa.Table.from_pylist(rows, schema=table.schema)
    assert "not reduced/<name>.tar" in index_problems(bad, "x")[0]


def test_small_renders_get_no_copy_and_rebuilding_replaces_the_copies(tmp_path: Path) -> None:
    small = build_sample(tmp_path / "small", size=64, **KW)
    table = pq.read_table(small / "renders" / "index.parquet")
    assert table.column("reduced_shard").null_count == len(table)  # 64 px: nothing to reduce
    ds = vignette.load_dataset(small, "identity_contrast")
    assert json.loads(ds.info.description)["composition"] == "full renders" and ds[0]["image"].size == (672, 336)
    big = build_sample(tmp_path / "big", size=512, reduced=False, **KW)
    assert write_reduced(big, side=256) == len(pq.read_table(big / "renders" / "index.parquet"))
    assert write_reduced(big, side=300) > 0  # rebuilt whole: no 256-px copy is left behind
    assert set(pq.read_table(big / "renders" / "index.parquet").column("reduced_height").to_pylist()) == {300}
    assert verify_source(str(big), progress=False, decode=True) == []


def test_copies_cropped_to_the_tile_compose_without_a_resize(source: Path, tmp_path: Path) -> None:
    """`vignette build reduce --size 352x336 --crop` (issue 25): copies are the default tile itself, so
    composing the default pair decodes and pastes them; other sizes still crop and scale from them."""
    from vignette_bench.cli import main as vignette_cli

    copy = Path(shutil.copytree(source, tmp_path / "src"))
    assert vignette_cli(["build", "reduce", "--source", str(copy), "--size", "352x336", "--crop"]) == 0
    table = pq.read_table(copy / "renders" / "index.parquet")
    assert set(zip(table.column("reduced_width").to_pylist(), table.column("reduced_height").to_pylist())) == {
        (352, 336)
    }
    assert verify_source(str(copy), progress=False, decode=True) == []
    tiles = vignette.load_dataset(copy, "identity_contrast")
    n = len(table)
    assert f"({n} of {n} renders)" in json.loads(tiles.info.description)["composition"]
    full = vignette.load_dataset(source, "identity_contrast", reduced=False)
    a, b = _pixels(tiles), _pixels(full)
    assert a.shape == b.shape and 0 < np.abs(a - b).mean() < 3  # close, not equal: a versioned change
    small = vignette.load_dataset(copy, "identity_contrast", size=(448, 224))  # tiles of 240x224: scaled
    assert small[0]["image"].size == (448, 224)

"""Reduced copies of the renders (dataset_builder/reduced.py, issue 14 item 6): written beside the shards
and indexed, verified, used for composition when both renders of a pair have one covering the tile, and
recorded, since the pixels differ; `reduced=False` (and any tile larger than the copies) gives the full
renders' pixels exactly."""

from __future__ import annotations

import io
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
    assert set(table.column("reduced_width").to_pylist()) == {352} and all(table.column("reduced_shard").to_pylist())
    assert sorted(p.name for p in (source / "reduced").iterdir()) == sorted(
        p.name for p in (source / "renders").glob("*.tar")
    )
    assert verify_source(str(source), progress=False, decode=True) == []


def test_pairs_compose_from_the_copies_and_say_so(source: Path) -> None:
    fast = vignette.load_dataset(source, "identity_contrast")
    full = vignette.load_dataset(source, "identity_contrast", reduced=False)
    assert json.loads(fast.info.description)["composition"].startswith("reduced copies (shorter side 352 px)")
    assert json.loads(full.info.description)["composition"] == "full renders"
    a, b = _pixels(fast), _pixels(full)
    assert a.shape == b.shape and 0 < np.abs(a - b).mean() < 3  # close, not equal: a versioned change
    # reduced=False is exactly the full renders composed, as before the copies existed
    reader = vignette.RenderReader(vignette.RenderIndex.load(vignette.Source(source)))
    row = full[0]
    expected = vignette.compose(reader.read(row["key_left"])[0], reader.read(row["key_right"])[0])
    assert np.array_equal(np.asarray(expected).astype(int), b)


def test_a_tile_larger_than_the_copies_uses_the_full_renders(source: Path) -> None:
    big = (1024, 512)  # tiles of 528x512: more than the 352-px copies
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
    assert write_reduced(big, 256) == len(pq.read_table(big / "renders" / "index.parquet"))
    assert write_reduced(big, 300) > 0  # rebuilt whole: no 256-px copy is left behind
    assert set(pq.read_table(big / "renders" / "index.parquet").column("reduced_height").to_pylist()) == {300}
    assert verify_source(str(big), progress=False, decode=True) == []


def test_the_default_tile_is_the_default_pairs_tile() -> None:
    """The default copies hold the default pair's tile at scale 1 (issues 25, 36)."""
    from vignette_bench.dataset_builder.arguments import DEFAULT_SIDE, DEFAULT_TILE
    from vignette_bench.formats.pair_config import DEFAULT_SEAM, DEFAULT_SIZE

    assert DEFAULT_TILE == ((DEFAULT_SIZE[0] + DEFAULT_SEAM + 1) // 2, DEFAULT_SIZE[1])
    assert DEFAULT_SIDE == max(DEFAULT_TILE)


def test_a_copy_covers_the_tile_at_the_smallest_scale_with_an_even_margin() -> None:
    """Square renders keep the copies they had (352x352, or a shorter side of N for a square tile); a
    non-square render's copy holds the tile exactly in one side, and the other side's margin is even,
    so the tile is a whole-pixel centre crop (issue 36: 469x352 before, resampled for every pair)."""
    from vignette_bench.dataset_builder.reduced import copy_size

    assert copy_size(1024, 1024, (352, 336)) == (352, 352)
    assert copy_size(1024, 1024, 384) == (384, 384) and copy_size(1024, 768, 384) == (512, 384)
    assert copy_size(1024, 768, (352, 336)) == (448, 336)  # landscape: the tile's height
    assert copy_size(768, 1024, (352, 336)) == (352, 470)  # portrait: 469.3 -> 470, so 470 - 336 is even
    assert copy_size(2000, 600, (352, 336)) == (1120, 336)
    assert copy_size(352, 400, (352, 336)) is None and copy_size(300, 300, 352) is None  # not larger


@pytest.mark.parametrize("photo", [(640, 480), (480, 640)])
def test_the_default_tile_of_a_non_square_photos_copy_is_its_crop(tmp_path: Path, photo: tuple[int, int]) -> None:
    """`vignette build photos` + `vignette build reduce` of 4:3 photos: each half of the default pair is
    exactly the centre crop of its decoded copy outside the seam (no resampling), as for square renders."""
    import pandas as pd
    from PIL import Image

    from vignette_bench.dataset_builder.photos import build_photo_source
    from vignette_bench.dataset_builder.placeholder import photo_like

    rows = []
    for n, identity in enumerate(("muslim", "hindu")):
        photo_like(n, *photo).save(tmp_path / f"{identity}.jpg", quality=90)
        rows.append({"image": f"{identity}.jpg", "gender": "female", "identity": identity, "activity": "cooking"})
    pd.DataFrame(rows).to_csv(tmp_path / "labels.csv", index=False)
    src = build_photo_source(tmp_path / "labels.csv", tmp_path / "src")
    assert write_reduced(src) == 2
    ds = vignette.load_dataset(src, "identity_contrast")
    reader = vignette.RenderReader(vignette.RenderIndex.load(vignette.Source(src)))
    row = ds[0]
    copies = [
        np.asarray(Image.open(io.BytesIO(reader.read(k, True)[0])).convert("RGB"))
        for k in (row["key_left"], row["key_right"])
    ]
    h, w = copies[0].shape[:2]
    assert (w, h) == ((448, 336) if photo[0] > photo[1] else (352, 470))
    assert json.loads(ds.info.description)["composition"].startswith(f"reduced copies (shorter side {min(w, h)} px)")
    top, left_x = (h - 336) // 2, (w - 352) // 2
    left, right = (c[top : top + 336, left_x : left_x + 352] for c in copies)
    pair = np.asarray(row["image"])
    assert np.array_equal(pair[:, : 352 - 32], left[:, : 352 - 32])
    assert np.array_equal(pair[:, 352:], right[:, 32:])
    full = _pixels(vignette.load_dataset(src, "identity_contrast", reduced=False))
    # the full photo's field of view, not a shifted or zoomed crop: JPEG twice differs by ~4.5 of 255, a
    # 1-px shift of this noisy photo by ~15
    aligned, *shifted = (np.abs(pair[:, 8 + d : 328 + d].astype(int) - full[:, 8:328]).mean() for d in (0, -1, 1))
    assert aligned < 6 and min(shifted) > 2 * aligned


def test_the_default_tile_of_a_352_px_copy_is_its_crop(source: Path) -> None:
    """The default pair from the default copies is the copies' own pixels, cropped and cross-faded: no
    resampling (PIL resizes a whole-pixel box at scale 1 as a copy); outside the seam each half is
    exactly the centre crop of its decoded copy."""
    from PIL import Image

    ds = vignette.load_dataset(source, "identity_contrast")
    reader = vignette.RenderReader(vignette.RenderIndex.load(vignette.Source(source)))
    row = ds[0]
    copies = [
        np.asarray(Image.open(io.BytesIO(reader.read(k, True)[0])).convert("RGB"))
        for k in (row["key_left"], row["key_right"])
    ]
    assert all(c.shape == (352, 352, 3) for c in copies)
    pair = np.asarray(row["image"])
    left, right = (c[8:344] for c in copies)  # the 352x336 tile: rows 8..343 of the 352x352 copy
    assert np.array_equal(pair[:, : 352 - 32], left[:, : 352 - 32])
    assert np.array_equal(pair[:, 352:], right[:, 32:])


def test_other_tile_shapes_keep_the_full_renders_field_of_view(source: Path) -> None:
    """A tile of another shape inside 352x352 comes from the same copies, scaled, and shows what the full
    render's tile shows (close pixels, not a zoomed or shifted crop)."""
    for size in ((448, 224), (600, 336), (352, 352)):  # tiles 240x224, 316x336, 192x352
        fast = vignette.load_dataset(source, "identity_contrast", size=size)
        full = vignette.load_dataset(source, "identity_contrast", size=size, reduced=False)
        n = len(pq.read_table(source / "renders" / "index.parquet"))
        assert f"({n} of {n} renders)" in json.loads(fast.info.description)["composition"]
        a, b = _pixels(fast), _pixels(full)
        assert a.shape == b.shape and np.abs(a - b).mean() < 3, size


def test_the_cli_writes_copies_of_the_side_asked(source: Path, tmp_path: Path) -> None:
    from vignette_bench.cli import main as vignette_cli

    copy = Path(shutil.copytree(source, tmp_path / "src"))
    assert vignette_cli(["build", "reduce", "--source", str(copy), "--size", "384"]) == 0
    table = pq.read_table(copy / "renders" / "index.parquet")
    assert set(table.column("reduced_height").to_pylist()) == {384}
    assert verify_source(str(copy), progress=False, decode=True) == []
    ds = vignette.load_dataset(copy, "identity_contrast")
    assert "(shorter side 384 px)" in json.loads(ds.info.description)["composition"]
    a, b = _pixels(ds), _pixels(vignette.load_dataset(source, "identity_contrast"))
    assert a.shape == b.shape and 0 < np.abs(a - b).mean() < 3  # another version of the pixels, and it says so


def test_a_copy_is_scaled_as_composition_scales_the_full_render() -> None:
    """The copy is the full render scaled by composition's own rule (draft + bilinear), so the default tile
    cut from it differs from the full render's tile by JPEG alone (Lanczos, before issue 25, added its own
    difference: 5.0 of 255 here at quality 100, against 3.1)."""
    from PIL import Image

    from vignette_bench.dataset_builder.placeholder import photo_like
    from vignette_bench.dataset_builder.reduced import reduce_image
    from vignette_bench.loader.compose import _tile

    out = io.BytesIO()
    photo_like(0).save(out, "JPEG", quality=90)
    render = out.getvalue()
    tile = np.asarray(_tile(Image.open(io.BytesIO(render)), 352, 336)).astype(int)
    copy = reduce_image(render, 352, quality=100)
    assert copy is not None and copy[1:] == (352, 352)
    cut = np.asarray(Image.open(io.BytesIO(copy[0])).convert("RGB")).astype(int)[8:344]
    assert np.abs(cut - tile).mean() < 4

"""The composed image is a real column: one list of `datasets` operations gives the same results on a
vignette pair dataset and on a plain Image dataset of the same pictures (PNG files on disk), and reading
metadata composes nothing. The column holds vignette:// paths (vignette.pair_url) that datasets opens
through fsspec like any remote image file."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pytest

import vignette
from vignette_bench.dataset_builder.sample import build_sample

FILTERS = dict(dimensions="religion", activities="cooking")


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[datasets.Dataset, datasets.Dataset, Path]:
    root = tmp_path_factory.mktemp("ops")
    src = build_sample(root / "src", size=96, identities=("muslim", "hindu", "christian"), activities=("cooking",))
    ours = vignette.load_dataset(src, "identity_contrast", **FILTERS)
    files = []
    for i, path in enumerate(ours.data.table.column("image").to_pylist()):
        out = root / f"pair{i}.png"
        with vignette.PairFileSystem().open(path["path"]) as f:
            out.write_bytes(f.read())
        files.append(str(out))
    meta = ours.remove_columns(["image"]).to_dict()
    plain = datasets.Dataset.from_dict({**meta, "image": files}).cast_column("image", datasets.Image())
    return ours, plain, root


def _image_summary(image: Any) -> Any:
    return (image.size, image.mode, np.asarray(image).sum())


OPERATIONS: dict[str, Callable[[datasets.Dataset, Path], Any]] = {
    "row": lambda ds, _: _image_summary(ds[0]["image"]),
    "slice": lambda ds, _: [_image_summary(x) for x in ds[1:3]["image"]],
    "column": lambda ds, _: len(ds["image"]),
    "numpy": lambda ds, _: ds.with_format("numpy")[0:2]["image"].shape,
    "torch": lambda ds, _: tuple(ds.with_format("torch")[0]["image"].shape),
    "arrow": lambda ds, _: ds.with_format("arrow")[0:2].column_names,
    "pandas": lambda ds, _: (len(ds.to_pandas()), sorted(ds.to_pandas().columns)),
    "to_dict": lambda ds, _: sorted(ds.to_dict()["image"][0]),
    "select_columns": lambda ds, _: ds.select_columns(["pair_id", "gender"])[0],
    "remove_columns": lambda ds, _: _image_summary(ds.remove_columns(["key_left"])[0]["image"]),
    "rename_column": lambda ds, _: ds.rename_column("gender", "g")[0]["g"],
    "filter_input_columns": lambda ds, _: len(ds.filter(lambda g: g == "female", input_columns=["gender"])),
    "map": lambda ds, _: ds.map(lambda r: {"w": r["image"].size[0]})["w"][:3],
    "select_shard_split": lambda ds, _: (
        len(ds.select([0, 2])),
        len(ds.shard(2, 0)),
        len(ds.train_test_split(0.5, seed=0)["test"]),
    ),
    "to_iterable": lambda ds, _: _image_summary(next(iter(ds.to_iterable_dataset()))["image"]),
    "save_load": lambda ds, tmp: _save_load(ds, tmp),
    "embed_for_push_to_hub": lambda ds, _: _embedded(ds),
}


def _save_load(ds: datasets.Dataset, tmp: Path) -> Any:
    path = tmp / f"saved-{id(ds)}"
    ds.save_to_disk(str(path))
    return _image_summary(datasets.load_from_disk(str(path))[1]["image"])


def _embedded(ds: datasets.Dataset) -> Any:
    """What push_to_hub uploads: datasets embeds every image's bytes (table.embed_table_storage)."""
    from datasets.table import embed_table_storage

    table = embed_table_storage(ds.select(range(2)).data.table)
    cells = table.column("image").to_pylist()
    return [_image_summary(datasets.Image().decode_example({"bytes": c["bytes"], "path": None})) for c in cells]


@pytest.mark.parametrize("operation", list(OPERATIONS))
def test_an_operation_gives_the_same_result_as_on_a_plain_image_dataset(pair, tmp_path: Path, operation: str) -> None:
    ours, plain, _ = pair
    assert OPERATIONS[operation](ours, tmp_path) == OPERATIONS[operation](plain, tmp_path)


def test_metadata_access_composes_nothing(pair) -> None:
    ours, _, _ = pair
    before = vignette.PairFileSystem.composed
    ours["gender"], ours["pair_id"], ours.select_columns(["pair_id"])[0:5], ours.remove_columns(["image"])[0]
    ours.filter(lambda g: g == "female", input_columns=["gender"])
    assert vignette.PairFileSystem.composed == before


def test_streaming_columns_and_images(pair) -> None:
    ours, _, root = pair
    it = vignette.load_dataset(root / "src", "identity_contrast", streaming=True, **FILTERS)
    before = vignette.PairFileSystem.composed
    rows = list(it.select_columns(["pair_id", "gender"]))
    assert len(rows) == len(ours) and vignette.PairFileSystem.composed == before  # no image composed
    first = next(iter(it))
    assert _image_summary(first["image"]) == _image_summary(ours[0]["image"])


def test_a_fresh_process_opens_the_paths_without_importing_vignette_first(pair, tmp_path: Path) -> None:
    """fsspec finds the vignette:// protocol through the package's entry point (spawned DataLoader
    workers, load_from_disk on another day)."""
    ours, _, _ = pair
    ours.save_to_disk(str(tmp_path / "saved"))
    code = (
        "import datasets, sys; ds = datasets.load_from_disk(sys.argv[1]); "
        "assert 'vignette' not in sys.modules; print(ds[0]['image'].size)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "saved")], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(ours[0]["image"].size)


@pytest.mark.parametrize("world_size", [1, 2, 3, 5, 7, 16, 32, 64])
def test_any_world_size_sees_and_composes_each_pair_exactly_once(pair, world_size: int) -> None:
    from datasets.distributed import split_dataset_by_node

    ours, _, root = pair
    it = vignette.load_dataset(root / "src", "identity_contrast", streaming=True, **FILTERS)
    before = vignette.PairFileSystem.composed
    seen = []
    for rank in range(world_size):
        for row in split_dataset_by_node(it, rank=rank, world_size=world_size):
            seen.append(row["pair_id"])
            assert row["image"].size == (672, 336)
    assert sorted(seen) == sorted(ours["pair_id"])  # every pair once, across all nodes
    assert vignette.PairFileSystem.composed - before == len(ours)  # and composed once


@pytest.mark.parametrize("streaming", [False, True])
def test_metadata_only_downloads_and_composes_nothing(pair, streaming: bool) -> None:
    ours, _, root = pair
    before = vignette.PairFileSystem.composed
    meta = vignette.load_dataset(root / "src", "identity_contrast", streaming=streaming, images=False, **FILTERS)
    rows = list(meta)
    assert "image" not in rows[0] and [r["pair_id"] for r in rows] == list(ours["pair_id"])
    assert vignette.PairFileSystem.composed == before


STREAM_OPERATIONS: dict[str, Callable[[datasets.IterableDataset], Any]] = {
    "iterate": lambda it: [(r["pair_id"], _image_summary(r["image"])) for r in it],
    "select_columns": lambda it: list(it.select_columns(["pair_id", "gender"])),
    "remove_columns": lambda it: [_image_summary(r["image"]) for r in it.remove_columns(["key_left"])],
    "rename_column": lambda it: [r["g"] for r in it.rename_column("gender", "g")],
    "filter_input_columns": lambda it: [
        r["pair_id"] for r in it.filter(lambda g: g == "female", input_columns=["gender"])
    ],
    "map": lambda it: [r["w"] for r in it.map(lambda r: {"w": r["image"].size[0]})],
    "take_skip": lambda it: [r["pair_id"] for r in it.skip(1).take(2)],
    "torch": lambda it: [tuple(r["image"].shape) for r in it.with_format("torch")],
    "batch": lambda it: [len(b["pair_id"]) for b in it.batch(2)],
    "shuffle": lambda it: sorted(r["pair_id"] for r in it.shuffle(seed=0, buffer_size=4)),
}


@pytest.mark.parametrize("operation", list(STREAM_OPERATIONS))
def test_a_streaming_operation_gives_the_same_result_as_on_a_plain_iterable_image_dataset(pair, operation: str) -> None:
    ours, plain, root = pair
    it = vignette.load_dataset(root / "src", "identity_contrast", streaming=True, **FILTERS)
    assert STREAM_OPERATIONS[operation](it) == STREAM_OPERATIONS[operation](plain.to_iterable_dataset())


def test_the_path_suffix_chooses_the_encoding_and_old_png_paths_still_serve_png(pair) -> None:
    """New tables hold .bmp paths (uncompressed: fast to write and read); a .png path (a table written
    before, or image_format="PNG") still serves PNG, with the same pixels, mode and size."""
    ours, _, root = pair
    path = ours.data.table.column("image")[0].as_py()["path"]
    assert path.endswith(".bmp")
    old = path[: -len(".bmp")] + ".png"
    fs = vignette.PairFileSystem()
    bmp, png = fs.cat_file(path), fs.cat_file(old)
    assert bmp[:2] == b"BM" and png[:8] == b"\x89PNG\r\n\x1a\n" and fs.info(path)["size"] == len(bmp)
    images = [datasets.Image().decode_example({"path": p, "bytes": None}) for p in (path, old)]
    assert [im.format for im in images] == ["BMP", "PNG"]
    assert _image_summary(images[0]) == _image_summary(images[1]) == _image_summary(ours[0]["image"])
    assert np.array_equal(np.asarray(images[0]), np.asarray(images[1]))
    as_png = vignette.load_dataset(root / "src", "identity_contrast", image_format="PNG", **FILTERS)
    assert as_png.data.table.column("image")[0].as_py()["path"] == old
    embedded = _embedded_bytes(as_png)  # what push_to_hub uploads: the PNG bytes
    assert all(b[:8] == b"\x89PNG\r\n\x1a\n" for b in embedded)
    with pytest.raises(vignette.VignetteError, match="image_format 'JPEG'"):
        vignette.load_dataset(root / "src", "identity_contrast", image_format="JPEG", **FILTERS)


def _embedded_bytes(ds: datasets.Dataset) -> list[bytes]:
    from datasets.table import embed_table_storage

    return [c["bytes"] for c in embed_table_storage(ds.select(range(2)).data.table).column("image").to_pylist()]

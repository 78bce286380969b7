"""vignette.load_dataset on the builder's placeholder sample: both modes, correct pairs, workers, errors."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

import vignette
from tests import REPO_ROOT
from vignette import CorruptRenderError, MissingRenderError, VignetteError

ROOT = REPO_ROOT
RELIGION_F = {"gender": "female", "dimensions": "religion"}  # 3 identities x 6 activities in the sample


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from vignette_bench.dataset_builder.sample import build_sample

    return build_sample(tmp_path_factory.mktemp("load") / "src")


def _copy(source: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "src"
    shutil.copytree(source, dst)
    return dst


def _render(source: Path, key: str) -> Image.Image:
    row = next(r for r in pq.read_table(source / "renders" / "index.parquet").to_pylist() if r["key"] == key)
    with open(source / row["shard"], "rb") as f:
        f.seek(row["offset"])
        return Image.open(io.BytesIO(f.read(row["length"]))).convert("RGB")


def _closer_to(image: Image.Image, a: Image.Image, b: Image.Image) -> bool:
    """Is ``image`` (a tile-sized crop) closer to render a than to render b, pixel-wise?"""
    x = np.asarray(image.resize((64, 64)), np.float32)
    da = np.abs(x - np.asarray(a.resize((64, 64)), np.float32)).mean()
    db = np.abs(x - np.asarray(b.resize((64, 64)), np.float32)).mean()
    return bool(da < db)


def test_map_style_rows_have_the_declared_features_and_correct_images(source: Path) -> None:
    ds = vignette.load_dataset(str(source), "identity_activity_contrast", **RELIGION_F)
    assert ds.features == vignette.features()
    assert len(ds) == 3 * 6 * 5  # C(3,2) identity pairs x ordered activity pairs
    assert ds.split == "test" and json.loads(ds.info.description)["filters"]["gender"] == ["female"]
    for i in (0, 7, len(ds) - 1):
        row = ds[i]
        img = row["image"]
        assert img.size == (672, 336) and img.format == "BMP"  # the default encoding (issue 25)
        left, right = _render(source, row["key_left"]), _render(source, row["key_right"])
        half_l, half_r = img.crop((0, 0, 320, 336)), img.crop((352, 0, 672, 336))
        assert _closer_to(half_l, left.crop((16, 0, 240, 256)), right.crop((16, 0, 240, 256)))
        assert _closer_to(half_r, right.crop((16, 0, 240, 256)), left.crop((16, 0, 240, 256)))
        assert row["key_left"] == f"female-religion-{row['identity_left']}-{vignette.slug(row['activity_left'])}"
        assert row["form_left"] == f"{row['identity_left']} woman"


def test_map_style_batches_shards_and_selects_keep_composing(source: Path) -> None:
    ds = vignette.load_dataset(str(source), "portraits")
    assert len(ds) == 13  # 4 blocks of C(3,2) + the man-woman pair
    batch = ds[:3]
    assert len(batch["image"]) == 3 and all(im.size == (672, 336) for im in batch["image"])
    assert ds.select([12])[0]["image"] is not None and ds.select([12])[0]["gender"] == "mixed"
    assert [r["pair_id"] for r in ds] == ds["pair_id"]


def test_streaming_gives_the_same_rows_as_map_style(source: Path) -> None:
    kw = dict(RELIGION_F, activities=["cooking", "driving"])
    mapped = vignette.load_dataset(str(source), "identity_contrast", **kw)
    streamed = vignette.load_dataset(str(source), "identity_contrast", streaming=True, **kw)
    assert streamed.features == vignette.features()
    rows = list(streamed)
    assert [r["pair_id"] for r in rows] == mapped["pair_id"]
    assert np.array_equal(np.asarray(rows[1]["image"]), np.asarray(mapped[1]["image"]))
    assert rows[0]["image"].format == "BMP"


def test_options_size_seam_sample_split_slice(source: Path) -> None:
    ds = vignette.load_dataset(
        str(source), "activity_contrast", size=(320, 160), seam=0, sample=20, seed=3, split="test[5:15]"
    )
    rec = json.loads(ds.info.description)
    assert len(ds) == 10 and rec["sample"] == 20 and rec["seed"] == 3
    assert ds[0]["image"].size == (320, 160)
    again = vignette.load_dataset(str(source), "activity_contrast", sample=20, seed=3)
    assert again["pair_id"][5:15] == ds["pair_id"]
    both = vignette.load_dataset(str(source), "portraits", orders="both")
    assert len(both) == 26 and both[0]["identity_left"] == both[1]["identity_right"]
    balanced = vignette.load_dataset(str(source), "identity_contrast", orders="balanced", sample=30, seed=1)
    rule = vignette.load_dataset(str(source), "identity_contrast", sample=30, seed=1)
    assert json.loads(balanced.info.description)["orders"] == "balanced" and len(balanced) == 30
    assert sorted(balanced["index"]) == sorted(rule["index"]) and balanced["pair_id"] != rule["pair_id"]
    lefts, rights = list(balanced["identity_left"]), list(balanced["identity_right"])
    for ident in set(lefts + rights):
        assert abs(lefts.count(ident) - (lefts + rights).count(ident) / 2) <= 1, ident
    assert balanced[0]["image"].size == vignette.DEFAULT_SIZE
    with pytest.raises(VignetteError, match="unknown split 'train'"):
        vignette.load_dataset(str(source), "portraits", split="train")
    with pytest.raises(VignetteError, match="max_rows"):
        vignette.load_dataset(str(source), "identity_activity_contrast", max_rows=100)


def test_dataloader_workers_and_nodes_see_each_pair_exactly_once(source: Path) -> None:
    import torch.utils.data
    from datasets.distributed import split_dataset_by_node

    kw = dict(RELIGION_F, activities=["cooking", "driving", "teaching", "exercising"], size=(64, 32), seam=4)
    expected = vignette.load_dataset(str(source), "identity_contrast", **kw)["pair_id"]
    streamed = vignette.load_dataset(str(source), "identity_contrast", streaming=True, **kw)
    loader = torch.utils.data.DataLoader(streamed, batch_size=None, num_workers=2)
    got = [row["pair_id"] for row in loader]
    assert sorted(got) == sorted(expected) and len(got) == len(expected) == 12
    for world in (2, 3):
        parts = [
            [r["pair_id"] for r in split_dataset_by_node(streamed, rank=r, world_size=world)] for r in range(world)
        ]
        assert sorted(sum(parts, [])) == sorted(expected) and all(parts)
    mapped = vignette.load_dataset(str(source), "identity_contrast", **kw)
    loader = torch.utils.data.DataLoader(mapped, batch_size=4, num_workers=2, collate_fn=lambda rows: rows)
    got = [row["pair_id"] for batch in loader for row in batch]
    assert sorted(got) == sorted(expected)
    parts = [split_dataset_by_node(mapped, rank=r, world_size=3) for r in range(3)]
    assert sorted(p for part in parts for p in part["pair_id"]) == sorted(expected)
    assert parts[2][0]["image"].size == (64, 32)


def test_missing_render_names_key_and_source_or_is_skipped_and_counted(source: Path, tmp_path: Path) -> None:
    src = _copy(source, tmp_path)
    table = pq.read_table(src / "renders" / "index.parquet")
    gone = "female-religion-hindu-cooking"
    pq.write_table(table.filter(np.array(table["key"].to_pylist()) != gone), src / "renders" / "index.parquet")
    with pytest.raises(MissingRenderError, match=f"'{gone}'.*{src}"):
        vignette.load_dataset(str(src), "identity_contrast", **RELIGION_F)
    ds = vignette.load_dataset(str(src), "identity_contrast", on_missing="skip", **RELIGION_F)
    assert len(ds) == 18 - 2 and json.loads(ds.info.description)["skipped_missing_renders"] == 2
    streamed = vignette.load_dataset(str(src), "identity_contrast", streaming=True, **RELIGION_F)
    with pytest.raises(MissingRenderError, match=gone):
        list(streamed)
    skipped = vignette.load_dataset(str(src), "identity_contrast", streaming=True, on_missing="skip", **RELIGION_F)
    assert [r["pair_id"] for r in skipped] == ds["pair_id"]


def _corrupt_copy(source: Path, tmp_path: Path, key: str) -> tuple[Path, dict]:
    src = _copy(source, tmp_path)
    row = next(r for r in pq.read_table(src / "renders" / "index.parquet").to_pylist() if r["key"] == key)
    return src, row


def test_corrupt_bytes_and_a_stale_index_are_named(source: Path, tmp_path: Path) -> None:
    key = "female-religion-muslim-cooking"
    src, row = _corrupt_copy(source, tmp_path / "a", key)
    with open(src / row["shard"], "r+b") as f:  # damage the image data: sha256 check
        f.seek(row["offset"] + 100)
        f.write(b"\xff" * 64)
    ds = vignette.load_dataset(str(src), "identity_contrast", **RELIGION_F, activities="cooking")
    with pytest.raises(CorruptRenderError, match=f"{key}.*sha256"):
        [r["image"] for r in ds]
    src, row = _corrupt_copy(source, tmp_path / "b", key)
    table = pq.read_table(src / "renders" / "index.parquet")
    offsets = [o + (1024 if k == key else 0) for k, o in zip(table["key"].to_pylist(), table["offset"].to_pylist())]
    pq.write_table(
        table.set_column(table.schema.get_field_index("offset"), "offset", [offsets]), src / "renders" / "index.parquet"
    )
    ds = vignette.load_dataset(str(src), "identity_contrast", **RELIGION_F, activities="cooking")
    with pytest.raises(CorruptRenderError, match=f"index disagrees with the shard for render '{key}'"):
        [r["image"] for r in ds]


def test_undecodable_image_is_named(source: Path, tmp_path: Path) -> None:
    import hashlib

    key = "female-religion-muslim-cooking"
    src, row = _corrupt_copy(source, tmp_path, key)
    with open(src / row["shard"], "r+b") as f:
        f.seek(row["offset"])
        data = bytearray(f.read(row["length"]))
        data[2:] = b"\x00" * (len(data) - 2)  # keep the JPEG magic, destroy the rest
        f.seek(row["offset"])
        f.write(bytes(data))
    table = pq.read_table(src / "renders" / "index.parquet")
    shas = [
        hashlib.sha256(bytes(data)).hexdigest() if k == key else s
        for k, s in zip(table["key"].to_pylist(), table["sha256"].to_pylist())
    ]
    pq.write_table(
        table.set_column(table.schema.get_field_index("sha256"), "sha256", [shas]), src / "renders" / "index.parquet"
    )
    ds = vignette.load_dataset(str(src), "identity_contrast", **RELIGION_F, activities="cooking")
    with pytest.raises(CorruptRenderError, match=f"'{key}'.*cannot be decoded"):
        [r["image"] for r in ds]


def test_bad_config_and_source_names(source: Path) -> None:
    with pytest.raises(VignetteError, match="Closest match: 'portraits'"):
        vignette.load_dataset(str(source), "portrait")
    with pytest.raises(VignetteError, match="not found"):
        vignette.load_dataset(str(source / "nope"), "portraits")
    with pytest.raises(VignetteError, match="select no pairs"):
        vignette.load_dataset(str(source), "portraits", identities=["wheelchair"])  # not in the sample
    assert vignette.resolve_source("org/name") == "hf://datasets/org/name"
    assert vignette.resolve_source("vignette") == vignette.DEFAULT_SOURCE


def test_hub_ids_go_through_huggingface_hubs_filesystem() -> None:
    from huggingface_hub import HfFileSystem

    fs, base = vignette.Source("org/name")._filesystem()  # offline: nothing is fetched yet
    assert isinstance(fs, HfFileSystem) and base == "datasets/org/name"


def test_renders_config_is_plain_datasets(source: Path) -> None:
    ds = vignette.load_dataset(str(source), "renders", split="test")
    assert len(ds) == 98 and "jpg" in ds.features


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "vignette_bench", *args], capture_output=True, text=True, cwd=ROOT, timeout=300
    )


def test_cli_info_and_show(source: Path, tmp_path: Path) -> None:
    out = _cli("info", "--json")
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    assert info["total"] == 31_490_285 and info["configs"]["portraits"]["total"] == 5_435
    out = _cli("info", "--source", str(source))
    assert out.returncode == 0 and "portraits: 13 pairs" in out.stdout
    space = vignette.PairSpace(vignette.load_taxonomy(), "identity_contrast")
    index = space.parse_pair_id("identity_contrast/female/religion/muslim+hindu/cooking/L0")
    out = _cli(
        "show",
        "--config",
        "identity_contrast",
        "--index",
        str(index),
        "--out",
        str(tmp_path / "pair.png"),
        "--source",
        str(source),
    )
    assert out.returncode == 0, out.stderr
    pair_id = out.stdout.split("\t")[0]  # the rule puts hindu left here: hindu+muslim/.../L1
    assert space.parse_pair_id(pair_id) == index and set(pair_id.split("/")[3].split("+")) == {"muslim", "hindu"}
    assert Image.open(tmp_path / "pair.png").size == (672, 336)
    out = _cli(
        "show",
        "--config",
        "identity_contrast",
        "--index",
        "0",
        "--out",
        str(tmp_path / "x.png"),
        "--source",
        str(source),
    )
    assert out.returncode == 2 and "male-ability-wheelchair-grocery_shopping" in out.stderr and "missing" in out.stderr
    out = _cli(
        "show",
        "--config",
        "identity_contrsat",
        "--index",
        "0",
        "--out",
        str(tmp_path / "x.png"),
        "--source",
        str(source),
    )
    assert out.returncode == 2 and "Closest match: 'identity_contrast'" in out.stderr


def test_webp_renders_compose_too(tmp_path: Path) -> None:
    from vignette_bench.dataset_builder.sample import build_sample

    src = build_sample(tmp_path / "webp", size=96, fmt="webp", identities=("muslim", "hindu"), activities=("cooking",))
    ds = vignette.load_dataset(str(src), "identity_contrast")
    assert len(ds) == 2  # muslim+hindu, cooking, in each gender
    row = ds[0]
    assert row["image"].size == (672, 336) and row["key_left"].endswith("-cooking")

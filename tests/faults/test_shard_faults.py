"""Shard and image faults: `verify` (and `--reindex`) check everything the loader trusts, and the loader
refuses an image whose header disagrees with the index or is too large, before decoding it."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from PIL import Image

import vignette
from tests.faults.conftest import snapshot
from vignette_bench.dataset_builder.shard import ShardError, reindex, scan_shard
from vignette_bench.dataset_builder.verify import verify_source

INDEX = Path("renders/index.parquet")


def _index(source: Path) -> pd.DataFrame:
    return pd.read_parquet(source / INDEX)


def _rewrite_tar(path: Path, change) -> None:
    """Rewrite a shard member by member through ``change(name, data) -> list[(name, data)]``."""
    with tarfile.open(path) as tar:
        members = [(m.name, tar.extractfile(m).read()) for m in tar if m.isfile()]  # type: ignore[union-attr]
    out = []
    for name, data in members:
        out += change(name, data)
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in out:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))


def _problems(source: Path, decode: bool = False) -> str:
    before = snapshot(source)
    text = "\n".join(str(p) for p in verify_source(str(source), progress=False, decode=decode))
    assert snapshot(source) == before  # verify only reads
    return text


def test_a_clean_source_verifies(source: Path) -> None:
    assert _problems(source, decode=True) == ""


def test_swapped_records_inside_a_tar_are_caught(source: Path) -> None:
    shard = source / _index(source)["shard"][0]
    jsons = {}

    def collect(name, data):
        if name.endswith(".json"):
            jsons[name] = data
        return [(name, data)]

    _rewrite_tar(shard, collect)
    a, b = sorted(jsons)[:2]

    def swap(name, data):
        return [(name, jsons[b] if name == a else jsons[a] if name == b else data)]

    _rewrite_tar(shard, swap)
    assert "holds the record of key" in _problems(source)
    with pytest.raises(ShardError, match=r"holds the record of key"):
        reindex(source)


def test_a_corrupted_image_is_caught_from_the_shard_alone(source: Path) -> None:
    row = _index(source).iloc[0]
    with open(source / row["shard"], "r+b") as f:
        f.seek(int(row["offset"]) + 100)
        f.write(b"\xff\x00\xff\x00")
    text = _problems(source)
    assert "do not match the index sha256" in text
    with pytest.raises(ShardError, match=r"image bytes do not match the sha256 in its record"):
        scan_shard(str(source), row["shard"])


def test_index_metadata_is_compared_with_the_records(source: Path) -> None:
    table = pq.read_table(source / INDEX).to_pandas()
    table.loc[0, "prompt"] = "A wizard, with their face visible."
    table.to_parquet(source / INDEX)
    assert "index says prompt 'A wizard" in _problems(source)


def test_relabelled_rows_are_caught(source: Path) -> None:
    table = pq.read_table(source / INDEX).to_pandas()
    table.loc[table["identity"] == "muslim", "identity"] = "hindu"
    table.to_parquet(source / INDEX)
    text = _problems(source)
    assert "key does not match its metadata" in text and "index says identity 'hindu'" in text


def test_a_record_the_taxonomy_does_not_plan_is_caught(source: Path) -> None:
    path = source / "taxonomy" / "identities.csv"
    path.write_text(
        path.read_text().replace("religion,muslim,muslim man,muslim woman", "religion,muslim,moslem man,moslem woman")
    )
    assert "not planned by the source's taxonomy" in _problems(source)


def test_an_extra_member_and_an_image_without_record_are_named(source: Path) -> None:
    shard = source / _index(source)["shard"][0]
    _rewrite_tar(shard, lambda name, data: [(name, data)] + ([("stray.txt", b"x")] if name.endswith(".json") else []))
    assert "unexpected member 'stray.txt'" in _problems(source)


def test_a_missing_shard_is_named(source: Path) -> None:
    (source / _index(source)["shard"][0]).unlink()
    assert "cannot read shard" in _problems(source)


def test_an_unindexed_shard_image_is_named(source: Path) -> None:
    table = pq.read_table(source / INDEX)
    pq.write_table(table.slice(1), source / INDEX)
    text = _problems(source)
    assert "in the shard but not in the index" in text
    assert f"rebuild the index with `vignette build shard --reindex --out {source}`" in text  # runs as printed
    from vignette_bench.cli import main as cli

    assert cli(["build", "shard", "--reindex", "--out", str(source)]) == 0 and _problems(source) == ""


def _replace_image(source: Path, image_bytes: bytes, fix_index: bool = True) -> str:
    """Put other image bytes under the first key, consistently in shard and index; returns the key."""
    import hashlib

    idx = _index(source)
    row = idx.iloc[0]
    key, shard = row["key"], source / row["shard"]
    _rewrite_tar(
        shard,
        lambda name, data: [(name, image_bytes if name.startswith(key + ".") and not name.endswith(".json") else data)],
    )
    if fix_index:
        rows = scan_shard(str(source), row["shard"], with_sha=False)
        pos = {r.key: r for r in rows}
        idx["offset"] = [pos[k].offset if k in pos else o for k, o in zip(idx["key"], idx["offset"])]
        idx["length"] = [pos[k].length if k in pos else n for k, n in zip(idx["key"], idx["length"])]
        idx.loc[0, "sha256"] = hashlib.sha256(image_bytes).hexdigest()
        idx.to_parquet(source / INDEX)
    return key


def _png(size: tuple[int, int]) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, (200, 10, 10)).save(buf, "PNG")
    return buf.getvalue()


def _jpeg_header_claiming(width: int, height: int) -> bytes:
    """A tiny JPEG whose SOF header claims width x height (so nothing large is ever allocated)."""
    buf = io.BytesIO()
    Image.new("RGB", (16, 16)).save(buf, "JPEG")
    data = bytearray(buf.getvalue())
    i = data.index(b"\xff\xc0")
    data[i + 5 : i + 7] = height.to_bytes(2, "big")
    data[i + 7 : i + 9] = width.to_bytes(2, "big")
    return bytes(data)


@pytest.mark.parametrize(
    ("image", "pattern"),
    [
        (lambda: _png((64, 64)), r"the image is PNG, the index says jpeg"),
        (lambda: _png((2000, 1000)), r"the image is PNG, the index says jpeg"),
        (lambda: _jpeg_header_claiming(30000, 30000), r"claims an image far above"),
        (lambda: _jpeg_header_claiming(13000, 13000), r"13000x13000 is above"),
        (lambda: b"\xff\xd8\xff" + b"\x00" * 200, r"cannot be decoded"),
        (lambda: b"GIF89a" + b"\x00" * 100, r"cannot be decoded|the image is GIF"),
    ],
    ids=["png-small", "png-large", "jpeg-30000", "jpeg-13000", "truncated-jpeg", "gif-bytes"],
)
def test_the_loader_checks_each_header_before_decoding(source: Path, image, pattern: str) -> None:
    key = _replace_image(source, image())
    ds = vignette.load_dataset(source, "identity_contrast")
    meta = ds.data.table  # the metadata, without composing any image
    lefts, rights = meta.column("key_left").to_pylist(), meta.column("key_right").to_pylist()
    rows = [i for i in range(len(ds)) if key in (lefts[i], rights[i])]
    with pytest.raises(vignette.CorruptRenderError, match=pattern) as err:
        ds[rows[0]]
    assert key in str(err.value)


@pytest.mark.parametrize("claim", [(30000, 30000), (9000, 9000)])
def test_verify_decode_flags_oversized_images(source: Path, claim: tuple[int, int]) -> None:
    _replace_image(source, _jpeg_header_claiming(*claim))
    assert "too large to be a render" in _problems(source, decode=True)  # PIL's bomb limit or ours


def test_verify_decode_flags_a_format_mismatch(source: Path) -> None:
    _replace_image(source, _png((48, 48)))
    assert "the image is PNG, the index says jpeg" in _problems(source, decode=True)

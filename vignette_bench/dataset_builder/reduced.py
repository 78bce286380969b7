"""``vignette build reduce --source SOURCE``: a reduced copy of every render, sized for composition.

Composing a pair spends most of its time decoding two 1024² JPEGs (even at libjpeg's half scale the
whole bitstream is entropy-decoded). A copy at the smallest scale that covers a tile decodes ~4× faster.
The default tile is the default 672×336 pair's, 352×336: a square render's copy is 352×352 (384 before
issue 25) and a non-square one's holds the tile exactly in one side (a 4:3 photo's is 448×336, 469×352
before issue 36), so the tile is a whole-pixel crop of the copy and the default pair costs two decodes
and a paste (no resize; BENCHMARKS.md). Tiles up to the copy's cover (352×352 for square renders) of
any shape come from the copies with the full render's field of view; larger ones from the full renders. The copies are JPEG shards under
``reduced/`` (one per render shard, same name; members ``<key>.jpg``), and six columns of
``renders/index.parquet`` say where each lies (``reduced_shard``, ``reduced_offset``,
``reduced_length``, ``reduced_sha256``, ``reduced_width``, ``reduced_height``; null where a render is
already that small). The loader composes from them when both renders of a pair have one at least the
tile's size, and records that it did (``composition`` in the dataset record): the pixels differ
slightly from composing the full renders, so this is a versioned change, and ``reduced=False`` in
``vignette.load_dataset`` gives the full-render pixels. The full renders and shards are untouched.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import shutil
import tarfile
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from vignette_bench.dataset_builder.arguments import DEFAULT_QUALITY, DEFAULT_TILE
from vignette_bench.dataset_builder.shard import _add, read_image_bytes
from vignette_bench.formats.render_index import INDEX_PATH, REDUCED_COLUMNS

REDUCED_DIR = "reduced"


def copy_size(width: int, height: int, tile: int | tuple[int, int]) -> tuple[int, int] | None:
    """The size of a ``width`` x ``height`` render's copy: the smallest scale that covers ``tile`` (W, H; an
    int is a square tile, i.e. a shorter side), or None if the render is not larger than that.

    One side then equals the tile's and the other exceeds it by an even number of pixels, so the tile is
    the copy's whole-pixel centre crop: composition copies it (PIL resizes a whole-pixel box at scale 1 as
    a crop) instead of resampling it (~0.9 ms a tile; issue 36: a 4:3 photo's 469x352 copy ran
    `ds[i]["image"]` at 0.40x the decode floor). The extra pixel stretches the copy by under 0.3%."""
    tw, th = (tile, tile) if isinstance(tile, int) else tile
    scale = max(tw / width, th / height)
    if scale >= 1:
        return None
    w, h = max(tw, round(width * scale)), max(th, round(height * scale))
    return w + (w - tw) % 2, h + (h - th) % 2


def reduce_image(
    data: bytes, tile: int | tuple[int, int], quality: int = DEFAULT_QUALITY
) -> tuple[bytes, int, int] | None:
    """JPEG bytes of ``data`` scaled to `copy_size` (covering ``tile``), or None if it is not larger.

    Scaled as composition scales a full render (`compose._tile`: ``draft``, then PIL's bilinear, which
    widens its support when shrinking), so the default tile cut from a square render's 352-px copy has
    the full render's tile pixels to within ±1 before JPEG; JPEG quantisation is the only difference. (Lanczos
    before issue 25 added its own: mean |Δ| 3.6 of 255 on photo-like renders, before JPEG.)"""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        size = copy_size(*im.size, tile)
        if size is None:
            return None
        if im.format == "JPEG":
            im.draft("RGB", size)  # decode at a DCT scale still at least `size`: the filter then does the rest
        small = im.convert("RGB").resize(size, Image.Resampling.BILINEAR)
    out = io.BytesIO()
    small.save(out, "JPEG", quality=quality, optimize=True)
    return out.getvalue(), size[0], size[1]


def write_reduced(root: str | Path, tile: int | tuple[int, int] = DEFAULT_TILE, quality: int = DEFAULT_QUALITY) -> int:
    """Write ``root/reduced/*.tar`` and add the reduced-copy columns to the index; returns copies written.

    Rebuilt whole each time (the old ``reduced/`` is replaced only once the new one is complete, and the
    index last, atomically), so a crash leaves the previous state."""
    root = Path(root)
    table = pq.read_table(root / INDEX_PATH)
    table = table.drop_columns([c for c in REDUCED_COLUMNS if c in table.column_names])
    rows = table.select(["key", "shard", "offset", "length"]).to_pylist()
    located: dict[str, tuple] = {}
    tmp = Path(tempfile.mkdtemp(prefix=".reduced-", dir=root))
    try:
        by_shard: dict[str, list[dict]] = {}
        for r in rows:
            by_shard.setdefault(r["shard"], []).append(r)
        for shard, members in sorted(by_shard.items()):
            name = f"{REDUCED_DIR}/{Path(shard).name}"
            with (
                open(tmp / Path(shard).name, "wb") as f,
                tarfile.open(fileobj=f, mode="w", format=tarfile.USTAR_FORMAT) as tar,
            ):
                for r in sorted(members, key=lambda r: r["offset"]):
                    small = reduce_image(read_image_bytes(str(root), shard, r["offset"], r["length"]), tile, quality)
                    if small is None:
                        continue
                    data, w, h = small
                    _add(tar, f"{r['key']}.jpg", data)
                    offset = tar.offset - -(-len(data) // 512) * 512  # the member's data ends at tar.offset
                    located[r["key"]] = (name, offset, len(data), hashlib.sha256(data).hexdigest(), w, h)
                tar.close()
                f.flush()
                os.fsync(f.fileno())
        final = root / REDUCED_DIR
        old = root / f".{REDUCED_DIR}.old-{os.getpid()}"
        if final.exists():
            final.rename(old)
        tmp.rename(final)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    keys = table.column("key").to_pylist()
    types = (pa.string(), pa.int64(), pa.int64(), pa.string(), pa.int64(), pa.int64())
    for i, (column, kind) in enumerate(zip(REDUCED_COLUMNS, types)):
        table = table.append_column(column, pa.array([located[k][i] if k in located else None for k in keys], kind))
    index = root / INDEX_PATH
    part = index.with_name(f".{index.name}.tmp-{os.getpid()}")
    pq.write_table(table, part)
    os.replace(part, index)
    return len(located)


def main(args: argparse.Namespace) -> int:
    n = write_reduced(args.source, tuple(args.size), args.quality)
    size = sum(p.stat().st_size for p in (Path(args.source) / REDUCED_DIR).glob("*.tar"))
    tile = "x".join(map(str, args.size))
    print(f"{REDUCED_DIR}/: {n} reduced copies (covering a {tile} tile), {size / 1e6:.1f} MB; index updated")
    return 0

"""``vignette build reduce --source SOURCE``: a reduced copy of every render, sized for composition.

Composing a pair spends most of its time decoding two 1024² JPEGs (even at libjpeg's half scale the
whole bitstream is entropy-decoded). A copy whose shorter side is ``side`` pixels decodes ~4× faster.
The default side, 352, is the default 672×336 pair's 352×336 tile: from a square render's copy that
tile is a crop at scale 1, so the default pair costs two decodes and a paste (no resize; 384 before
issue 25, BENCHMARKS.md). Tiles up to 352×352 of any shape come from the copies with the full
render's field of view; larger ones from the full renders. The copies are JPEG shards under
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

from vignette_bench.dataset_builder.arguments import DEFAULT_QUALITY, DEFAULT_SIDE
from vignette_bench.dataset_builder.arguments import reduce_add_arguments as add_arguments  # noqa: F401 (the parser lives in a light module)
from vignette_bench.dataset_builder.shard import INDEX_PATH, _add, read_image_bytes
from vignette_bench.formats.render_index import REDUCED_COLUMNS

REDUCED_DIR = "reduced"


def reduce_image(data: bytes, side: int, quality: int = DEFAULT_QUALITY) -> tuple[bytes, int, int] | None:
    """JPEG bytes of ``data`` scaled so its shorter side is ``side``, or None if it is not larger.

    Scaled as composition scales a full render (`compose._tile`: ``draft``, then PIL's bilinear, which
    widens its support when shrinking), so the default tile cut from a square render's 352-px copy has
    the full render's tile pixels to within ±1 before JPEG; JPEG quantisation is the only difference. (Lanczos
    before issue 25 added its own: mean |Δ| 3.6 of 255 on photo-like renders, before JPEG.)"""
    from PIL import Image

    with Image.open(io.BytesIO(data)) as im:
        w, h = im.size
        if min(w, h) <= side:
            return None
        scale = side / min(w, h)
        size = (max(side, round(w * scale)), max(side, round(h * scale)))
        if im.format == "JPEG":
            im.draft("RGB", size)  # decode at a DCT scale still at least `size`: the filter then does the rest
        small = im.convert("RGB").resize(size, Image.Resampling.BILINEAR)
    out = io.BytesIO()
    small.save(out, "JPEG", quality=quality, optimize=True)
    return out.getvalue(), size[0], size[1]


def write_reduced(root: str | Path, side: int = DEFAULT_SIDE, quality: int = DEFAULT_QUALITY) -> int:
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
                    small = reduce_image(read_image_bytes(str(root), shard, r["offset"], r["length"]), side, quality)
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
    side = max(args.size)
    n = write_reduced(args.source, side, args.quality)
    size = sum(p.stat().st_size for p in (Path(args.source) / REDUCED_DIR).glob("*.tar"))
    print(f"{REDUCED_DIR}/: {n} reduced copies ({side} px), {size / 1e6:.1f} MB; index updated")
    return 0

"""Size of the protocol sample with images (`vignette build protocol-sample`), and which lossless encoding.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/protocol_sample_size.py [--compare 30] [--kinds placeholder,photo_like,photographs]

Three stand-in sources in the sample's shape (8 identities, 6 activities, 98 renders of 1024² as JPEG q90,
with the 352-px reduced copies a real source has), whose protocol sample is every pair (78 identity_contrast
+ 13 portraits): drawn placeholders (what `vignette build sample` holds), photo-like 1/f images
(`placeholder.photo_like`, the project's byte-count stand-in) and crops of five colour photographs shipped
with scikit-image (astronaut, coffee, chelsea, rocket, motorcycle). No real renders exist here (FLUX needs a
GPU and the Hub), so the full sample's size is projected: bytes per pair here x the full taxonomy's
protocol pairs, counted by the protocol's own code on an index of every render (benchmarks/table_pickle.py).

Printed per kind: for the first --compare pairs, each encoding's mean bytes per pair, its encode CPU ms,
and whether it decodes to exactly the composed pixels; then `write_protocol_sample` on the whole source:
files, bytes, bytes per pair, CPU seconds; then the projection.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from vignette_bench.dataset_builder.protocol_manifest import protocol_configs  # noqa: E402
from vignette_bench.dataset_builder.protocol_sample import lazy_protocol_dataset, write_protocol_sample  # noqa: E402

ENCODINGS = {
    "PNG (Pillow default, level 6)": {"format": "PNG"},
    "PNG optimize (level 9)": {"format": "PNG", "optimize": True},
    "WebP lossless, method 4 (chosen)": {"format": "WEBP", "lossless": True},
    "WebP lossless, method 6": {"format": "WEBP", "lossless": True, "quality": 100, "method": 6},
}
PHOTOS = ("astronaut.png", "coffee.png", "chelsea.png", "rocket.jpg", "motorcycle_left.png")


def _photographs() -> list[Image.Image]:
    import skimage.data

    folder = Path(skimage.data.__file__).parent
    return [Image.open(folder / name).convert("RGB") for name in PHOTOS]


def _crop(photo: Image.Image, key: str, size: int) -> Image.Image:
    """A key-seeded square crop (half to nine tenths of the shorter side), scaled to the render size."""
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big"))
    w, h = photo.size
    side = int(min(w, h) * rng.uniform(0.5, 0.9))
    x, y = int(rng.integers(0, w - side + 1)), int(rng.integers(0, h - side + 1))
    out = photo.crop((x, y, x + side, y + side)).resize((size, size), Image.Resampling.LANCZOS)
    return out.transpose(Image.Transpose.FLIP_LEFT_RIGHT) if rng.integers(2) else out


def build(kind: str, out: Path, size: int = 1024) -> Path:
    """A sample-shaped source whose renders are `kind`, sharded as JPEG q90, with reduced copies."""
    from vignette_bench.dataset_builder.placeholder import photo_like
    from vignette_bench.dataset_builder.reduced import write_reduced
    from vignette_bench.dataset_builder.sample import write_placeholder_renders
    from vignette_bench.dataset_builder.shard import write_shards
    from vignette_bench.taxonomy import DATA_DIR, TAXONOMY_FILES

    (out / "taxonomy").mkdir(parents=True, exist_ok=True)
    for name in TAXONOMY_FILES:
        shutil.copyfile(DATA_DIR / name, out / "taxonomy" / name)
    photos = _photographs() if kind == "photographs" else []
    with tempfile.TemporaryDirectory() as tmp:
        write_placeholder_renders(Path(tmp), size)
        for i, png in enumerate(sorted(Path(tmp).glob("*.png"))):
            if kind == "photo_like":
                photo_like(1000 + i, size, size).save(png, compress_level=1)
            elif kind == "photographs":
                _crop(photos[i % len(photos)], png.stem, size).save(png, compress_level=1)
        write_shards(Path(tmp), out, fmt="jpeg", quality=90, max_shard_bytes=64 * 1024**2, progress=False)
    write_reduced(out)
    return out


def compare(source: Path, n: int) -> None:
    images = []
    for config in protocol_configs():
        ds = lazy_protocol_dataset(str(source), config)
        images += [ds[i]["image"] for i in range(min(n, len(ds)))]
    print(f"  encodings, {len(images)} composed pairs of {images[0].size[0]}x{images[0].size[1]}:")
    for label, options in ENCODINGS.items():
        sizes, cpu, exact = [], 0.0, True
        for image in images:
            buf = io.BytesIO()
            t = time.process_time()
            image.save(buf, **options)
            cpu += time.process_time() - t
            sizes.append(buf.tell())
            back = np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("RGB"))
            exact &= bool(np.array_equal(back, np.asarray(image)))
        print(
            f"    {label:34s} {np.mean(sizes) / 1e3:8.1f} kB/pair  {1e3 * cpu / len(images):7.1f} ms CPU/pair  "
            f"exact pixels: {exact}"
        )


def build_sample_files(source: Path) -> float:
    t = time.process_time()
    results = write_protocol_sample(source)
    cpu = time.process_time() - t
    pairs = sum(r.rows for r in results)
    size = sum(r.bytes for r in results)
    for r in results:
        print(
            f"  protocol/{r.config}: {r.rows} pairs, {r.shards} file(s), {r.bytes / 1e6:.2f} MB, {r.bytes / r.rows / 1e3:.1f} kB/pair"
        )
    print(
        f"  write_protocol_sample: {pairs} pairs, {size / 1e6:.2f} MB, {size / pairs / 1e3:.1f} kB/pair, {cpu:.1f} s CPU ({1e3 * cpu / pairs:.0f} ms/pair)"
    )
    return size / pairs


def full_protocol_pairs() -> dict[str, int]:
    """Pairs of each protocol config a protocol run asks on the full taxonomy (the protocol's own plan)."""
    from table_pickle import full_index_source

    from vignette_bench.eval.leaderboard.protocol import plan_for, source_pairs

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "src"
        full_index_source(src)
        out = {}
        for config in protocol_configs():
            n = source_pairs(str(src), config)
            out[config] = plan_for(config, n).sample or n
        return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--compare", type=int, default=30, help="pairs per config for the encoding comparison")
    ap.add_argument("--kinds", default="placeholder,photo_like,photographs")
    args = ap.parse_args()
    full = full_protocol_pairs()
    total = sum(full.values())
    print(f"full taxonomy: the protocol asks {full} = {total:,} pairs")
    for kind in args.kinds.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            source = build(kind, Path(tmp) / "src")
            print(f"{kind}: 98 renders of 1024x1024 (JPEG q90, 352-px reduced copies)")
            compare(source, args.compare)
            per_pair = build_sample_files(source)
            print(f"  projected full protocol sample ({total:,} pairs): {per_pair * total / 1e9:.2f} GB")


if __name__ == "__main__":
    main()

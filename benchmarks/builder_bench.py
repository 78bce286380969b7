"""Dataset builder benchmarks on synthetic photo-like 1024x1024 images (prints every number it claims).

1. bytes per render by format (JPEG, WebP) and quality;
2. projected size of all renders vs storing every composed 672x336 pair (the ratio);
3. shard-writing throughput (PNG render folder -> re-encoded WebDataset shards + index);
4. time to read one render by its index offset vs by scanning its tar as a stream.

Run: .venv/bin/python benchmarks/builder_bench.py [--images 6] [--shard-renders 400]
Images are 1/f-noise colour fields (dataset_builder.placeholder.photo_like): they compress like
photographs, unlike flat drawings, so byte counts are meaningful; real renders will differ somewhat.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import statistics
import sys
import tarfile
import tempfile
import time
from math import comb
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import fsspec  # noqa: E402
import pandas as pd  # noqa: E402
from PIL import Image  # noqa: E402

from vignette_bench.dataset_builder.check import check_renders  # noqa: E402
from vignette_bench.dataset_builder.placeholder import photo_like  # noqa: E402
from vignette_bench.dataset_builder.records import plan_renders  # noqa: E402
from vignette_bench.dataset_builder.render import library_versions  # noqa: E402
from vignette_bench.dataset_builder.shard import encode_image, read_image_bytes, write_shards  # noqa: E402
from vignette_bench.formats.render_record import RenderRecord  # noqa: E402
from vignette_bench.taxonomy import GENDERS, load_taxonomy  # noqa: E402

PAIR_SIZE = (672, 336)


def pair_count(taxonomy) -> dict[str, int]:  # type: ignore[no-untyped-def]
    """Pairs per config (DESIGN.md table): same gender and dimension; the gender dimension pairs man with woman."""
    a = len(taxonomy.activities)
    groups = [len(taxonomy.identities_in(d, g)) for d in taxonomy.dimensions if d != "gender" for g in GENDERS]
    groups.append(len(taxonomy.identities_in("gender")))
    return {
        "identity_contrast": sum(comb(n, 2) * a for n in groups),
        "activity_contrast": sum(n * comb(a, 2) for n in groups),
        "identity_activity_contrast": sum(comb(n, 2) * a * (a - 1) for n in groups),
        "portraits": sum(comb(n, 2) for n in groups),
    }


def compose_pair(left: Image.Image, right: Image.Image) -> Image.Image:
    w, h = PAIR_SIZE
    out = Image.new("RGB", PAIR_SIZE)
    out.paste(left.resize((w // 2, h)), (0, 0))
    out.paste(right.resize((w // 2, h)), (w // 2, 0))
    return out


def timed(fn, repeat: int = 5) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=6, help="distinct synthetic 1024x1024 images")
    ap.add_argument("--shard-renders", type=int, default=400, help="renders in the shard used for the read benchmark")
    ap.add_argument("--throughput-renders", type=int, default=24, help="renders packed in the throughput run")
    args = ap.parse_args()
    taxonomy = load_taxonomy()
    images = [photo_like(seed) for seed in range(args.images)]
    print(f"# {args.images} synthetic photo-like 1024x1024 images (seeds 0..{args.images - 1})\n")

    print("## 1. Bytes per render by format and quality")
    print("| format | quality | mean KB/render | encode ms/render |")
    print("|---|---|---|---|")
    sizes: dict[tuple[str, int], float] = {}
    for fmt in ("jpeg", "webp"):
        for q in (75, 85, 90, 95):
            t = time.perf_counter()
            n = [len(encode_image(im, fmt, q)) for im in images]  # type: ignore[arg-type]
            ms = (time.perf_counter() - t) / len(images) * 1000
            sizes[(fmt, q)] = statistics.mean(n)
            print(f"| {fmt} | {q} | {sizes[(fmt, q)] / 1024:.1f} | {ms:.0f} |")
    png = statistics.mean(len(_png(im)) for im in images)
    print(f"| png (render folder) | lossless | {png / 1024:.1f} | |")

    print("\n## 2. Projected size: all renders vs all composed pairs")
    n_renders = len(plan_renders(taxonomy))
    pairs = pair_count(taxonomy)
    n_pairs = sum(pairs.values())
    pair_bytes = statistics.mean(
        len(encode_image(compose_pair(images[i], images[(i + 1) % len(images)]), "jpeg", 90))
        for i in range(len(images))
    )
    render_bytes = sizes[("jpeg", 90)]
    total_renders = n_renders * render_bytes
    total_pairs = n_pairs * pair_bytes
    print(f"renders: {n_renders} x {render_bytes / 1024:.1f} KB (jpeg q90, 1024x1024) = {total_renders / 1e9:.2f} GB")
    print(f"pairs: {n_pairs:,} ({', '.join(f'{k} {v:,}' for k, v in pairs.items())})")
    print(f"pairs stored: {n_pairs:,} x {pair_bytes / 1024:.1f} KB (jpeg q90, 672x336) = {total_pairs / 1e12:.2f} TB")
    print(
        f"ratio pairs/renders: {n_pairs / n_renders:,.0f}x by count, {total_pairs / total_renders:,.0f}x by bytes "
        f"(a pair image has {PAIR_SIZE[0] * PAIR_SIZE[1] / 1024**2:.2f}x the pixels of a render)"
    )

    with tempfile.TemporaryDirectory(prefix="builder-bench-") as tmp:
        root = Path(tmp)
        specs = plan_renders(taxonomy)
        print("\n## 3. Shard-writing throughput (decode PNG, re-encode jpeg q90, tar, index)")
        src = root / "renders_in"
        src.mkdir()
        for i, spec in enumerate(specs[: args.throughput_renders]):
            (src / f"{spec.key}.png").write_bytes(_png(images[i % len(images)]))
            rec = RenderRecord.from_spec(
                spec,
                model_id="synthetic:photo_like",
                model_revision="",
                scheduler="",
                steps=0,
                guidance=0.0,
                width=1024,
                height=1024,
                dtype="",
                versions=library_versions(),
                placeholder=True,
            )
            (src / f"{spec.key}.json").write_text(rec.text())
        t, c = time.perf_counter(), time.process_time()
        report = write_shards(src, root / "out", progress=False)
        dt, cpu = time.perf_counter() - t, time.process_time() - c
        out_bytes = sum((root / "out" / s).stat().st_size for s in report.written)
        print(
            f"{report.packed} renders in {dt:.2f} s wall, {cpu:.2f} s CPU: {report.packed / dt:.1f} renders/s wall, "
            f"{report.packed / cpu:.1f} renders/CPU-s; {out_bytes / dt / 1e6:.1f} MB/s of shard written (wall)"
        )
        print(
            f"full build ({n_renders} renders) at the CPU rate: {n_renders / (report.packed / cpu) / 60:.0f} CPU-min (one process)"
        )

        print("\n## 3b. Check throughput (decode, size, blank, phash, Haar face on 512 px)")
        t, c = time.perf_counter(), time.process_time()
        results = check_renders(src, progress=False)
        dt, cpu = time.perf_counter() - t, time.process_time() - c
        print(
            f"{len(results)} renders in {dt:.2f} s wall, {cpu:.2f} s CPU: {len(results) / cpu:.1f} renders/CPU-s; "
            f"full benchmark: {n_renders / (len(results) / cpu) / 60:.0f} CPU-min"
        )

        print(f"\n## 4. Read one render: index offset vs scanning its tar ({args.shard_renders} renders in one shard)")
        encoded = [encode_image(im, "jpeg", 90) for im in images]
        shard = root / "big.tar"
        keys = [s.key for s in specs[: args.shard_renders]]
        with tarfile.open(shard, "w", format=tarfile.USTAR_FORMAT) as tar:
            for i, key in enumerate(keys):
                data = encoded[i % len(encoded)]
                info = tarfile.TarInfo(f"{key}.jpg")
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        with tarfile.open(shard) as tar:
            m = {x.name: x for x in tar.getmembers()}
        target = keys[-1]  # the worst case for a scan; a random key costs half on average
        offset, length = m[f"{target}.jpg"].offset_data, m[f"{target}.jpg"].size
        want = hashlib.sha256(encoded[(len(keys) - 1) % len(encoded)]).hexdigest()

        def by_offset() -> bytes:
            return read_image_bytes(str(root), "big.tar", offset, length)

        def by_scan() -> bytes:
            with (
                fsspec.open(str(shard), "rb") as f,
                tarfile.open(fileobj=f, mode="r|") as tar,
            ):  # a stream, as WebDataset reads
                for member in tar:
                    data = tar.extractfile(member).read()  # type: ignore[union-attr]
                    if member.name == f"{target}.jpg":
                        return data
            raise KeyError(target)

        assert hashlib.sha256(by_offset()).hexdigest() == want == hashlib.sha256(by_scan()).hexdigest()
        t_off, t_scan = timed(by_offset, 20), timed(by_scan, 5)
        size_mb = shard.stat().st_size / 1e6
        print(f"shard {size_mb:.0f} MB (file in page cache); last render:")
        print(f"by offset: {t_off * 1000:.2f} ms, reads {length / 1024:.0f} KB")
        print(f"by scan:   {t_scan * 1000:.1f} ms, reads {offset / 1e6 + length / 1e6:.0f} MB")
        print(f"ratio scan/offset: {t_scan / t_off:,.0f}x (bytes read: {(offset + length) / length:,.0f}x)")
        _ = pd  # pandas is used by write_shards' index; imported here so its import time is not in the timings


def _png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()


if __name__ == "__main__":
    main()

"""Benchmarks for vignette.py; prints the numbers that benchmarks/vignette.md reports.

    .venv/bin/python benchmarks/loader_bench.py [--quick]

1. enumeration: vectorised decode of random positions (pair specs/s), string columns (rows/s),
   and the time to size every config of the full taxonomy;
2. composition: 1024x1024 photo-like JPEG renders -> one 672x336 pair, pairs/s on one core, and its
   ratio to only decoding the two renders (full decode, and decode at reduced scale);
3. remote: a 100-pair filtered slice streamed from a real Range-honouring HTTP server on 127.0.0.1:
   bytes transferred vs the bytes of the renders it needs (+ index, taxonomy) vs its shards' size;
4. random access: one pair by index over that server (index already loaded; cold render cache).
All ratios are measured within one run.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import vignette  # noqa: E402
from tests.loader.test_http import serve_folder  # noqa: E402
from vignette_bench.dataset_builder.placeholder import photo_like  # noqa: E402
from vignette_bench.taxonomy import load_taxonomy  # noqa: E402

BENCH_IDENTITIES = ("muslim", "hindu", "christian")
# 20 activities: a 100-pair slice over 7 of them needs about a third of its shards' renders
BENCH_ACTIVITIES = (
    "cooking",
    "driving",
    "teaching",
    "programming",
    "exercising",
    "babysitting",
    "sleeping",
    "eating",
    "grocery shopping",
    "painting",
    "reading a book",
    "gardening",
    "dancing",
    "swimming",
    "hiking",
    "fishing",
    "doing yoga",
    "praying",
    "cycling",
    "camping",
)
SLICE_ACTIVITIES = BENCH_ACTIVITIES[:7]


def _best(fn, repeat: int) -> float:  # type: ignore[no-untyped-def]
    """Best of ``repeat`` runs in CPU seconds of this process: on a shared 2-core machine the
    wall clock mostly measures the other tenants; CPU time measures the work (one thread)."""
    times = []
    for _ in range(repeat):
        t = time.process_time()
        fn()
        times.append(time.process_time() - t)
    return min(times)


def bench_enumeration(n: int) -> dict[str, float]:
    tax = load_taxonomy()
    t = time.perf_counter()
    spaces = {c: vignette.PairSpace(tax, c) for c in vignette.CONFIGS}
    sizes = {c: len(s) for c, s in spaces.items()}
    sizing = time.perf_counter() - t
    space = spaces["identity_activity_contrast"]
    pos = np.random.default_rng(0).integers(0, len(space), n)
    decode = _best(lambda: space.decode(pos), 3)
    cols_n = min(n, 200_000)
    columns = _best(lambda: space.columns(pos[:cols_n]), 2)
    single = _best(lambda: [space[int(i)] for i in pos[:2000]], 2)
    return {
        "sizing_s": sizing,
        "total_pairs": sum(sizes.values()),
        "decode_per_s": n / decode,
        "columns_per_s": cols_n / columns,
        "getitem_per_s": 2000 / single,
    }


def _jpeg(img: Image.Image, quality: int = 90) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


def bench_composition(n_renders: int, n_pairs: int, blur: float = 0.0) -> dict[str, float]:
    """``blur`` > 0 softens photo_like's fine noise (a smoother, smaller JPEG, like many generated photos)."""
    from PIL import ImageFilter

    images = [photo_like(s) for s in range(n_renders)]
    renders = [_jpeg(im.filter(ImageFilter.GaussianBlur(blur)) if blur else im) for im in images]
    pairs = [(renders[i % n_renders], renders[(i * 7 + 3) % n_renders]) for i in range(n_pairs)]

    def compose_all() -> None:
        for a, b in pairs:
            vignette.compose(a, b)

    def decode_all() -> None:
        for a, b in pairs:
            Image.open(io.BytesIO(a)).load()
            Image.open(io.BytesIO(b)).load()

    def draft_all() -> None:
        for a, b in pairs:
            for x in (a, b):
                im = Image.open(io.BytesIO(x))
                im.draft("RGB", (352, 336))
                im.load()

    compose_all()  # warm caches (seam mask)
    tc = td = tr = float("inf")
    for _ in range(5):  # interleaved rounds, best of each: fair under a shared, noisy CPU
        tc, td, tr = min(tc, _best(compose_all, 1)), min(td, _best(decode_all, 1)), min(tr, _best(draft_all, 1))
    return {
        "render_kb": statistics.mean(len(r) for r in renders) / 1024,
        "pairs_per_s": n_pairs / tc,
        "ratio_full_decode": tc / td,
        "ratio_reduced_decode": tc / tr,
    }


def build_bench_source(out: Path, size: int = 1024) -> Path:
    """A source with photo-like JPEG renders (placeholders compress far better than photos)."""
    import shutil

    from vignette_bench.dataset_builder.card import write_card
    from vignette_bench.dataset_builder.sample import write_placeholder_renders
    from vignette_bench.dataset_builder.shard import write_shards
    from vignette_bench.taxonomy import DATA_DIR, TAXONOMY_FILES

    (out / "taxonomy").mkdir(parents=True, exist_ok=True)
    for name in TAXONOMY_FILES:
        shutil.copyfile(DATA_DIR / name, out / "taxonomy" / name)
    with tempfile.TemporaryDirectory() as tmp:
        write_placeholder_renders(Path(tmp), size, BENCH_IDENTITIES, BENCH_ACTIVITIES)
        photos = [photo_like(1000 + i, size, size) for i in range(12)]  # reused: only byte counts matter here
        for i, png in enumerate(sorted(Path(tmp).glob("*.png"))):
            photos[i % len(photos)].transpose(
                Image.Transpose.FLIP_LEFT_RIGHT if i % 2 else Image.Transpose.ROTATE_180
            ).save(png, compress_level=1)
        write_shards(Path(tmp), out, fmt="jpeg", quality=90, max_shard_bytes=4 * 1024**2, progress=False)
    write_card(out)
    return out


def bench_remote(source: Path, n_access: int) -> dict[str, float]:
    import pyarrow.parquet as pq

    rows = {r["key"]: r for r in pq.read_table(source / "renders" / "index.parquet").to_pylist()}
    index_bytes = (source / "renders" / "index.parquet").stat().st_size
    taxonomy_bytes = sum(p.stat().st_size for p in (source / "taxonomy").iterdir())
    out: dict[str, float] = {}
    with serve_folder(source) as (url, traffic):
        t = time.perf_counter()
        ds = vignette.load_dataset(
            url,
            "identity_activity_contrast",
            streaming=True,
            gender="female",
            dimensions="religion",
            activities=list(SLICE_ACTIVITIES),
            split="test[:100]",
        )
        pairs = [(r["key_left"], r["key_right"], r["image"].size) for r in ds]
        out["slice_s"] = time.perf_counter() - t
        needed = {k for kl, kr, _ in pairs for k in (kl, kr)}
        sent = traffic.bytes_sent
        render_bytes = sum(rows[k]["length"] for k in needed)
        shard_bytes = sum((source / s).stat().st_size for s in {rows[k]["shard"] for k in needed})
        out.update(
            pairs=len(pairs),
            renders_needed=len(needed),
            bytes_sent=sent,
            render_bytes=render_bytes,
            index_bytes=index_bytes,
            taxonomy_bytes=taxonomy_bytes,
            shard_bytes=shard_bytes,
            ratio_needed=sent / (render_bytes + index_bytes + taxonomy_bytes),
            ratio_shards=sent / (shard_bytes + index_bytes + taxonomy_bytes),
        )

        index = vignette.RenderIndex.load(vignette.Source(url))
        space = vignette.PairSpace(load_taxonomy(), "identity_contrast", coverage=index.coverage)
        picks = space.sample(n_access, seed=0)
        latencies, fetches, cpu, requests = [], [], [], []
        for p in picks:
            spec = space[int(p)]
            composer = vignette.Composer(vignette.RenderReader(index, cache_size=2))  # cold cache each time
            traffic.reset()
            t, c = time.perf_counter(), time.process_time()
            composer.pair(spec.key_left, spec.key_right)  # two ranged reads + decode + compose
            latencies.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
            requests.append(len(traffic.requests))
            reader = vignette.RenderReader(index, cache_size=0)
            t = time.perf_counter()
            reader.read(spec.key_left), reader.read(spec.key_right)
            fetches.append(time.perf_counter() - t)
        t = time.perf_counter()
        vignette.open_pair(url, "identity_contrast", int(space[int(picks[0])].index))
        out["cold_open_s"] = time.perf_counter() - t
    out["access_ms_median"] = 1000 * statistics.median(latencies)  # fetch + compose, wall
    out["access_ms_max"] = 1000 * max(latencies)
    out["fetch_ms_median"] = 1000 * statistics.median(fetches)  # the two ranged reads alone, wall
    out["access_cpu_ms_median"] = 1000 * statistics.median(cpu)  # fetch + compose, CPU of client and in-process server
    out["requests_per_pair"] = statistics.mean(requests)
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="smaller sizes (a smoke run)")
    args = parser.parse_args()
    n_decode, n_renders, n_pairs, n_access = (200_000, 6, 20, 5) if args.quick else (1_000_000, 16, 60, 20)

    import os

    print(
        f"machine: {os.cpu_count()} CPU cores, load average {os.getloadavg()[0]:.1f} at start (shared by other jobs); "
        "rates are per CPU second of this process unless marked wall"
    )
    e = bench_enumeration(n_decode)
    print("\n## enumeration")
    print(f"size every config (4 PairSpaces, {e['total_pairs']:,} pairs): {e['sizing_s'] * 1000:.0f} ms")
    print(
        f"vectorised decode, {n_decode:,} random positions of identity_activity_contrast: {e['decode_per_s'] / 1e6:.2f} M specs/s"
    )
    print(
        f"string columns (pair_id, keys, names): {e['columns_per_s'] / 1e6:.2f} M rows/s; PairSpace[i] one at a time: {e['getitem_per_s']:,.0f}/s"
    )

    print("\n## composition (1024x1024 photo-like JPEG q90 -> 672x336, one core)")
    for blur, label in ((0.0, "photo_like as is"), (1.5, "photo_like + Gaussian blur 1.5 (smoother)")):
        c = bench_composition(n_renders, n_pairs, blur)
        print(
            f"{label}: render {c['render_kb']:.0f} KiB; {c['pairs_per_s']:.1f} pairs/s; compose / decode both renders at full size "
            f"{c['ratio_full_decode']:.2f}x; compose / decode both at reduced scale (draft) {c['ratio_reduced_decode']:.2f}x"
        )

    with tempfile.TemporaryDirectory() as tmp:
        t = time.perf_counter()
        source = build_bench_source(Path(tmp) / "src", 512 if args.quick else 1024)
        built = time.perf_counter() - t
        r = bench_remote(source, n_access)
    print(f"\n## remote (real HTTP server on 127.0.0.1 with Range; bench source built in {built:.0f} s)")
    print(
        "slice: identity_activity_contrast, female, religion, 7 activities, test[:100] "
        f"-> {r['pairs']} pairs, {r['renders_needed']} renders, {r['slice_s']:.1f} s"
    )
    print(
        f"bytes sent {r['bytes_sent']:,} = renders needed {r['render_bytes']:,} + index {r['index_bytes']:,} + taxonomy "
        f"{r['taxonomy_bytes']:,} + tar headers/other {r['bytes_sent'] - r['render_bytes'] - r['index_bytes'] - r['taxonomy_bytes']:,}"
    )
    print(
        f"sent / (renders needed + index + taxonomy): {r['ratio_needed']:.3f}x; sent / "
        f"(shards involved {r['shard_bytes']:,} + index + taxonomy): {r['ratio_shards']:.3f}x"
    )
    print(f"\n## random access over HTTP (index loaded, cold render cache), {n_access} pairs")
    print(
        f"wall: median {r['access_ms_median']:.1f} ms (max {r['access_ms_max']:.1f} ms), of which the two ranged reads {r['fetch_ms_median']:.1f} ms; "
        f"CPU (client + in-process server): {r['access_cpu_ms_median']:.1f} ms; {r['requests_per_pair']:.1f} HTTP requests per pair"
    )
    print(f"cold open_pair (taxonomy + index + two renders): {r['cold_open_s'] * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Pairs per CPU-second where users touch them, beside the floor, in one run.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/compose_speed.py [--activities 6] [--pairs 120] [--rounds 3]
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/compose_speed.py --compare-full   # + full renders vs reduced copies

A source of photo-like 1024² JPEG renders (benchmarks/loader_bench.py's `build_bench_source`, q90)
with reduced copies (`vignette build reduce`, 384 px) is built in a temporary folder. Then, in
interleaved rounds (best of each kept: a shared, noisy machine), the same pairs (the first --pairs
rows of `identity_activity_contrast`, renders already in the reader's cache, so no I/O is timed):

* floor: the two reduced copies decoded with `draft` and pasted side by side (no resize, no seam,
  no container): what no pair can beat;
* `Composer.pair`: the composed PIL image (vignette_bench/loader/compose.py);
* `ds[i]["image"]`, map-style: compose, encode for the `vignette://` path, datasets decodes it;
  with the default `.bmp` paths and, for comparison, the `.png` paths every table had before
  (`image_format="PNG"`);
* streaming: iterating `load_dataset(..., streaming=True)`, rows with their images;
* a torch DataLoader over the map-style dataset, 2 workers: CPU of this process and of the workers
  (`RUSAGE_CHILDREN`, counted once they exit at the end of each pass);
* the same source with its reduced copies cropped to the default tile (`vignette build reduce
  --size 352x336 --crop`): `Composer.pair` and `ds[i]["image"]` (still × the 384-px copies' floor).

Rates are pairs per CPU-second (all processes), and × the floor.
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
from PIL import Image, ImageFilter  # noqa: E402

import vignette  # noqa: E402


def cpu_all() -> float:
    """CPU seconds of this process and of its reaped children (DataLoader workers)."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def timed(fn: Callable[[], object]) -> float:
    start = cpu_all()
    fn()
    return cpu_all() - start


def build_source(folder: Path, activities: int) -> tuple[Path, Path]:
    """The source with 384-px reduced copies, and a copy of it whose reduced copies are cropped to the
    default tile (`vignette build reduce --size 352x336 --crop`)."""
    import shutil

    import loader_bench

    from vignette_bench.dataset_builder.reduced import write_reduced

    loader_bench.BENCH_ACTIVITIES = loader_bench.BENCH_ACTIVITIES[:activities]
    source = loader_bench.build_bench_source(folder / "src")
    cropped = Path(shutil.copytree(source, folder / "src-cropped"))
    write_reduced(source)
    write_reduced(cropped, crop=((672 + 32 + 1) // 2, 336))  # the default tile: 352x336
    return source, cropped


def end_to_end(args: argparse.Namespace) -> None:
    import torch.utils.data

    with tempfile.TemporaryDirectory(prefix="compose-speed-") as tmp:
        source, cropped = build_source(Path(tmp), args.activities)
        name = "identity_activity_contrast"
        ds = vignette.load_dataset(source, name, cache_dir=Path(tmp) / "cache")
        n = min(args.pairs, len(ds))
        ds = ds.select(range(n))
        crop_ds = vignette.load_dataset(cropped, name, cache_dir=Path(tmp) / "cache").select(range(n))
        crop_composer = vignette.PairFileSystem.composers[(str(cropped), (672, 336), 32, True, os.getpid())]
        png = vignette.load_dataset(source, name, cache_dir=Path(tmp) / "cache", image_format="PNG").select(range(n))
        stream = vignette.load_dataset(source, name, streaming=True).take(n)
        crop_stream = vignette.load_dataset(cropped, name, streaming=True).take(n)
        rows = ds.remove_columns(["image"]).to_list()
        composer = vignette.PairFileSystem.composers[(str(source), (672, 336), 32, True, os.getpid())]
        reduced = {k: composer.reader.read(k, True)[0] for r in rows for k in (r["key_left"], r["key_right"])}
        tile_w = (composer.size[0] + composer.seam + 1) // 2

        def floor() -> None:
            for r in rows:
                out = Image.new("RGB", composer.size, None)
                for key, x in ((r["key_left"], 0), (r["key_right"], composer.size[0] - tile_w)):
                    im = Image.open(io.BytesIO(reduced[key]))
                    im.draft("RGB", (tile_w, composer.size[1]))
                    im.load()
                    out.paste(im, (x, 0))

        def pair() -> None:
            for r in rows:
                composer.pair(r["key_left"], r["key_right"])

        def crop_pair() -> None:
            for r in rows:
                crop_composer.pair(r["key_left"], r["key_right"])

        def map_style(d) -> Callable[[], None]:  # type: ignore[no-untyped-def]
            def run() -> None:
                for i in range(len(d)):
                    d[i]["image"]

            return run

        def streaming_of(it) -> Callable[[], None]:  # type: ignore[no-untyped-def]
            def run() -> None:
                for row in it:
                    row["image"]

            return run

        def loader_of(d) -> Callable[[], None]:  # type: ignore[no-untyped-def]
            def run() -> None:
                dl = torch.utils.data.DataLoader(d, batch_size=None, num_workers=2, collate_fn=lambda x: x)
                for row in dl:
                    row["image"]

            return run

        cases: dict[str, tuple[Callable[[], None], int]] = {
            "floor: 2 draft decodes + paste": (floor, n),
            "Composer.pair": (pair, n),
            'ds[i]["image"], map-style (.bmp paths)': (map_style(ds), n),
            'ds[i]["image"], map-style, .png paths (before)': (map_style(png.select(range(n // 4))), n // 4),
            "streaming iteration (.bmp)": (streaming_of(stream), n),
            "DataLoader, 2 workers (.bmp)": (loader_of(ds), n),
            "copies cropped to the tile (--crop): Composer.pair": (crop_pair, n),
            'copies cropped to the tile (--crop): ds[i]["image"]': (map_style(crop_ds), n),
            "copies cropped to the tile (--crop): streaming": (streaming_of(crop_stream), n),
            "copies cropped to the tile (--crop): DataLoader x2": (loader_of(crop_ds), n),
        }
        for fn, _ in cases.values():  # warm-up: caches, the first fork
            fn()
        best = dict.fromkeys(cases, float("inf"))
        walls = dict.fromkeys(cases, float("inf"))
        for _ in range(args.rounds):
            for label, (fn, _) in cases.items():
                w = time.perf_counter()
                best[label] = min(best[label], timed(fn))
                walls[label] = min(walls[label], time.perf_counter() - w)
        pixels = np.array_equal(np.asarray(ds[0]["image"]), np.asarray(png[0]["image"]))
        print(
            f"{n} pairs of identity_activity_contrast from {len(composer.reader.index.locations)} photo-like 1024² JPEG "
            f"renders with reduced copies (384 px) -> {composer.size[0]}x{composer.size[1]}; best of {args.rounds} "
            f"interleaved rounds; .bmp and .png pixels identical: {pixels}"
        )
        floor_rate = cases["floor: 2 draft decodes + paste"][1] / best["floor: 2 draft decodes + paste"]
        print(f"  {'path':<54} {'pairs/CPU-s':>12} {'x floor':>8} {'pairs/s wall':>13}")
        for label, (_, count) in cases.items():
            rate = count / best[label]
            print(f"  {label:<54} {rate:>12.1f} {rate / floor_rate:>8.2f} {count / walls[label]:>13.1f}")


def compare_full(args: argparse.Namespace) -> None:
    """Composition from the full renders vs their reduced copies (issue 14's comparison)."""
    from loader_bench import _jpeg

    from vignette_bench.dataset_builder.placeholder import photo_like
    from vignette_bench.dataset_builder.reduced import DEFAULT_SIDE, reduce_image

    for blur, label in ((0.0, "photo_like"), (1.5, "photo_like + blur 1.5")):
        images = [photo_like(s) for s in range(16)]
        full = [_jpeg(im.filter(ImageFilter.GaussianBlur(blur)) if blur else im) for im in images]
        small = [reduce_image(r, DEFAULT_SIDE)[0] for r in full]  # type: ignore[index]
        tf = tr = float("inf")
        for _ in range(args.rounds + 1):  # the first round warms up
            tf, tr = min(tf, timed(_composer_of(full))), min(tr, timed(_composer_of(small)))
        print(f"{label}: compose pairs per CPU-second, full renders {60 / tf:.1f}, reduced copies {60 / tr:.1f}")


def _composer_of(renders: list[bytes]) -> Callable[[], None]:
    def run() -> None:
        for i in range(60):
            vignette.compose(renders[i % 16], renders[(i * 7 + 3) % 16])

    return run


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--activities", type=int, default=6, help="activities rendered (3 identities x 2 genders each)")
    ap.add_argument("--pairs", type=int, default=120)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--compare-full", action="store_true", help="also compose from the full renders")
    args = ap.parse_args()
    end_to_end(args)
    if args.compare_full:
        compare_full(args)


if __name__ == "__main__":
    main()

"""Pairs per CPU-second where users touch them, beside the floor, in one run.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/compose_speed.py [--activities 6] [--pairs 120] [--rounds 3]
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/compose_speed.py --compare-full   # + full renders vs reduced copies

A source of photo-like 1024² JPEG renders (benchmarks/loader_bench.py's `build_bench_source`, q90)
is built in a temporary folder twice: with the default reduced copies (`vignette build reduce`: 352
px since issue 25, the default tile's side) and with the 384-px copies every source had before
(`--size 384`). Then, in interleaved rounds (best of each kept: a shared, noisy machine), the same
pairs (the first --pairs rows of `identity_activity_contrast`, renders already in the reader's
cache, so no I/O is timed):

* floors: two renders decoded with `draft` and pasted side by side (no resize, no seam, no
  container): the full 1024² renders, the 384-px copies (BENCHMARKS.md's floor
  before this change) and the 352-px copies (the default copies' own, the strictest);
* `Composer.pair`: the composed PIL image (vignette_bench/loader/compose.py);
* `ds[i]["image"]`, map-style: compose, encode for the `vignette://` path, datasets decodes it
  (`.bmp` paths; once with the `.png` paths every table had before, `image_format="PNG"`);
* streaming: iterating `load_dataset(..., streaming=True)`, rows with their images (the default
  shard count gives this small source shards of 1–2 rows, each paying the per-shard set-up; once
  more with `num_shards=1`, as a large source's shards of thousands of rows amortise it);
* a torch DataLoader over the map-style dataset, 2 workers: CPU of this process and of the workers
  (`RUSAGE_CHILDREN`, counted once they exit at the end of each pass).

Each of the last three for both sources. Rates are pairs per CPU-second (all processes), and × the
384-px copies' floor and × the 352-px copies' floor.
"""

from __future__ import annotations

import argparse
import io
import json
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
    """The source with the default reduced copies (352 px), and a copy of it with 384-px copies."""
    import shutil

    import loader_bench

    from vignette_bench.dataset_builder.reduced import write_reduced

    loader_bench.BENCH_ACTIVITIES = loader_bench.BENCH_ACTIVITIES[:activities]
    source = loader_bench.build_bench_source(folder / "src")
    before = Path(shutil.copytree(source, folder / "src-384"))
    write_reduced(source)
    write_reduced(before, 384)
    return source, before


def end_to_end(args: argparse.Namespace) -> None:
    import torch.utils.data

    with tempfile.TemporaryDirectory(prefix="compose-speed-") as tmp:
        source, before = build_source(Path(tmp), args.activities)
        name = "identity_activity_contrast"
        cache = Path(tmp) / "cache"
        ds = vignette.load_dataset(source, name, cache_dir=cache)
        n = min(args.pairs, len(ds))
        ds = ds.select(range(n))
        old = vignette.load_dataset(before, name, cache_dir=cache).select(range(n))
        png = vignette.load_dataset(source, name, cache_dir=cache, image_format="PNG").select(range(n))
        stream = vignette.load_dataset(source, name, streaming=True).take(n)
        one_shard = vignette.load_dataset(source, name, streaming=True, num_shards=1).take(n)
        old_stream = vignette.load_dataset(before, name, streaming=True).take(n)
        rows = ds.remove_columns(["image"]).to_list()
        composer = vignette.PairFileSystem.composers[(str(source), (672, 336), 32, True, os.getpid())]
        old_composer = vignette.PairFileSystem.composers[(str(before), (672, 336), 32, True, os.getpid())]
        keys = [k for r in rows for k in (r["key_left"], r["key_right"])]
        renders = {
            "full": {k: composer.reader.read(k)[0] for k in keys},
            "384": {k: old_composer.reader.read(k, True)[0] for k in keys},
            "352": {k: composer.reader.read(k, True)[0] for k in keys},
        }
        sides = {copies: {Image.open(io.BytesIO(b)).size for b in renders[copies].values()} for copies in renders}
        tile_w = (composer.size[0] + composer.seam + 1) // 2

        def floor(copies: str) -> Callable[[], None]:
            def run() -> None:
                for r in rows:
                    out = Image.new("RGB", composer.size, None)
                    for key, x in ((r["key_left"], 0), (r["key_right"], composer.size[0] - tile_w)):
                        im = Image.open(io.BytesIO(renders[copies][key]))
                        im.draft("RGB", (tile_w, composer.size[1]))
                        im.load()
                        out.paste(im, (x, 0))

            return run

        def pairs_of(c: vignette.Composer) -> Callable[[], None]:
            def run() -> None:
                for r in rows:
                    c.pair(r["key_left"], r["key_right"])

            return run

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
            "floor: full 1024² renders": (floor("full"), n),
            "floor: 384-px copies": (floor("384"), n),
            "floor: 352-px copies": (floor("352"), n),
            "352-px copies (default): Composer.pair": (pairs_of(composer), n),
            '352-px copies (default): ds[i]["image"]': (map_style(ds), n),
            "352-px copies (default): streaming": (streaming_of(stream), n),
            "352-px copies (default): streaming, 1 shard": (streaming_of(one_shard), n),
            "352-px copies (default): DataLoader x2": (loader_of(ds), n),
            '352-px copies: ds[i]["image"], .png paths': (map_style(png.select(range(n // 4))), n // 4),
            "384-px copies (before): Composer.pair": (pairs_of(old_composer), n),
            '384-px copies (before): ds[i]["image"]': (map_style(old), n),
            "384-px copies (before): streaming": (streaming_of(old_stream), n),
            "384-px copies (before): DataLoader x2": (loader_of(old), n),
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
        full = vignette.load_dataset(source, name, cache_dir=cache, reduced=False).select(range(min(n, 20)))
        px = {"352": ds, "384": old, "full": full}

        def mean_diff(a: str, b: str) -> float:  # mean |difference| of the pair pixels, 0..255
            return float(
                np.mean(
                    [
                        np.abs(np.asarray(px[a][i]["image"], np.int16) - np.asarray(px[b][i]["image"], np.int16)).mean()
                        for i in range(len(full))
                    ]
                )
            )

        composition = json.loads(ds.info.description)["composition"]
        print(
            f"{n} pairs of identity_activity_contrast from {len(composer.reader.index.locations)} photo-like 1024² JPEG "
            f"renders -> {composer.size[0]}x{composer.size[1]}; best of {args.rounds} interleaved rounds; image sizes "
            + ", ".join(f"{c}: {sorted(s)}" for c, s in sides.items())
            + "; KB per render "
            + ", ".join(f"{c}: {sum(map(len, b.values())) / len(b) / 1e3:.1f}" for c, b in renders.items())
            + f"; .bmp and .png pixels identical: {pixels}\n  composition: {composition}\n  mean |pixel difference| "
            f"over {len(full)} pairs: 352-px vs 384-px copies {mean_diff('352', '384'):.2f}, 352-px copies vs full "
            f"renders {mean_diff('352', 'full'):.2f}, 384-px copies vs full renders {mean_diff('384', 'full'):.2f}"
        )
        rate = {label: count / best[label] for label, (_, count) in cases.items()}
        f384, f352 = rate["floor: 384-px copies"], rate["floor: 352-px copies"]
        print(f"  {'path':<46} {'pairs/CPU-s':>12} {'x 384 floor':>12} {'x 352 floor':>12} {'pairs/s wall':>13}")
        for label, (_, count) in cases.items():
            r = rate[label]
            print(f"  {label:<46} {r:>12.1f} {r / f384:>12.2f} {r / f352:>12.2f} {count / walls[label]:>13.1f}")


def compare_full(args: argparse.Namespace) -> None:
    """Composition from the full renders vs their reduced copies (issue 14's comparison)."""
    from loader_bench import _jpeg

    from vignette_bench.dataset_builder.placeholder import photo_like
    from vignette_bench.dataset_builder.reduced import DEFAULT_TILE, reduce_image

    for blur, label in ((0.0, "photo_like"), (1.5, "photo_like + blur 1.5")):
        images = [photo_like(s) for s in range(16)]
        full = [_jpeg(im.filter(ImageFilter.GaussianBlur(blur)) if blur else im) for im in images]
        small = [reduce_image(r, DEFAULT_TILE)[0] for r in full]  # type: ignore[index]
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

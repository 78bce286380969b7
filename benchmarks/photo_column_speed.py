"""`ds[i]["image"]` beside the decode floor on a source built with `vignette build photos` (issue 36).

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/photo_column_speed.py [--photo-size 1024x768] [--activities 6]
        [--per-cell 1] [--pairs 120] [--rounds 3] [--reduce-size WxH] [--profile]

A labels CSV of distinct photo-like JPEG photos (`photo_like`, q95 files, --photo-size, default
1024x1024; --per-cell per cell: 3 identities x 2 genders x --activities activities) becomes a source
through the real commands: `vignette build photos` (stored as q90 JPEG) then `vignette build reduce`
(its default copies, or `--size` --reduce-size). Then, in ONE process, in interleaved rounds (best of each kept: a shared, noisy machine),
over the same pairs (the first --pairs rows of `identity_activity_contrast`):

* floor: the two renders the composer reads (the reduced copies) decoded with `draft` and pasted
  side by side, from bytes in memory (no resize, no seam, no container);
* `Composer.pair`: the composed PIL image;
* `ds[i]["image"]`: the map-style column (compose, encode for the `vignette://` path, decode).

Rates are pairs per CPU-second of this process; the last column is x the floor.
"""

from __future__ import annotations

import argparse
import csv
import io
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from loader_bench import BENCH_ACTIVITIES as ACTIVITIES  # noqa: E402  (the loader benchmark's grid)
from loader_bench import BENCH_IDENTITIES as IDENTITIES  # noqa: E402
from PIL import Image  # noqa: E402

import vignette  # noqa: E402
from vignette_bench.dataset_builder.placeholder import photo_like  # noqa: E402


def vignette_cli(*args: str) -> None:
    exe = Path(sys.executable).with_name("vignette")
    subprocess.run([str(exe), *args], check=True, stdout=subprocess.DEVNULL)


def build_photo_source(folder: Path, activities: int, per_cell: int, size: tuple[int, int], reduce: str) -> Path:
    """Labelled photo-like JPEGs -> `vignette build photos` -> `vignette build reduce`."""
    photos = folder / "photos"
    photos.mkdir()
    rows = []
    seed = 0
    for activity in ACTIVITIES[:activities]:
        for identity in IDENTITIES:
            for gender, v in ((g, v) for g in ("male", "female") for v in range(per_cell)):
                name = f"{identity}-{gender}-{activity.replace(' ', '_')}-{v}.jpg"
                photo_like(2000 + seed, *size).save(photos / name, quality=95)
                seed += 1
                rows.append({"image": f"photos/{name}", "gender": gender, "identity": identity, "activity": activity})
    labels = folder / "labels.csv"
    with labels.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["image", "gender", "identity", "activity"])
        writer.writeheader()
        writer.writerows(rows)
    source = folder / "src"
    vignette_cli("build", "photos", "--rows", str(labels), "--out", str(source))
    vignette_cli("build", "reduce", "--source", str(source), *(["--size", reduce] if reduce else []))
    return source


def cpu_timed(fn: Callable[[], None]) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--activities", type=int, default=6, help="activities photographed (3 identities x 2 genders)")
    ap.add_argument("--per-cell", type=int, default=1, help="photos per cell (its variants)")
    ap.add_argument("--pairs", type=int, default=120)
    ap.add_argument("--photo-size", default="1024x1024", help="WxH of the photos (default 1024x1024)")
    ap.add_argument("--reduce-size", default="", help="`vignette build reduce --size` (default: its default)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", action="store_true", help="also print a cProfile of ds[i]['image']")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="photo-column-") as tmp:
        source = build_photo_source(
            Path(tmp), args.activities, args.per_cell, tuple(map(int, args.photo_size.split("x"))), args.reduce_size
        )
        name = "identity_activity_contrast"
        ds = vignette.load_dataset(source, name, cache_dir=Path(tmp) / "cache")
        n = min(args.pairs, len(ds))
        ds = ds.select(range(n))
        rows = ds.remove_columns(["image"]).to_list()
        ds[0]["image"]  # opens the composer for this source in this process
        composer = next(
            c for k, c in vignette.PairFileSystem.composers.items() if k[0] == str(source) and k[-1] == os.getpid()
        )
        pairs = [(r["key_left"], r["key_right"]) for r in rows]
        reduced = all(composer._fits(k) for p in pairs for k in p)
        copies = {k: composer.reader.read(k, reduced)[0] for p in pairs for k in p}
        width, height = composer.size
        tile_w = (width + composer.seam + 1) // 2

        def floor() -> None:
            for left, right in pairs:
                out = Image.new("RGB", composer.size, None)
                for key, x in ((left, 0), (right, width - tile_w)):
                    im = Image.open(io.BytesIO(copies[key]))
                    im.draft("RGB", (tile_w, height))
                    im.load()
                    out.paste(im, (x, 0))

        def pair() -> None:
            for left, right in pairs:
                composer.pair(left, right)

        def column() -> None:
            for i in range(n):
                ds[i]["image"]

        cases = {"floor: decode the two copies + paste": floor, "Composer.pair": pair, 'ds[i]["image"]': column}
        for fn in cases.values():  # warm-up: caches, imports
            fn()
        best = dict.fromkeys(cases, float("inf"))
        for _ in range(args.rounds):
            for label, fn in cases.items():
                best[label] = min(best[label], cpu_timed(fn))
        sizes = sorted({Image.open(io.BytesIO(b)).size for b in copies.values()})
        kb = sum(map(len, copies.values())) / len(copies) / 1e3
        print(
            f"{n} pairs of {name} from {len(composer.reader.index.locations)} photo-like {args.photo_size} JPEG photos "
            f"(`vignette build photos` + `vignette build reduce`) -> {width}x{height}; composed from reduced copies: "
            f"{reduced}, sizes {sizes}, {kb:.1f} KB each; best of {args.rounds} interleaved rounds, one process"
        )
        floor_rate = n / best["floor: decode the two copies + paste"]
        print(f"  {'path':<40} {'pairs/CPU-s':>12} {'x floor':>8}")
        for label in cases:
            rate = n / best[label]
            print(f"  {label:<40} {rate:>12.1f} {rate / floor_rate:>8.2f}")
        if args.profile:
            import cProfile
            import pstats

            prof = cProfile.Profile()
            prof.runcall(column)
            pstats.Stats(prof).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()

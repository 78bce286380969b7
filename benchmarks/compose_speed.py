"""Composed pairs per CPU-second from the full renders and from their reduced copies, in one run.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/compose_speed.py [--renders 16] [--pairs 60] [--rounds 5]

Renders: benchmarks/loader_bench.py's photo-like 1024² JPEGs (q90; and a smoother variant, Gaussian
blur 1.5, like many generated photos). Reduced copies: vignette_bench/dataset_builder/reduced.py's `reduce_image`
(shorter side 384 px, JPEG q90), what `vignette build reduce` stores. Each round times, in CPU
seconds of this process: composing every pair (vignette.compose, default 672x336) from the full
renders, from the reduced copies, and decoding the two full renders at libjpeg's reduced scale (the
old path's floor). Rounds are interleaved and the best of each is kept (a shared, noisy machine).
Also printed: bytes per render, full and reduced, and how far the pixels move.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
from loader_bench import _jpeg, photo_like  # noqa: E402
from PIL import Image, ImageFilter  # noqa: E402

import vignette  # noqa: E402
from vignette_bench.dataset_builder.reduced import DEFAULT_SIDE, reduce_image  # noqa: E402


def cpu(fn) -> float:  # type: ignore[no-untyped-def]
    start = time.process_time()
    fn()
    return time.process_time() - start


def run_case(blur: float, label: str, args: argparse.Namespace) -> None:
    images = [photo_like(s) for s in range(args.renders)]
    full = [_jpeg(im.filter(ImageFilter.GaussianBlur(blur)) if blur else im) for im in images]
    small = [reduce_image(r, DEFAULT_SIDE)[0] for r in full]  # type: ignore[index]
    pick = [(i % args.renders, (i * 7 + 3) % args.renders) for i in range(args.pairs)]

    def compose(renders: list[bytes]) -> None:
        for a, b in pick:
            vignette.compose(renders[a], renders[b])

    def draft_decode() -> None:
        for a, b in pick:
            for x in (full[a], full[b]):
                im = Image.open(io.BytesIO(x))
                im.draft("RGB", (352, 336))
                im.load()

    compose(full), compose(small)  # warm-up
    best = {"full": float("inf"), "reduced": float("inf"), "decode": float("inf")}
    for _ in range(args.rounds):
        best["full"] = min(best["full"], cpu(lambda: compose(full)))
        best["reduced"] = min(best["reduced"], cpu(lambda: compose(small)))
        best["decode"] = min(best["decode"], cpu(draft_decode))
    rate = {k: args.pairs / v for k, v in best.items()}
    a = np.asarray(vignette.compose(full[0], full[1])).astype(int)
    b = np.asarray(vignette.compose(small[0], small[1])).astype(int)
    print(
        f"{label}: full render {np.mean([len(r) for r in full]) / 1024:.0f} KiB, reduced copy "
        f"{np.mean([len(r) for r in small]) / 1024:.0f} KiB (+{np.mean([len(s) / len(f) for s, f in zip(small, full)]):.0%})"
    )
    print(
        f"  pairs per CPU-second: full renders {rate['full']:.1f}, reduced copies {rate['reduced']:.1f} "
        f"(x{rate['reduced'] / rate['full']:.2f}); decoding two full renders alone caps the old path at {rate['decode']:.1f}"
    )
    print(
        f"  pixels, reduced vs full: mean |diff| {np.abs(a - b).mean():.2f} of 255, 99th pct {np.percentile(np.abs(a - b), 99):.0f}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--renders", type=int, default=16)
    ap.add_argument("--pairs", type=int, default=60)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    print(f"{args.pairs} pairs of {args.renders} photo-like 1024² JPEG renders -> 672x336; CPU seconds of one process")
    for blur, label in ((0.0, "photo_like"), (1.5, "photo_like + blur 1.5")):
        run_case(blur, label, args)


if __name__ == "__main__":
    main()

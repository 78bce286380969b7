"""The parsers of this package's `vignette` commands, apart from the jobs: building one imports nothing heavy
(no datasets, pandas, pyarrow, scipy, torch, matplotlib, transformers), so `vignette COMMAND --help` starts fast
(vignette_bench/cli.py imports a job's module only once its arguments parse; tests/test_startup.py)."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from vignette_bench import cli_options as opt

DEFAULT_MODEL = "black-forest-labs/FLUX.1-dev"


@dataclass(frozen=True)
class CheckSettings:
    min_std: float = 6.0  # grey levels (0..255); below this the image is blank or near-uniform
    max_hash_distance: int = 4  # of 64 bits; at or below, two renders count as near-duplicates
    face: bool = True
    min_face_fraction: float = 0.06  # smallest face side searched, as a fraction of the image side
    expected_size: tuple[int, int] | None = None  # default: the size in each render's record


DEFAULT_MAX_SHARD_BYTES = 512 * 1024**2


SAMPLE_IDENTITIES = ("man", "woman", "muslim", "hindu", "christian", "old", "young", "child")
SAMPLE_ACTIVITIES = ("cooking", "driving", "teaching", "programming", "exercising", "babysitting")


# The default 672x336 pair's tile is 352x336 (seam 32): a square render's copy with shorter side 352
# holds that tile at scale 1 (a crop: PIL does no resampling), and any copy of side 352 covers every
# tile up to 352x352 with the full render's field of view. It was 384 before issue 25 (a bilinear
# resize per tile, ~0.9 ms). tests/loader/test_reduced.py pins the relation to the default pair.
DEFAULT_SIDE = 352
# The copies cover this tile at the smallest scale (issue 36): a square render's copy is still 352x352,
# and a non-square photo's copy holds the tile at scale 1 too (a 4:3 landscape's is 448x336, not 469x352).
DEFAULT_TILE = (DEFAULT_SIDE, 336)
DEFAULT_QUALITY = 90


PROTOCOL_ROWS_PER_SHARD = 200  # pairs per protocol-sample parquet file (BENCHMARKS.md: tens of MB)
ROWS_PER_FILE = 1_000_000  # ~1.5 GB peak while a slice is built; ~20 MB per file


def render_add_arguments(p: argparse.ArgumentParser) -> None:
    opt.out(p, type=Path, required=True, help="render folder (<key>.png + <key>.json); rerun to resume")
    opt.model(p, default=DEFAULT_MODEL, help=f"diffusers pipeline, Hub id or local path (default {DEFAULT_MODEL})")
    p.add_argument(
        "--revision", default=None, help="Hub revision (branch, tag or commit); recorded as the commit it resolves to"
    )
    p.add_argument("--steps", type=int, default=20, help="denoising steps per image (default 20)")
    p.add_argument("--guidance", type=float, default=3.5, help="classifier-free guidance scale (default 3.5)")
    opt.size(p, default=(1024, 1024), help="WxH or N (default 1024)")
    p.add_argument(
        "--dtype",
        default="auto",
        choices=("auto", "bfloat16", "float16", "float32"),
        help="weights dtype (default auto: bfloat16 on a GPU, float32 on cpu)",
    )
    p.add_argument("--device", default="auto", help="auto: cuda:$LOCAL_RANK if a GPU is there, else cpu")
    p.add_argument("--batch-size", type=int, default=1, help="prompts per pipeline call (default 1)")
    p.add_argument(
        "--max-sequence-length", type=int, default=None, help="text encoder length, if the pipeline takes one"
    )
    p.add_argument("--shard", default=None, help="i/N: take part i of N (job arrays); composes with RANK/WORLD_SIZE")
    p.add_argument("--genders", default=None, help="comma-separated subset (default all)")
    p.add_argument("--dimensions", default=None, help="comma-separated subset of dimensions (default all)")
    p.add_argument("--identities", default=None, help="comma-separated subset of identities (default all)")
    p.add_argument("--activities", default=None, help="comma-separated subset of activities (default all)")
    p.add_argument("--no-portraits", action="store_true", help="skip the portraits (no activity)")
    p.add_argument(
        "--renders-per-cell",
        type=opt.positive_int,
        default=1,
        help="k renders (seeds) of every identity x activity cell and portrait; 1 = the paper's design (default)",
    )
    p.add_argument("--taxonomy", default=None, help="taxonomy folder (default: the packaged one)")


def check_add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("renders", type=Path, metavar="RENDERS", help="render folder (<key>.png + <key>.json)")
    opt.out(
        p, type=Path, default=None, help="the results table it writes, .parquet or .csv (default RENDERS/check.parquet)"
    )
    p.add_argument(
        "--min-std",
        type=float,
        default=CheckSettings.min_std,
        help="a render whose grey-level std is below this is blank (default %(default)s)",
    )
    p.add_argument(
        "--max-hash-distance",
        type=int,
        default=CheckSettings.max_hash_distance,
        help="two renders whose perceptual hashes differ in at most this many bits are near-duplicates "
        "(default %(default)s)",
    )
    p.add_argument("--no-face", action="store_true", help="skip the face check")
    opt.size(p, default=None, help="expected WxH (default: each record's size)")
    p.add_argument("--workers", type=int, default=1, help="processes for the per-image checks (default 1)")
    p.add_argument(
        "--retry-invalid",
        action="store_true",
        help="re-render the renders that failed the check, each with a new recorded seed, then check again",
    )
    p.add_argument("--device", default="auto", help="device for --retry-invalid")


def shard_add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "renders",
        type=Path,
        nargs="?",
        metavar="RENDERS",
        help="render folder (<key>.png + <key>.json), e.g. the output of `render`",
    )
    opt.out(p, type=Path, required=True, help="source folder to write renders/*.tar and renders/index.parquet into")
    p.add_argument(
        "--image-format", choices=("jpeg", "webp"), default="jpeg", help="image codec in the shards (default jpeg)"
    )
    p.add_argument("--quality", type=int, default=90, help="encoder quality, recorded in the index (default 90)")
    p.add_argument(
        "--max-shard-mb", type=float, default=DEFAULT_MAX_SHARD_BYTES / 1024**2, help="size cap per shard (default 512)"
    )
    p.add_argument("--taxonomy", default=None, help="taxonomy folder (default: the packaged one)")
    p.add_argument("--check", type=Path, default=None, help="check table (from `check`): pack only renders that passed")
    p.add_argument("--reindex", action="store_true", help="only rebuild renders/index.parquet from the shards in --out")
    p.add_argument(
        "--card", action="store_true", help="also copy the taxonomy and write README.md (dataset card) into --out"
    )
    opt.repo(p, default=None, help="with --card: the name users load the source by (e.g. a Hub dataset id)")
    p.add_argument("--license", default="cc-by-4.0", help="with --card: the license in the card's YAML")


def verify_add_arguments(p: argparse.ArgumentParser) -> None:
    opt.source(p, required=True, help="source folder or fsspec URL (holding renders/index.parquet)")
    p.add_argument("--decode", action="store_true", help="also decode every image (slower: reads all bytes)")


def sample_add_arguments(p: argparse.ArgumentParser) -> None:
    opt.out(p, type=Path, required=True, help="folder to create (its renders/ is replaced)")
    opt.size(p, default=(256, 256), help="render size, square: N or NxN pixels (default 256)")
    p.add_argument(
        "--image-format", choices=("jpeg", "webp"), default="jpeg", help="image codec in the shards (default jpeg)"
    )
    p.add_argument("--quality", type=int, default=90, help="encoder quality, recorded in the index (default 90)")
    p.add_argument("--identities", default=",".join(SAMPLE_IDENTITIES), help="comma-separated identity names")
    p.add_argument("--activities", default=",".join(SAMPLE_ACTIVITIES), help="comma-separated activity names")
    p.add_argument(
        "--renders-per-cell", type=opt.positive_int, default=1, help="k renders of every cell and portrait (default 1)"
    )


def photos_add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--rows",
        type=Path,
        required=True,
        metavar="TABLE",
        help="the photos' labels, one photo per row (CSV or parquet): image, gender, identity, activity",
    )
    opt.out(p, type=Path, required=True, help="source folder to write (its renders/ is replaced)")
    p.add_argument("--taxonomy", type=Path, default=None, help="your own taxonomy folder (default: the packaged one)")
    p.add_argument("--quality", type=int, default=90, help="JPEG quality in the shards (default 90)")


def reduce_add_arguments(p: argparse.ArgumentParser) -> None:
    opt.source(p, type=Path, required=True, help="source folder (renders/index.parquet and its shards)")
    opt.size(
        p,
        default=DEFAULT_TILE,
        help="the tile WxH each copy covers at the smallest scale (N: NxN, a shorter side of N; default "
        f"{DEFAULT_TILE[0]}x{DEFAULT_TILE[1]}: the default pair's tile, which is then a crop of the copy)",
    )
    p.add_argument(
        "--quality", type=int, default=DEFAULT_QUALITY, help=f"JPEG quality of the copies (default {DEFAULT_QUALITY})"
    )


def specs_add_arguments(p: argparse.ArgumentParser) -> None:
    opt.source(p, type=Path, required=True, help="source folder (with renders/index.parquet and taxonomy/)")
    p.add_argument("--configs", default=None, help="comma-separated pair configs (default: all four)")
    p.add_argument(
        "--rows-per-shard", type=int, default=ROWS_PER_FILE, help=f"rows per parquet file (default {ROWS_PER_FILE})"
    )


def protocol_add_arguments(p: argparse.ArgumentParser) -> None:
    opt.source(p, required=True, help="source: local folder, base URL or Hub id (renders/index.parquet, taxonomy/)")
    opt.out(
        p,
        type=Path,
        default=None,
        help="folder to write protocol/<config>/ into (default: the --source folder, whose card then declares them)",
    )
    p.add_argument("--configs", default=None, help="comma-separated protocol configs (default: all of them)")
    p.add_argument("--rows-per-shard", type=int, default=PROTOCOL_ROWS_PER_SHARD, help="pairs per parquet file")

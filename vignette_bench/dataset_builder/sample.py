"""``vignette build sample --out DIR``: a small source folder of placeholder renders.

It goes through the real pipeline (records → render folder → ``write_shards`` → index → card),
only the images are drawn instead of generated, so the demo and the tests exercise the same
code and the same layout as the published data.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from vignette_bench.dataset_builder.arguments import SAMPLE_ACTIVITIES, SAMPLE_IDENTITIES
from vignette_bench.dataset_builder.arguments import sample_add_arguments as add_arguments  # noqa: F401 (the parser lives in a light module)
from vignette_bench.dataset_builder.card import write_card
from vignette_bench.dataset_builder.placeholder import draw_placeholder
from vignette_bench.dataset_builder.records import RenderSpec, plan_renders
from vignette_bench.dataset_builder.render import library_versions
from vignette_bench.dataset_builder.shard import Format, write_shards
from vignette_bench.formats.render_record import RenderRecord, write_render_record
from vignette_bench.taxonomy import DATA_DIR, TAXONOMY_FILES, load_taxonomy

# Both genders, three dimensions (gender is one), 3 identities where a dimension has them, and
# six activities of all four time uses: enough for every pair config and question type.
PLACEHOLDER_MODEL = "placeholder:dataset_builder.placeholder.draw_placeholder"


def placeholder_record(spec: RenderSpec, width: int, height: int) -> RenderRecord:
    return RenderRecord.from_spec(
        spec,
        model_id=PLACEHOLDER_MODEL,
        model_revision="",
        scheduler="",
        steps=0,
        guidance=0.0,
        width=width,
        height=height,
        dtype="",
        versions=library_versions(),
        placeholder=True,
    )


def write_placeholder_renders(
    render_dir: Path,
    size: int = 256,
    identities: Sequence[str] = SAMPLE_IDENTITIES,
    activities: Sequence[str] = SAMPLE_ACTIVITIES,
    renders_per_cell: int = 1,
) -> int:
    """Draw placeholder renders into a render folder (``<key>.png`` + ``<key>.json``)."""
    taxonomy = load_taxonomy()
    render_dir.mkdir(parents=True, exist_ok=True)
    specs = plan_renders(
        taxonomy, identities=list(identities), activities=list(activities), renders_per_cell=renders_per_cell
    )
    for spec in specs:
        draw_placeholder(spec, size, size).save(render_dir / f"{spec.key}.png")
        write_render_record(render_dir / f"{spec.key}.json", placeholder_record(spec, size, size))
    return len(specs)


def build_sample(
    out_dir: Path,
    size: int = 256,
    fmt: Format = "jpeg",
    quality: int = 90,
    identities: Sequence[str] = SAMPLE_IDENTITIES,
    activities: Sequence[str] = SAMPLE_ACTIVITIES,
    max_shard_bytes: int = 4 * 1024**2,
    progress: bool = False,
    renders_per_cell: int = 1,
    news: bool = True,
    specs: bool = True,
    reduced: bool = True,
    protocol: bool = False,
) -> Path:
    """Build a complete placeholder source at ``out_dir`` (replacing its renders) and return it: the
        renders, and (``news``) the placeholder news sample and (``specs``) the pair spec tables, so that
        one folder holds every config, as a published source does; (``protocol``) the leaderboard protocol's
    sample of each protocol config, with images, so plain ``datasets`` loads them too. `vignette build
    sample` passes ``protocol=True``; the Python default is off because encoding the pairs (lossless WebP,
    ~70 ms CPU each, BENCHMARKS.md) is most of a small sample's build, which most tests and the demo
    (lazy loader only) do not need."""
    out_dir = Path(out_dir)
    if (out_dir / "renders").exists():
        shutil.rmtree(out_dir / "renders")  # a sample is rebuilt whole, never mixed with older shards
    (out_dir / "taxonomy").mkdir(parents=True, exist_ok=True)
    for name in TAXONOMY_FILES:
        shutil.copyfile(DATA_DIR / name, out_dir / "taxonomy" / name)
    with tempfile.TemporaryDirectory(prefix="vignette-sample-") as tmp:
        write_placeholder_renders(Path(tmp), size, identities, activities, renders_per_cell)
        write_shards(Path(tmp), out_dir, fmt=fmt, quality=quality, max_shard_bytes=max_shard_bytes, progress=progress)
    if reduced:  # copies covering the 352x336 tile (DEFAULT_TILE): renders not larger (small test samples) get none
        from vignette_bench.dataset_builder.reduced import write_reduced

        write_reduced(out_dir)
    if news:
        from vignette_bench.dataset_builder.news import build_news_sample

        build_news_sample(out_dir)
    if specs:
        from vignette_bench.dataset_builder.pair_specs import write_pair_specs

        write_pair_specs(out_dir)
    if protocol:
        from vignette_bench.dataset_builder.protocol_sample import write_protocol_sample

        write_protocol_sample(out_dir, progress=progress)
    write_card(out_dir)
    return out_dir


def main(args: argparse.Namespace) -> int:
    width, height = args.size
    if width != height:
        print(f"error: --size {width}x{height}: the sample's renders are square (give N)", file=sys.stderr)
        return 2
    out = build_sample(
        args.out,
        size=width,
        fmt=args.image_format,
        quality=args.quality,
        identities=[s.strip() for s in args.identities.split(",") if s.strip()],
        activities=[s.strip() for s in args.activities.split(",") if s.strip()],
        progress=sys.stderr.isatty(),
        renders_per_cell=args.renders_per_cell,
        protocol=True,
    )
    for p in sorted(out.rglob("*")):
        if p.is_file():
            print(f"{p.relative_to(out)}\t{p.stat().st_size} bytes")
    return 0

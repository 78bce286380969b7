"""``vignette info`` and ``vignette show``: pair config sizes, and one composed pair as an image file.

The two jobs of `vignette_bench/cli.py` that belong to the loader (``info_*`` and ``show_*``); the
options come from `vignette_bench/cli_options.py`, a standard-library module below every stage.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from vignette_bench import cli_options as opt
from vignette_bench.formats.vocabulary import CONFIGS, DEFAULT_SEAM, DEFAULT_SIZE, DEFAULT_SOURCE
from vignette_bench.loader.errors import MissingRenderError, VignetteError, unknown


def info_add_arguments(parser: argparse.ArgumentParser) -> None:
    opt.source(parser, help="a source (folder, URL, Hub id); default: the packaged taxonomy")
    parser.add_argument("--json", action="store_true", help="print JSON")


def info_main(args: argparse.Namespace) -> int:
    """Pairs per config x gender x dimension, and totals."""
    from vignette_bench.loader.load import info_table  # pyarrow: not for --help
    from vignette_bench.loader.reader import RenderIndex
    from vignette_bench.loader.sources import Source
    from vignette_bench.taxonomy import load_taxonomy  # fsspec: not for --help

    if args.source:
        index = RenderIndex.load(Source(args.source))
        table = info_table(load_taxonomy(index.source.url("taxonomy")), index.coverage)
        table["source"] = index.source.root
    else:
        table = info_table(load_taxonomy())
        table["source"] = "packaged taxonomy (vignette_bench/taxonomy)"
    print(json.dumps(table, indent=2) if args.json else _format_info(table))
    return 0


def show_add_arguments(parser: argparse.ArgumentParser) -> None:
    # --config as in `vignette run` (it was positional before issue 36; show_main names the new spelling)
    parser.add_argument("--config", metavar="CONFIG", help=f"the pair config (required): {', '.join(CONFIGS)}")
    parser.add_argument("old_config", nargs="?", metavar="CONFIG", help=argparse.SUPPRESS)
    parser.add_argument("--index", type=int, required=True, help="position in the config's full pair space")
    opt.out(parser, required=True, help="output image path (format from the suffix)")
    opt.source(parser, default=DEFAULT_SOURCE, help=f"the source (default {DEFAULT_SOURCE})")
    opt.size(parser, default=DEFAULT_SIZE, help=f"pair size (default {DEFAULT_SIZE[0]}x{DEFAULT_SIZE[1]})")
    parser.add_argument(
        "--seam",
        type=int,
        default=DEFAULT_SEAM,
        help=f"pixels of cross-fade between the halves (default {DEFAULT_SEAM})",
    )


def show_main(args: argparse.Namespace) -> int:
    """Write one composed pair to an image file."""
    from vignette_bench.loader.load import open_pair  # pyarrow: not for --help

    if args.old_config is not None:
        raise VignetteError(f"CONFIG (positional) is now --config: `vignette show --config {args.old_config} ...`")
    if args.config is None:
        raise VignetteError(f"give the pair config: --config CONFIG, one of {', '.join(CONFIGS)}")
    if args.config not in CONFIGS:
        raise unknown("config", args.config, CONFIGS)
    try:
        spec, image = open_pair(args.source, args.config, args.index, size=tuple(args.size), seam=args.seam)
    except (MissingRenderError, FileNotFoundError) as e:  # not VignetteErrors: name them the CLI's way
        raise VignetteError(str(e)) from e
    image.save(args.out)
    print(f"{spec.pair_id}\t{spec.key_left} | {spec.key_right}\t-> {args.out}")
    return 0


def _format_info(table: dict[str, Any]) -> str:
    lines = [f"source: {table['source']}"]
    for config, body in table["configs"].items():
        lines.append(f"\n{config}: {body['total']:,} pairs")
        for r in body["by_gender_dimension"]:
            lines.append(f"  {r['gender']:<7} {r['dimension']:<22} {r['pairs']:>12,}")
    lines.append(f"\ntotal: {table['total']:,} pairs")
    return "\n".join(lines)

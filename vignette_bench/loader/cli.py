"""``vignette info`` and ``vignette show``: pair config sizes, and one composed pair as an image file."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from vignette_bench.formats.pair_config import CONFIGS, DEFAULT_SEAM, DEFAULT_SIZE
from vignette_bench.loader.errors import CorruptRenderError, MissingRenderError, VignetteError, unknown
from vignette_bench.loader.load import info_table, open_pair
from vignette_bench.loader.reader import RenderIndex
from vignette_bench.loader.sources import DEFAULT_SOURCE, Source
from vignette_bench.taxonomy import load_taxonomy


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="VIGNETTE pair configs: sizes and single pairs.")
    sub = parser.add_subparsers(dest="command", required=True)
    p_info = sub.add_parser("info", help="pairs per config x gender x dimension, and totals")
    p_info.add_argument("--source", help="a source (folder, URL, Hub id); default: the packaged taxonomy")
    p_info.add_argument("--json", action="store_true", help="print JSON")
    p_show = sub.add_parser("show", help="write one composed pair to an image file")
    p_show.add_argument("config", help=", ".join(CONFIGS))
    p_show.add_argument("--index", type=int, required=True, help="position in the config's full pair space")
    p_show.add_argument("--out", required=True, help="output image path (format from the suffix)")
    p_show.add_argument("--source", default=DEFAULT_SOURCE)
    p_show.add_argument("--size", default=f"{DEFAULT_SIZE[0]}x{DEFAULT_SIZE[1]}", help="WIDTHxHEIGHT")
    p_show.add_argument("--seam", type=int, default=DEFAULT_SEAM)
    args = parser.parse_args(argv)
    try:
        if args.command == "info":
            if args.source:
                index = RenderIndex.load(Source(args.source))
                table = info_table(load_taxonomy(index.source.url("taxonomy")), index.coverage)
                table["source"] = index.source.root
            else:
                table = info_table(load_taxonomy())
                table["source"] = "packaged taxonomy (vignette_bench/taxonomy)"
            print(json.dumps(table, indent=2) if args.json else _format_info(table))
        else:
            if args.config not in CONFIGS:
                raise unknown("config", args.config, CONFIGS)
            w, _, h = args.size.partition("x")
            spec, image = open_pair(args.source, args.config, args.index, size=(int(w), int(h)), seam=args.seam)
            image.save(args.out)
            print(f"{spec.pair_id}\t{spec.key_left} | {spec.key_right}\t-> {args.out}")
    except (VignetteError, MissingRenderError, CorruptRenderError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


def _format_info(table: dict[str, Any]) -> str:
    lines = [f"source: {table['source']}"]
    for config, body in table["configs"].items():
        lines.append(f"\n{config}: {body['total']:,} pairs")
        for r in body["by_gender_dimension"]:
            lines.append(f"  {r['gender']:<7} {r['dimension']:<22} {r['pairs']:>12,}")
    lines.append(f"\ntotal: {table['total']:,} pairs")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())

"""``python -m dataset_builder <command>``: render → check → shard, plus sample and verify.

Each subcommand is a module with ``add_arguments(parser)`` and ``main(args) -> int``; modules are
imported only when their command runs (so ``sample`` does not import diffusers). To add a
command, add its module to ``SUBCOMMANDS``; an entry whose module is absent is skipped.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys

SUBCOMMANDS: dict[str, str] = {
    "render": "dataset_builder.render",
    "check": "dataset_builder.check",
    "shard": "dataset_builder.shard",
    "sample": "dataset_builder.sample",
    "verify": "dataset_builder.verify",
    "news": "dataset_builder.news",
}

HELP: dict[str, str] = {
    "render": "render images with a diffusers text-to-image pipeline (resumable, split by rank)",
    "check": "check renders: decodable, size, not blank, no near-duplicates, a face visible",
    "shard": "pack renders into WebDataset shards and write renders/index.parquet",
    "sample": "build a small placeholder source folder (no model needed)",
    "verify": "check that a source's index matches its shard bytes",
    "news": "package the news subset",
}


def parser(command: str | None = None) -> argparse.ArgumentParser:
    """The CLI parser; only ``command``'s module is imported to add its options."""
    p = argparse.ArgumentParser(prog="python -m dataset_builder", description="Build the VIGNETTE renders source: render, check, shard, verify; or a placeholder sample.")
    sub = p.add_subparsers(dest="command", required=True, metavar="command")
    for name, module in SUBCOMMANDS.items():
        if importlib.util.find_spec(module) is None:
            continue
        sp = sub.add_parser(name, help=HELP.get(name, ""), description=HELP.get(name))
        sp.set_defaults(module=module)
        if name == command:
            importlib.import_module(module).add_arguments(sp)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser(argv[0] if argv else None).parse_args(argv)
    return int(importlib.import_module(args.module).main(args) or 0)


if __name__ == "__main__":
    raise SystemExit(main())

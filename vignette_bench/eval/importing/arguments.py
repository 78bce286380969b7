"""The parser of `vignette import`: imports nothing heavy (tests/test_startup.py)."""

from __future__ import annotations

import argparse

from vignette_bench import cli_options

FORMATS = ("vignette-csv", "table", "inspect", "lmms-eval")
DEFAULT_MAX_MB = (
    128  # source MiB an import reads: ~1.1 GB peak at the cap (benchmarks/import_memory.py; docs/import.md)
)


def import_add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", required=True, choices=FORMATS, help="the answers' format (docs/import.md)")
    cli_options.source(
        p,
        "what to read: a file, or a folder (vignette-csv: every *.csv under it; table: one .csv/.parquet/.jsonl; "
        "inspect: every .eval/.json log under it; lmms-eval: every *_samples_*.jsonl under its --output_path)",
        required=True,
    )
    cli_options.out(p, "the run folder to create (responses.parquet + run.json); must not exist yet", required=True)
    cli_options.model(p, "the name of the model that answered (recorded as model_id; default: unknown)")
    p.add_argument(
        "--encoding",
        default="utf-8",
        help="the text encoding of CSV and JSONL files (default utf-8, with or without a BOM; e.g. cp1252 for an "
        "Excel export on Windows, latin-1)",
    )
    p.add_argument(
        "--max-mb",
        type=float,
        default=DEFAULT_MAX_MB,
        help=f"refuse a source larger than this many MiB (default {DEFAULT_MAX_MB}; an import holds its rows in memory)",
    )

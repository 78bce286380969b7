"""The parsers of this package's `vignette` commands, apart from the jobs: building one imports nothing heavy
(no datasets, pandas, pyarrow, scipy, torch, matplotlib, transformers), so `vignette COMMAND --help` starts fast
(vignette_bench/cli.py imports a job's module only once its arguments parse; tests/test_startup.py)."""

from __future__ import annotations

import argparse

from vignette_bench import cli_options as opt
from vignette_bench.formats.vocabulary import MIN_EFFECT

FIGURES = ("none", "findings", "all")  # `vignette report --figures`: which figures are drawn


def report_add_arguments(p: argparse.ArgumentParser) -> None:
    opt.runs(p, nargs="+", help="folders with responses.parquet and run.json")
    opt.out(p, default="report", help="output folder (default: ./report)")
    p.add_argument("--news", help="folder written by `vignette news results` to add as a section")
    p.add_argument(
        "--min-effect",
        type=float,
        default=MIN_EFFECT,
        metavar="PP",
        help=f"smallest effect in percentage points a verdict calls bias (default {MIN_EFFECT:g})",
    )
    p.add_argument(
        "--label",
        action="append",
        metavar="RUN=NAME",
        help="name shown for the model of run folder RUN (repeatable; default: id@revision from run.json)",
    )
    p.add_argument(
        "--figures",
        choices=FIGURES,
        default="findings",
        help="which figures to draw: none, findings (default: forest plots, model comparison) or all (heatmaps too)",
    )

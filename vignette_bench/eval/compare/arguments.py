"""The parsers of this package's `vignette` commands, apart from the jobs: building one imports nothing heavy
(no datasets, pandas, pyarrow, scipy, torch, matplotlib, transformers), so `vignette COMMAND --help` starts fast
(vignette_bench/cli.py imports a job's module only once its arguments parse; tests/test_startup.py)."""

from __future__ import annotations

import argparse
from pathlib import Path


def compare_add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_a", metavar="RUN_A", help="run folder (responses.parquet + run.json)")
    p.add_argument("run_b", metavar="RUN_B", help="run folder compared against RUN_A (delta = A − B)")
    p.add_argument("--out", type=Path, default=Path("compare"), help="output folder (default ./compare)")
    p.add_argument(
        "--label",
        action="append",
        metavar="RUN=NAME",
        help="name shown for the model of run folder RUN (repeatable; default: id@revision from run.json)",
    )
    p.add_argument(
        "--clusters",
        choices=("auto", "shared", "separate"),
        default="auto",
        help="whether a render both runs showed is one cluster; auto (default): shared when both runs read the "
        "same render index",
    )

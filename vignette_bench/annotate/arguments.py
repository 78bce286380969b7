"""The parsers of this package's `vignette` commands, apart from the jobs: building one imports nothing heavy
(no datasets, pandas, pyarrow, scipy, torch, matplotlib, transformers), so `vignette COMMAND --help` starts fast
(vignette_bench/cli.py imports a job's module only once its arguments parse; tests/test_startup.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from vignette_bench import cli_options as opt


def export_add_arguments(p: argparse.ArgumentParser) -> None:
    opt.source(p, required=True, help="source folder or URL (renders/index.parquet + shards)")
    p.add_argument(
        "--kind",
        choices=("renders", "pairs"),
        default="renders",
        help="annotate single renders or composed pairs (default renders)",
    )
    p.add_argument("--config", default="identity_contrast", help="pair config for --kind pairs")
    opt.limit(p, default=1200, help="items to sample (default 1200, as in the paper)")
    opt.seed(p, help="seed of the sample (default 0)")
    opt.out(p, type=Path, required=True, help="folder for annotate.html and items.json")


def score_add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("answers", nargs="+", type=Path, help="two or more annotators' saved answer files")
    p.add_argument("--items", type=Path, required=True, help="items.json written by `vignette annotate export`")
    p.add_argument("--out", type=Path, default=Path("agreement"), help="output folder (default ./agreement)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")

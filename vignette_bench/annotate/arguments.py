"""The parsers of this package's `vignette` commands, apart from the jobs: building one imports nothing heavy
(no datasets, pandas, pyarrow, scipy, torch, matplotlib, transformers), so `vignette COMMAND --help` starts fast
(vignette_bench/cli.py imports a job's module only once its arguments parse; tests/test_startup.py)."""

from __future__ import annotations

import argparse
from pathlib import Path


def score_add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("answers", nargs="+", type=Path, help="two or more annotators' saved answer files")
    p.add_argument("--items", type=Path, required=True, help="items.json written by `vignette annotate export`")
    p.add_argument("--out", type=Path, default=Path("agreement"), help="output folder (default ./agreement)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")

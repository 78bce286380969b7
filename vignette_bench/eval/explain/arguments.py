"""The parsers of this package's `vignette` commands, apart from the jobs: building one imports nothing heavy
(no datasets, pandas, pyarrow, scipy, torch, matplotlib, transformers), so `vignette COMMAND --help` starts fast
(vignette_bench/cli.py imports a job's module only once its arguments parse; tests/test_startup.py)."""

from __future__ import annotations

import argparse

from vignette_bench import cli_options as opt


def explain_add_arguments(p: argparse.ArgumentParser) -> None:
    opt.runs(p, help="a run folder (responses.parquet or log/, run.json, plan.parquet)")
    p.add_argument("--question", required=True, help="question_id of the answer to explain")
    p.add_argument("--layer", type=int, help="layer for the per-head panel (default: the last; -2 = second to last)")
    opt.out(p, help="folder for the PNGs (default RUN/explain)")
    p.add_argument("--image", help="the pair image file, when it cannot be composed from the run's source")

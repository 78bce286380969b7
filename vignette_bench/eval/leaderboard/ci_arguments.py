"""Parsers of the board repository's commands (`leaderboard init`, `leaderboard check-pr`): light, like
arguments.py, so `--help` imports nothing heavy."""

from __future__ import annotations

import argparse

from vignette_bench import cli_options as opt
from vignette_bench.eval.leaderboard.arguments import official_source_arguments


def check_pr_add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--base", required=True, metavar="BASE_REF", help="the branch or commit the pull request targets")
    p.add_argument("--head", required=True, metavar="HEAD_REF", help="the pull request's commit (or its merge commit)")
    p.add_argument(
        "--board", default=".", help="the board folder inside the repository (default: the repository's root)"
    )
    opt.out(p, help="write the board built from HEAD here (default: built in a temporary folder, then removed)")
    official_source_arguments(p)


def init_add_arguments(p: argparse.ArgumentParser) -> None:
    opt.out(p, required=True, help="folder for the new board repository (must not exist, or be empty)")

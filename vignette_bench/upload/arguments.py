"""The parsers of `vignette upload dataset|metrics|results|card`: they import nothing but the option helpers, so
`vignette upload COMMAND --help` starts without huggingface_hub or yaml (vignette_bench/cli.py imports the job's
module only once its arguments parse)."""

from __future__ import annotations

import argparse

from vignette_bench import cli_options as opt


def _hub(p: argparse.ArgumentParser, repo: str) -> None:
    """The options every push to the Hub takes."""
    opt.repo(p, required=True, help=repo)
    p.add_argument("--private", action="store_true", help="create the repos private (default public)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and stop; writes nothing to the Hub")


def dataset_add_arguments(p: argparse.ArgumentParser) -> None:
    opt.source(p, required=True, help="the source folder (README.md, taxonomy/, renders/)")
    _hub(p, "the dataset repo id, OWNER/NAME")


def metrics_add_arguments(p: argparse.ArgumentParser) -> None:
    _hub(p, "the owner of the Spaces (OWNER: one Space OWNER/<metric> per metric)")
    p.add_argument("--metrics", default="metrics", help="the folder of metric modules (default %(default)s)")
    p.add_argument("--stage", default=None, help="folder for the staged Space files (default: a temp folder)")
    p.add_argument(
        "--wheel",
        default=None,
        help="the vignette-bench wheel each Space carries and installs (default: built from this checkout)",
    )


def results_add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--entries",
        default="leaderboard/entries",
        help="the leaderboard entries folder, as in `vignette leaderboard build --entries DIR` (default %(default)s)",
    )
    _hub(p, "the results dataset repo id, OWNER/NAME")
    p.add_argument("--stage", default=None, help="folder for the staged files (default: a temp folder)")


def card_add_arguments(p: argparse.ArgumentParser) -> None:
    opt.source(p, required=True, help="the source folder whose README.md is completed")

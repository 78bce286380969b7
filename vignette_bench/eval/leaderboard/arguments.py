"""The parsers of this package's `vignette` commands, apart from the jobs: building one imports nothing heavy
(no datasets, pandas, pyarrow, scipy, torch, matplotlib, transformers), so `vignette COMMAND --help` starts fast
(vignette_bench/cli.py imports a job's module only once its arguments parse; tests/test_startup.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from vignette_bench import cli_options as opt


def create_add_arguments(p: argparse.ArgumentParser) -> None:
    opt.runs(p, help="a finished run folder (responses.parquet + run.json)")
    p.add_argument("--by", required=True, help="who submits (Hub user or org)")
    opt.out(p, default="leaderboard/entries", help="entries folder (default leaderboard/entries)")
    p.add_argument(
        "--location",
        help="where the responses are published (hf://datasets/...); without it they are copied into the board as "
        "runs/<entry_id>/responses.parquet beside the entries folder",
    )


def official_source_arguments(p: argparse.ArgumentParser) -> None:
    """The board's official source (the maintainer's, never an entry's) and the flag to read others."""
    opt.source(
        p,
        help="the board's official source: the only one whose entries are ranked and the only one read "
        "(default the published dataset, hf://datasets/vignette-bench/vignette)",
    )
    p.add_argument(
        "--read-other-sources",
        action="store_true",
        help="also read the sources that entries name (a submitter's URL or folder) to check them; such "
        "entries stay custom and unranked. Off by default: an entry never makes the board fetch",
    )


def validate_add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("entries", nargs="+", metavar="ENTRY", help="entry JSON files")
    official_source_arguments(p)


def verify_add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("entry", type=Path, help="an entry JSON (validated first)")
    opt.model(p, required=True, help="model spec to re-ask with (the entry's model and revision)")
    opt.limit(p, default=50, help="questions to re-ask (default 50)")
    p.add_argument("--batch-size", type=int, default=8, help="questions per model call (default 8)")
    p.add_argument(
        "--key",
        type=Path,
        metavar="PATH",
        help="the maintainer's private key file (vignette leaderboard keygen): sign the result and write "
        "verifications/<entry_id>.json; without it the result is only printed",
    )
    official_source_arguments(p)


def keygen_add_arguments(p: argparse.ArgumentParser) -> None:
    opt.out(p, required=True, help="where to write the new private key (PEM, mode 0600); never commit it")


def build_add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--entries", default="leaderboard/entries", help="entries folder (default leaderboard/entries)")
    opt.out(p, default="leaderboard/site", help="folder for the board (default leaderboard/site)")
    p.add_argument(
        "--strict", action="store_true", help="kept for old CI scripts: build always exits 1 when it rejects an entry"
    )
    p.add_argument(
        "--keys",
        type=Path,
        metavar="PATH",
        help="the maintainers.json whose keys make a verification count (default: the one beside the entries "
        "folder; CI on a pull request passes the base branch's)",
    )
    official_source_arguments(p)


def export_add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("entry", metavar="ENTRY", help="an entry JSON")
    opt.repo(p, required=True, help="the benchmark dataset's Hub repo id (e.g. ORG/vignette)")
    p.add_argument("--link", help="link to the leaderboard or results repo")
    opt.out(p, default=".", help="the model repo's folder; .eval_results/ is written inside it (default .)")

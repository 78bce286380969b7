"""vignette upload {dataset,metrics,results} --repo ID [--dry-run]
vignette upload card --source DIR

dataset and card read --source SOURCE; results reads --entries DIR (default leaderboard/entries).

dataset  SOURCE folder (card + taxonomy + renders + index) -> a Hub dataset repo
metrics  vignette_bench/metrics/<name>/ -> one gradio Space per metric, OWNER/<name>
results  leaderboard entries (validated) + the responses they cite -> a Hub dataset repo
card     complete SOURCE/README.md with vignette_bench/cards/dataset_card_sections.md (local only)

The token comes from HF_TOKEN or the saved Hub login (huggingface_hub.get_token); it is handed
to HfApi and never printed, logged or written.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from vignette_bench import cli_options as opt
from vignette_bench.upload.plan import describe, execute, remote_listing
from vignette_bench.upload.targets import UploadError, build_project_wheel, dataset_plan, metric_names, metrics_plan


def _api(dry_run: bool):
    from huggingface_hub import HfApi, get_token

    token = get_token()
    if token is None and not dry_run:
        raise UploadError("no Hub token: set HF_TOKEN or run `hf auth login` (a write token is needed)")
    return HfApi(token=token)


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "0").lower() in {"1", "true", "yes", "on"}


def _listing(api, repo_id: str, repo_type: str, consult: bool):
    """Remote files for hash comparison, or None (repo missing, offline, or not asked)."""
    if not consult or _offline():
        return None
    return remote_listing(api, repo_id, repo_type)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "target",
        choices=("dataset", "metrics", "results", "card"),
        help="what to push: the source (dataset), the metric modules as Spaces (metrics), leaderboard entries "
        "(results) or the dataset card (card)",
    )
    opt.repo(p, help="dataset repo id (dataset, results) or owner (metrics)")
    opt.source(p, default=None, help="dataset, card: the source folder")
    p.add_argument("--entries", default="leaderboard/entries", help="results: the entries folder (default %(default)s)")
    p.add_argument("--metrics", default="metrics", help="metrics: the folder of metric modules (default metrics)")
    p.add_argument("--stage", default=None, help="folder for staged Space files (default: a temp folder)")
    p.add_argument(
        "--wheel",
        default=None,
        help="metrics: the vignette-bench wheel each Space carries and installs (default: built from this checkout)",
    )
    p.add_argument("--private", action="store_true", help="create the repos private (default public)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and stop; writes nothing to the Hub")


def main(args: argparse.Namespace) -> int:
    if args.target == "card":
        from vignette_bench.upload.card import complete_card

        if not args.source:
            print("error: card: give --source DIR", file=sys.stderr)
            return 2
        print(f"wrote {complete_card(Path(args.source))}")
        return 0
    if not args.repo:
        print(f"error: {args.target}: --repo is required", file=sys.stderr)
        return 2
    try:
        api = _api(args.dry_run)
        consult = not args.dry_run or api.token is not None
        if args.target == "dataset":
            if not args.source:
                raise UploadError("dataset: give --source DIR (the folder with README.md, taxonomy/, renders/)")
            steps = dataset_plan(
                Path(args.source), args.repo, private=args.private, remote=_listing(api, args.repo, "dataset", consult)
            )
            from vignette_bench.upload.card import START

            if START not in (Path(args.source) / "README.md").read_text():
                print(
                    f"note: {args.source}/README.md lacks the pair counts, cautions and placeholder sections; "
                    f"run `vignette upload card --source {args.source}` first",
                    file=sys.stderr,
                )
        elif args.target == "metrics":
            stage = Path(args.stage or tempfile.mkdtemp(prefix="vignette-spaces-"))
            remotes = (
                {
                    f"{args.repo}/{n}": _listing(api, f"{args.repo}/{n}", "space", consult)
                    for n in metric_names(Path(args.metrics))
                }
                if "/" not in args.repo
                else {}
            )
            wheel = Path(args.wheel) if args.wheel else build_project_wheel(stage / "_wheel")
            steps = metrics_plan(
                Path(args.metrics), args.repo, stage, private=args.private, remotes=remotes, wheel=wheel
            )
        else:
            from vignette_bench.upload.results import results_plan

            steps = results_plan(
                Path(args.entries),
                args.repo,
                private=args.private,
                stage=Path(args.stage) if args.stage else None,
                remote=_listing(api, args.repo, "dataset", consult),
            )
        print(("DRY RUN — nothing is sent. " if args.dry_run else "") + f"Plan ({len(steps)} steps):")
        print(describe(steps))
        if not args.dry_run:
            execute(steps, api)
            print("done")
    except UploadError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # Hub errors: the type and message only (they never carry the token)
        print(f"error: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    return 0
